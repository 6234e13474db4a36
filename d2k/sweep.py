"""Evaluate solutions on workloads: skip-on-rerun, isolated workers, JSONL and store.

Every finished evaluation is appended to the run's ``results.jsonl`` (fsynced) and inserted into
the store at once, so a crash of d2k itself loses nothing already measured; a re-run skips what the
store holds for (solution, workload, environment) unless ``force``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import queue
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from d2k import supervisor
from d2k.content import Benchmark
from d2k.errors import D2KError
from d2k.execution.gpu_clocks import ClockMonitor
from d2k.execution.probe import probe_environment
from d2k.job_payload import evaluation_job, timing_settings
from d2k.schema import Workload
from d2k.solutions import Solution
from d2k.store import Store
from d2k.text import utf8_safe


def work_dir() -> Path:
    return Path(os.environ.get("D2K_WORKDIR", ".d2k"))


@dataclass
class Plan:
    solution: Solution
    workloads: list[Workload]


def bench_plans(bench: Benchmark, names: list[str], backend: str, tag: str) -> list[Plan]:
    """What ``d2k bench`` runs: for every task, each named solution on its ``tag`` workloads. ``naive``
    where the task has one; ``reference`` on a GPU only, as the task's eager figure (its reference, or
    the baseline it names as a stand-in for a sequential one); ``baselines`` as every library adapter
    in tasks/<id>/baselines/; anything else through ``solutions.resolve``. One plan per solution."""
    from d2k.solutions import baselines, eager, resolve

    plans = []
    for task_id in bench.tasks:
        selected = bench.select_workloads(task_id, tag)
        if not selected:
            continue
        for name in names:
            if name == "naive" and not (bench.task_dir(task_id) / "naive.py").is_file():
                continue
            if name == "reference":
                if backend == "cuda":  # the comparison; timing it on the interpreter means nothing
                    plans.append(Plan(eager(bench, task_id), selected))
            elif name == "baselines":
                plans.extend(Plan(b, selected) for b in baselines(bench, task_id))
            else:
                plans.append(Plan(resolve(bench, task_id, name), selected))
    seen: set[str] = set()  # a task's eager stand-in is also one of its baselines
    return [p for p in plans if not (p.solution.solution_id in seen or seen.add(p.solution.solution_id))]


@dataclass
class SweepResult:
    run_id: str
    env: dict
    results_path: Path
    records: list[dict] = field(default_factory=list)
    skipped: int = 0


class JsonlLog:
    """Append-only record of a run: environment, solutions and evaluations, one JSON per line."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.fh = open(path, "a", encoding="utf-8")

    def write(self, record_type: str, payload: dict) -> None:
        try:
            self.fh.write(json.dumps({"record": record_type, **payload}, default=str) + "\n")
            self.fh.flush()
            os.fsync(self.fh.fileno())
        except OSError as exc:
            # e.g. a full disk: stop the run (what is not written is not stored, and a re-run redoes it)
            raise D2KError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def close(self) -> None:
        self.fh.close()


def solution_payload(solution: Solution) -> dict:
    return {"solution_id": solution.solution_id, "task_id": solution.task_id, "label": solution.label,
            "kind": solution.kind, "path": str(solution.path), "source": solution.source}


def visible_devices() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES entries."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None and listed.strip():
        return [d.strip() for d in listed.split(",") if d.strip()]
    try:
        import torch

        return [str(i) for i in range(torch.cuda.device_count())] or ["0"]
    except ImportError:
        return ["0"]


def parallel_workers(backend: str, jobs: int) -> int:
    """How many solutions run at once: one per GPU (timings never share a device; ``$D2K_GPU_SHARE``
    allows more for status-only runs), or on the CPU interpreter one per core up to 4
    (``$D2K_WORKERS`` overrides either, never beyond the GPUs times the share)."""
    if os.environ.get("D2K_WORKERS"):
        try:
            wanted = int(os.environ["D2K_WORKERS"])
        except ValueError:
            raise D2KError(f"D2K_WORKERS must be a whole number, not {os.environ['D2K_WORKERS']!r}") from None
        if wanted < 1:
            raise D2KError("D2K_WORKERS must be at least 1")
    elif backend == "cuda":
        wanted = len(visible_devices()) * gpu_share()
    else:
        wanted = min(4, os.cpu_count() or 1)
    if backend == "cuda":
        wanted = min(wanted, len(visible_devices()) * gpu_share())
    return max(1, min(wanted, jobs or 1))


def trusted_batch_warning(backend: str, timing: dict | None) -> str | None:
    """What a GPU run with the trusted batch on should be told, or None.

    On a GPU the batch's round trip holds the call's host work, which the device-side figure leaves
    out: on an H100 the two processes' prices differed by -0.9 to +2.0 ms whatever the kernel took
    (2-914 us; studies 2026-12-05-session22-h100 and -session24-h100), so the flag leaves 3 ms
    either way there (batch.BATCH_ALLOWANCE_GPU_MS) and bounds only calls of several ms."""
    if backend != "cuda" or not timing_settings(timing)["trusted_batch"]:
        return None
    return ("trusted_batch on a GPU: its round trips hold host work that differs by up to 2 ms between the two "
            "processes (H100, 2026-12-05), so its flag leaves 3 ms and bounds only figures of several ms "
            "(README, 'Trusted batch')")


def gpu_share() -> int:
    """Solutions per GPU at once: 1, unless ``$D2K_GPU_SHARE`` says more. Sharing is for runs whose
    statuses matter and whose times do not (the reward-hack corpus): contended timings are flagged."""
    raw = os.environ.get("D2K_GPU_SHARE", "1")
    try:
        share = int(raw)
    except ValueError:
        raise D2KError(f"D2K_GPU_SHARE must be a whole number, not {raw!r}") from None
    if share < 1:
        raise D2KError("D2K_GPU_SHARE must be at least 1")
    return share


# A reported time under this share of the speed-of-light time (1.4x the calibrated peaks) is not
# physics: the trusted side cannot reconcile it (timing_suspect), and it never reaches the tables.
SOL_FLOOR = 0.7


def below_speed_of_light(store: Store, record: dict) -> None:
    if record.get("status") != "passed" or not record.get("median_ms"):
        return
    sol = store.sol_ms(record["task_id"], record["workload_id"], record["env_id"])
    if sol and record["median_ms"] < SOL_FLOOR * sol:
        reason = (f"reported median {record['median_ms'] * 1e3:.2f} us is under {SOL_FLOOR:g}x the speed-of-light "
                  f"time {sol * 1e3:.2f} us of this workload on this GPU")
        record["status"], record["reason"] = "timing_suspect", reason
        record["flags"] = {**(record.get("flags") or {}), "timing": [reason]}


def store_one(store: Store, record: dict) -> None:
    """Store one evaluation; one the store refuses is stored as an error that says why, so a
    single record cannot end the run (the results file holds it whole either way)."""
    try:
        store.add_evaluation(record)
    except Exception as exc:  # noqa: BLE001 - whatever DuckDB raised: the run goes on
        keep = ("eval_id", "run_id", "solution_id", "task_id", "env_id", "backend", "solution", "workload_id",
                "created_at")
        store.add_evaluation({**{k: record.get(k) for k in keep}, "status": "error",
                              "reason": f"d2k could not store this evaluation ({type(exc).__name__}: {exc})"[:500]})
        record.update(status="error", reason=f"d2k could not store this evaluation ({type(exc).__name__})")


def run_sweep(
    bench: Benchmark,
    store: Store,
    plans: list[Plan],
    backend: str,
    command: str,
    args: dict,
    limits: supervisor.Limits | None = None,
    timing: dict | None = None,
    force: bool = False,
    progress=None,
    timed: bool = True,
) -> SweepResult:
    """Run every plan; ``progress`` (optional) gets ``start(total)``, ``workload(label)`` and
    ``advance()``, and where it has them ``warn(text)`` and ``record(record)`` (each stored record)."""
    limits = limits or supervisor.Limits()
    base = work_dir()
    store.recover_stale_runs()
    env = probe_environment(backend, base)
    store.add_environment(env)
    run_id = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    run_dir = base / "runs" / run_id
    results_path = run_dir / "results.jsonl"
    log = JsonlLog(results_path)
    log.write("environment", env)
    args = utf8_safe(args)  # file names are the user's (and a solution's name may not be UTF-8)
    store.start_run(run_id, command, args, env, str(results_path))
    result = SweepResult(run_id, env, results_path)
    store.sync_content(bench)

    # a GPU evaluation timed in another mode or under another L2 flush does not count as done (see stored_workloads)
    settings = timing_settings(timing)
    mode = f"{'span' if settings['device_span'] else 'events'}/{settings['flush_mode']}" if backend == "cuda" else None
    todo: list[tuple[Solution, list[Workload]]] = []
    for plan in plans:
        store.add_solution(plan.solution)
        log.write("solution", solution_payload(plan.solution))
        done = set() if force else store.stored_workloads(plan.solution.solution_id, env["env_id"], mode)
        pending = [w for w in plan.workloads if w.id not in done]
        result.skipped += len(plan.workloads) - len(pending)
        if pending:
            todo.append((plan.solution, pending))
    if progress:
        progress.start(sum(len(w) for _, w in todo))
    status = "finished"
    sandbox_seen: list[dict] = []

    def on_sandbox(event: dict) -> None:
        # the run's metadata says which sandbox layers applied (and warns where one did not)
        summary = {"layers": event.get("layers"), "warnings": event.get("warnings")}
        if summary not in sandbox_seen:
            sandbox_seen.append(summary)
            store.set_run_sandbox(run_id, summary if len(sandbox_seen) == 1 else {"variants": sandbox_seen})
            log.write("sandbox", summary)
            if progress and summary.get("warnings") and hasattr(progress, "warn"):
                for warning in summary["warnings"]:
                    progress.warn(f"sandbox: {warning}")

    share = gpu_share() if backend == "cuda" else 1
    if share > 1:
        log.write("warning", {"gpu_shared_by": share})
        if progress and hasattr(progress, "warn"):
            progress.warn(f"D2K_GPU_SHARE={share}: {share} solutions share each GPU; their times are contended "
                          "(flagged gpu_shared_by) and are not kernel speed")
    batch_warning = trusted_batch_warning(backend, timing)
    if batch_warning:
        log.write("warning", {"trusted_batch_on_gpu": True})
        if progress and hasattr(progress, "warn"):
            progress.warn(batch_warning)
    # the clocks, power and temperature each GPU evaluation ran under (read, never set; D2K_GPU_CLOCKS=0: off)
    clocks = None
    if backend == "cuda" and os.environ.get("D2K_GPU_CLOCKS", "1") != "0":
        clocks = ClockMonitor()
        if not clocks.start():
            log.write("warning", {"gpu_clocks": clocks.error})
            clocks = None
    lock = threading.Lock()        # the store, the log and the progress are written from several threads
    cancel = threading.Event()
    slots: queue.Queue = queue.Queue()
    for slot in range(parallel_workers(backend, len(todo))):
        slots.put(slot)

    def evaluate(solution: Solution, workloads: list[Workload]) -> None:
        slot = slots.get()
        try:
            job_dir = run_dir / f"{solution.task_id}-{solution.label.replace('/', '_')[-40:]}-{solution.solution_id[:10]}"
            job = evaluation_job(bench, solution, workloads, backend, events_path="", timing=timing, time=timed)
            if backend == "cuda":
                devices = visible_devices()  # one solution per GPU at a time, unless shared on purpose
                job["env"] = {"CUDA_VISIBLE_DEVICES": devices[slot % len(devices)]}
            if store.path != ":memory:":
                store_path = Path(store.path).resolve()
                job["sandbox"]["hide"] += [str(store_path), str(store_path) + ".wal"]
            context = {"run_id": run_id, "solution_id": solution.solution_id, "task_id": solution.task_id,
                       "env_id": env["env_id"], "backend": backend, "solution": solution.label}
            started: dict[str, float] = {}

            def on_record(record: dict) -> None:
                # the reason, the traceback, thread names in the timing: text the solution wrote,
                # which DuckDB refuses where it is not UTF-8 (a lone surrogate in one exception's
                # message once cancelled every other solution's evaluations: red team G, session 21)
                record = utf8_safe(record)
                if clocks is not None:
                    # the whole evaluation (checks, warm-up and timing) of this workload
                    now = time.time()
                    clocks.annotate(record, job["env"]["CUDA_VISIBLE_DEVICES"],
                                    started.get(record.get("workload_id"), now), now)
                with lock:
                    if backend == "cuda":
                        below_speed_of_light(store, record)
                        if share > 1:
                            record["flags"] = {**(record.get("flags") or {}), "gpu_shared_by": share}
                    log.write("evaluation", record)
                    store_one(store, record)
                    result.records.append(record)
                    if progress:
                        progress.advance()
                        if hasattr(progress, "record"):
                            progress.record(record)  # e.g. a table written as records arrive

            def on_start(workload_id: str) -> None:
                started[workload_id] = time.time()
                if progress:
                    with lock:
                        progress.workload(f"{solution.task_id} · {solution.label} · {workload_id}")

            def on_sandbox_locked(event: dict) -> None:
                with lock:
                    on_sandbox(event)

            supervisor.run_solution(job, job_dir, context, limits, on_record, on_start, on_sandbox=on_sandbox_locked,
                                cancel=cancel)
        finally:
            slots.put(slot)

    try:
        with ThreadPoolExecutor(max_workers=slots.qsize()) as pool:
            futures = [pool.submit(evaluate, solution, workloads) for solution, workloads in todo]
            try:
                for future in as_completed(futures):
                    future.result()
            except BaseException:
                cancel.set()  # the workers kill their processes and return
                for future in futures:
                    future.cancel()
                raise
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except supervisor.Cancelled:
        status = "interrupted"
        raise
    except BaseException:
        status = "failed"
        raise
    finally:
        if clocks is not None:
            clocks.stop()
        store.finish_run(run_id, status)
        try:
            log.close()
        except OSError:
            pass
    return result


