"""Turn typed content into the plain-JSON job a worker process runs (the worker has no pydantic)."""

from __future__ import annotations

import os

from d2k.content import Benchmark
from d2k.schema import Workload
from d2k.solutions import Solution, compile_dynamic

DEFAULT_TIMING = {
    "warmup_ms": 25.0,        # warm-up by time, after the first (compiling) call
    "budget_ms": 500.0,       # timed calls: about this much device time, within the rep bounds
    "min_reps": 10,
    "max_reps": 1000,
    "flush_factor": 2.0,      # L2 flush buffer = this x the device's L2
    "flush_mode": "write",    # write (zero the buffer, like do_bench) or read (sum it: L2 left clean)
    "rotate_bytes": 2e9,      # rotating input sets: 2 to 8 sets within this many bytes
    "device_span": False,     # also record each call's device span from CUPTI (timing v2)
    "span_max_reps": 300,     # at most this many timed calls under the profiler
    "profiler_slack": 1.25,   # a profiled window over this x the unprofiled probes (+ 20 us): re-timed without it
    "hold_max_us": 2000.0,    # the device-side hold before each timed call (0 disables it)
    "interpreter_reps": 4,     # two input sets: calls 2 and 3 reuse them (a result cache shows)
    "interpreter_budget_s": 5.0,
    "fresh_inputs": "task",    # a new draw of the inputs for each timed call: "task" (where its reference
                               # sets FRESH_INPUTS_PER_CALL), true or false for every task
    "settle_s": 20.0,          # before timing, wait at most this long for the solution's other processes
                               # (and, under the interpreter, threads) to go quiet (tree_cpu.settle)
    # the trusted batch (d2k/execution/batch.py): the calls timed by the trusted side's clock
    "trusted_batch": False,
    "batch_calls": 0,           # 0: 60 under the interpreter, 50 on a GPU (fewer when outputs are large)
    "batch_bytes": 0,           # 0: 1 GB (interpreter) or 4 GB (GPU) of kept output copies at most
    "batch_checked": 3,         # calls checked, drawn in secret before the batch
    "batch_allowance_ms": 3.0,  # GPU only: room for host work the device-side figure leaves out (batch.py)
    "batch_freezer": "auto",    # auto: a freezer cgroup where one can be made, else SIGSTOP; sigstop: always SIGSTOP
}


# the timing modes a user names (`--timing`, an experiment's `timing`): settings over $D2K_TIMING's
TIMING_MODES = {"events": {"device_span": False}, "span": {"device_span": True, "flush_mode": "read"}}


def timing_settings(overrides: dict | None = None) -> dict:
    """The timing settings a job runs with: the defaults, then ``$D2K_TIMING`` (a JSON object, e.g.
    ``{"device_span": false}``), then ``overrides``."""
    import json
    import math

    from d2k.errors import D2KError

    env = {}
    if os.environ.get("D2K_TIMING"):
        try:
            env = json.loads(os.environ["D2K_TIMING"])
        except json.JSONDecodeError as exc:
            raise D2KError(f"D2K_TIMING is not a JSON object: {exc}") from None
        unknown = sorted(set(env) - set(DEFAULT_TIMING)) if isinstance(env, dict) else None
        if unknown is None or unknown:
            raise D2KError(f"D2K_TIMING: unknown timing settings {unknown} (known: {', '.join(DEFAULT_TIMING)})")
    settings = {**DEFAULT_TIMING, **env, **(overrides or {})}
    # checked here, once, so a mistyped value is one line before the run rather than an error in
    # every evaluation's worker
    for key, default in DEFAULT_TIMING.items():
        value = settings[key]
        if type(default) is bool:
            if type(value) is not bool:
                raise D2KError(f"timing setting {key} must be true or false, not {value!r}")
        elif type(default) in (int, float):
            if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
                raise D2KError(f"timing setting {key} must be a non-negative number, not {value!r}")
    if settings["flush_mode"] not in ("write", "read"):
        raise D2KError(f"timing setting flush_mode must be write or read, not {settings['flush_mode']!r}")
    if settings["fresh_inputs"] not in ("task", True, False):
        raise D2KError(f"timing setting fresh_inputs must be \"task\", true or false, not {settings['fresh_inputs']!r}")
    if settings["batch_freezer"] not in ("auto", "sigstop"):
        raise D2KError(f"timing setting batch_freezer must be auto or sigstop, not {settings['batch_freezer']!r}")
    return settings


def _host_memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 64 << 30


# A candidate's memory is bounded by its address space (the interpreter only), its private /tmp and
# its private /dev/shm (both tmpfs: their files are memory). Fixed at 32 + 8 + 1 GiB they came to
# more than this 23 GiB host holds, and a solution filled 3 GiB of tmpfs while its own resident size
# stayed at 295 MiB (red team G, session 21): so each is a share of the host's memory, together
# under 0.7 of it per candidate.
_HOST_MEMORY = _host_memory_bytes()
DEFAULT_SANDBOX_LIMITS = {
    "address_space_bytes": min(32 << 30, _HOST_MEMORY // 2),  # CPU interpreter only (CUDA reserves huge virtual ranges)
    "tmp_bytes": min(8 << 30, _HOST_MEMORY // 8),
    "shm_bytes": min(1 << 30, _HOST_MEMORY // 16),
    "open_files": 4096,
    "file_bytes": 8 << 30,
    "processes": 4096,
}


def d2k_checkouts() -> list:
    """Every checkout (a folder holding ``d2k/`` and ``tasks/``) a Python started here could import
    d2k from: each entry of ``sys.path``, and what the other import finders resolve (a PEP 660
    editable install maps d2k to its checkout through a finder, not through the path). A candidate
    that cannot see this process's copy (one under the /tmp its sandbox replaces) imports d2k from
    the next one it finds."""
    import importlib.machinery
    import sys
    from pathlib import Path

    found = []
    for entry in sys.path:
        if entry and (Path(entry) / "d2k").is_dir():
            found.append(Path(entry) / "d2k")
    for finder in sys.meta_path:
        if finder is importlib.machinery.PathFinder or not hasattr(finder, "find_spec"):
            continue
        try:
            spec = finder.find_spec("d2k", None)
        except Exception:  # a finder that cannot answer for d2k does not provide it
            continue
        for location in (getattr(spec, "submodule_search_locations", None) or []) if spec else []:
            found.append(Path(location))
    roots = [p.resolve().parent for p in found]
    return list(dict.fromkeys(r for r in roots if (r / "tasks").is_dir()))


# the top-level folders a candidate sees (read-only): the system's programs, libraries and settings
SYSTEM_FOLDERS = frozenset({"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "dev", "proc", "sys",
                            "tmp", "run", "var"})


def sandbox_settings(bench: Benchmark, extra_hide: list[str] | None = None) -> dict:
    """What the candidate's sandbox hides and keeps read-only (see ``d2k.execution.sandbox``).

    Hidden: the content root and every checkout d2k is imported from, whole, but for their d2k
    package and a Python installed in them (the content a solution must not read: tasks with their
    experts and references, rubrics, gold labels, workloads, analysis, benchmarks, the git history,
    earlier runs' folders), the run folder, the store and the home directory (a Python installed
    there is bound back). Read-only: the d2k packages and the Python installation.
    """
    import sys
    from pathlib import Path

    from d2k.store import default_path

    root = bench.root.resolve()
    # the content in use, and every checkout the candidate's Python could import d2k from (an
    # editable install of checkout X running content Y: X's experts must stay out of reach too)
    roots = list(dict.fromkeys([root, Path(__file__).resolve().parents[1], *d2k_checkouts()]))
    hide = [r / name for r in roots
            for name in ("tasks", "design_rubrics", "judges", "workloads", "analysis", "benchmarks", ".git")]
    workdir = Path(os.environ.get("D2K_WORKDIR", ".d2k")).resolve()
    store = Path(default_path()).resolve()
    hide += [workdir, store, store.with_name(store.name + ".wal")]
    home = Path.home().resolve()
    python_homes = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(__file__).resolve().parent}
    if home not in python_homes:
        # a Python installed under the home folder (pyenv in /root) is bound back into the empty
        # folder that hides the rest of it (the sandbox keeps every read-only path under a hidden one)
        hide.append(home)
    hide += [Path(p) for p in (extra_hide or []) + os.environ.get("D2K_SANDBOX_HIDE", "").split(os.pathsep) if p]
    # each checkout whole, but for its d2k package and a Python installed in it (bound back into
    # the empty folder): earlier runs' folders (.d2k/runs/*/results.jsonl holds every solution's
    # source, the experts' included) and anything else kept there are out of reach
    # (read_other_workdir.py read the experts so while only the current run folder was hidden)
    packages = [r / "d2k" for r in roots if (r / "d2k" / "__init__.py").exists()]
    hide += roots
    # and every top-level folder but the system's: another checkout on the machine (a clone in
    # /work, say) keeps its runs' folders too, and the CI's read_other_workdir.py read an expert's
    # source from one; what lies in them that d2k needs (a Python, d2k itself) is bound back
    hide += [Path("/", name) for name in sorted(os.listdir("/"))
             if name not in SYSTEM_FOLDERS and not os.path.islink(os.path.join("/", name))]
    read_only = roots + packages   # the sandbox's plan adds the running Python itself
    return {
        "enabled": os.environ.get("D2K_SANDBOX", "1") != "0",
        "hide": [str(p) for p in dict.fromkeys(hide)],
        "read_only": [str(p) for p in read_only],
        "limits": dict(DEFAULT_SANDBOX_LIMITS),
        "cache_root": str(workdir / "kernel-cache"),
    }


INTERPRETER_TRIALS = 2


def task_payload(bench: Benchmark, task_id: str, backend: str = "cuda") -> dict:
    task = bench.task(task_id)
    signature = task.signature.model_dump()
    return {
        "id": task.id,
        "reference_path": str(bench.task_dir(task_id) / "reference.py"),
        "entry_point": task.entry_point,
        "signature": signature,
        "tolerance": {o.name: task.tolerance.for_output(o.name, interpreter=backend == "interpreter")
                      for o in task.signature.outputs},
        # two seeds under the interpreter (a smoke check whose every trial costs seconds there); the GPU runs them all
        "trials": min(task.correctness.trials, INTERPRETER_TRIALS) if backend == "interpreter" else task.correctness.trials,
    }


def workload_payload(workload: Workload) -> dict:
    return workload.model_dump(include={"id", "axes", "dtypes", "params", "seed", "tag"})


def evaluation_job(
    bench: Benchmark,
    solution: Solution,
    workloads: list[Workload],
    backend: str,
    events_path: str,
    timing: dict | None = None,
    check: bool = True,
    time: bool = True,
) -> dict:
    return {
        "kind": "evaluate",
        "backend": backend,
        "task": task_payload(bench, solution.task_id, backend),
        "solution": {
            "kind": solution.kind,
            "path": str(solution.path),
            "entry_point": bench.task(solution.task_id).entry_point,
            "solution_id": solution.solution_id,
            # the text hashed into solution_id: the candidate runs this, not the file as it is when
            # the worker starts (a file rewritten after d2k read it ran B while A was stored: red
            # team G, session 21)
            "source": solution.source,
            # torch.compile's dynamic= for a compiled solution (the task's performance.compile_dynamic)
            "compile_dynamic": solution.kind == "compiled" and compile_dynamic(bench, solution.task_id),
        },
        "workloads": [workload_payload(w) for w in workloads],
        "check": check,
        "time": time,
        "timing": timing_settings(timing),
        "events_path": events_path,
        "sandbox": sandbox_settings(bench),
    }
