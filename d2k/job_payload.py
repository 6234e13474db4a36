"""Turn typed content into the plain-JSON job a worker process runs (the worker has no pydantic)."""

from __future__ import annotations

from d2k.content import Benchmark
from d2k.schema import Workload
from d2k.solutions import Solution

DEFAULT_TIMING = {
    "warmup_ms": 25.0,        # warm-up by time, after the first (compiling) call
    "budget_ms": 500.0,       # timed calls: about this much device time, within the rep bounds
    "min_reps": 10,
    "max_reps": 1000,
    "flush_factor": 2.0,      # L2 flush buffer = this x the device's L2
    "flush_mode": "write",    # write (zero the buffer, like do_bench) or read (sum it: L2 left clean)
    "rotate_bytes": 2e9,      # rotating input sets: 2 to 8 sets within this many bytes
    "interpreter_reps": 2,
    "interpreter_budget_s": 5.0,
}


def timing_settings(overrides: dict | None = None) -> dict:
    """The timing settings a job runs with: the defaults, with ``overrides`` on top."""
    return {**DEFAULT_TIMING, **(overrides or {})}


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
        "trials": task.correctness.trials,
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
        },
        "workloads": [workload_payload(w) for w in workloads],
        "check": check,
        "time": time,
        "timing": timing_settings(timing),
        "events_path": events_path,
    }
