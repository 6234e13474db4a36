"""Run worker processes in isolation: one spawned process per solution, with timeouts.

A raise inside a workload is reported by the worker itself. Everything the worker cannot report
(a hang, ``os._exit``, a segfault, a poisoned CUDA context) is seen from here: the process is
killed or found dead, the workload it was on fails with the reason, and a fresh process continues
with the remaining workloads. Statistics are computed here from the raw samples.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from d2k.errors import D2KError
from d2k.execution.stats import timing_stats

WORKER_MODULE = "d2k.execution.worker"


@dataclass
class Limits:
    per_workload_s: float = 600.0
    total_s: float = 3600.0
    startup_s: float = 300.0   # importing torch and the solution, before the first workload starts


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _tail(path: Path, limit: int = 1500) -> str:
    try:
        data = path.read_bytes()[-limit:]
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip()


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


class EventReader:
    """Reads complete JSON lines appended to a file by another process."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self.partial = b""

    def poll(self) -> list[dict]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        data = self.partial + data
        lines = data.split(b"\n")
        self.partial = lines.pop()
        events = []
        for line in lines:
            if line.strip():
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
        return events


def worker_env(backend: str) -> dict:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    if backend == "interpreter":
        env["TRITON_INTERPRET"] = "1"
        env.setdefault("CUDA_VISIBLE_DEVICES", "")
    else:
        env.pop("TRITON_INTERPRET", None)
    # the worker must import this d2k, wherever the command was started
    package_parent = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([package_parent, *filter(None, [env.get("PYTHONPATH")])])
    return env


def spawn(job: dict, job_dir: Path, attempt: int) -> tuple[subprocess.Popen, Path]:
    job_dir = job_dir.resolve()
    job_dir.mkdir(parents=True, exist_ok=True)
    events_path = job_dir / f"events-{attempt}.jsonl"
    job = {**job, "events_path": str(events_path)}
    job_path = job_dir / f"job-{attempt}.json"
    job_path.write_text(json.dumps(job, indent=1))
    with open(job_dir / "stdout.log", "ab") as out, open(job_dir / "stderr.log", "ab") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", WORKER_MODULE, str(job_path)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=err,
            env={**worker_env(job["backend"]), **job.get("env", {})}, cwd=str(job_dir), start_new_session=True,
        )
    return proc, events_path


def run_single(job: dict, job_dir: Path, expect: str, timeout_s: float) -> dict:
    """Run a one-shot worker job (environment probe, calibration) and return its ``expect`` event."""
    proc, events_path = spawn(job, job_dir, 0)
    reader = EventReader(events_path)
    deadline = time.monotonic() + timeout_s
    found = None
    while True:
        for event in reader.poll():
            if event.get("event") == expect:
                found = event
            elif event.get("event") == "fatal":
                _kill(proc)
                raise D2KError(event.get("reason", "worker failed"))
        if proc.poll() is not None:
            for event in reader.poll():
                if event.get("event") == expect:
                    found = event
            break
        if time.monotonic() > deadline:
            _kill(proc)
            raise D2KError(f"{job.get('kind')} worker timed out after {timeout_s:.0f} s")
        time.sleep(0.05)
    if found is None:
        detail = _tail(job_dir / "stderr.log", 600).splitlines()
        raise D2KError(f"{job.get('kind')} worker exited with code {proc.returncode}" + (f": {detail[-1]}" if detail else ""))
    return found


def finalize(raw: dict, context: dict) -> dict:
    """A worker's result event plus the run context, with statistics computed here."""
    timing = raw.get("timing") or {}
    samples = [float(x) for x in timing.get("samples_ms", [])]
    record = {
        "eval_id": uuid.uuid4().hex,
        **context,
        "workload_id": raw["workload"],
        "status": raw["status"],
        "reason": raw.get("reason"),
        "correctness": raw.get("correctness"),
        "timing_method": timing.get("method"),
        "samples_ms": samples,
        "timing": {k: v for k, v in timing.items() if k != "samples_ms"} or None,
        "seconds": raw.get("seconds"),
        "traceback": raw.get("traceback"),
        "created_at": time.time(),
        **timing_stats(samples),
    }
    return record


def run_solution(job: dict, job_dir: Path, context: dict, limits: Limits, on_record, on_start=None) -> list[dict]:
    """Evaluate one solution on the job's workloads; ``on_record`` gets each finished record."""
    remaining = list(job["workloads"])
    records: list[dict] = []
    started_total = time.monotonic()
    attempt = 0

    def emit(raw: dict):
        record = finalize(raw, context)
        records.append(record)
        on_record(record)

    while remaining:
        if time.monotonic() - started_total > limits.total_s:
            for w in remaining:
                emit({"workload": w["id"], "status": "timeout", "reason": f"total time limit of {limits.total_s:.0f} s reached before this workload ran"})
            break
        proc, events_path = spawn({**job, "workloads": remaining}, job_dir, attempt)
        attempt += 1
        reader = EventReader(events_path)
        current, current_since = None, time.monotonic()
        spawned_at = time.monotonic()
        finished_ids: set[str] = set()
        fatal = None
        while True:
            for event in reader.poll():
                kind = event.get("event")
                if kind == "start":
                    current, current_since = event["workload"], time.monotonic()
                    if on_start:
                        on_start(current)
                elif kind == "result":
                    finished_ids.add(event["workload"])
                    emit(event)
                    current = None
                elif kind == "fatal":
                    fatal = event
            if fatal or proc.poll() is not None:
                break
            now = time.monotonic()
            if current is not None and now - current_since > limits.per_workload_s:
                _kill(proc)
                finished_ids.add(current)
                emit({"workload": current, "status": "timeout", "reason": f"exceeded the per-workload limit of {limits.per_workload_s:.0f} s (killed)", "seconds": round(now - current_since, 3)})
                current = None
                break
            if current is None and not finished_ids and now - spawned_at > limits.startup_s:
                _kill(proc)
                fatal = {"reason": f"the worker did not start a workload within {limits.startup_s:.0f} s (import hung?)"}
                break
            if now - started_total > limits.total_s:
                _kill(proc)
                break
            time.sleep(0.02)
        if proc.poll() is None:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                _kill(proc)
        for event in reader.poll():  # anything written just before exit
            if event.get("event") == "result" and event["workload"] not in finished_ids:
                finished_ids.add(event["workload"])
                emit(event)
                if event["workload"] == current:
                    current = None
            elif event.get("event") == "fatal":
                fatal = event
        remaining = [w for w in remaining if w["id"] not in finished_ids]
        if fatal:
            for w in remaining:
                emit({"workload": w["id"], "status": "error", "reason": fatal.get("reason"), "traceback": fatal.get("traceback")})
            break
        if current is not None:
            code = proc.returncode
            how = f"killed by {_signal_name(code)}" if code is not None and code < 0 else f"exited with code {code}"
            stderr = _tail(job_dir / "stderr.log", 800)
            last = stderr.splitlines()[-1] if stderr else ""
            emit({"workload": current, "status": "crashed", "reason": f"the worker process {how} during this workload" + (f" ({last[:300]})" if last else ""), "seconds": round(time.monotonic() - current_since, 3)})
            remaining = [w for w in remaining if w["id"] != current]
        elif remaining and proc.returncode not in (None, 0, 3):
            # died between workloads or before the first: don't loop forever on a broken setup
            code = proc.returncode
            how = f"killed by {_signal_name(code)}" if code < 0 else f"exited with code {code}"
            stderr = _tail(job_dir / "stderr.log", 800)
            for w in remaining:
                emit({"workload": w["id"], "status": "crashed", "reason": f"the worker process {how} before this workload ran" + (f" ({stderr.splitlines()[-1][:300]})" if stderr else "")})
            break
        elif remaining and proc.returncode == 0:
            # exited cleanly without finishing (e.g. the solution called os._exit(0) between workloads)
            for w in remaining[:1]:
                emit({"workload": w["id"], "status": "crashed", "reason": "the worker process exited early with code 0 (the solution ended the process?)"})
            remaining = remaining[1:]
    return records
