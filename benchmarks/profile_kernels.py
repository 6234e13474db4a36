"""Runs solutions on single workloads so that a profiler can look at exactly one call of each:

    python benchmarks/profile_kernels.py TASK:WORKLOAD[:SOLUTION] ...

SOLUTION is a file name in the task's folder (default `expert`) or a path to a .py file. Each
case is built from the workload's seed, called twice unprofiled (compilation, autotuning,
warm caches), then once between cudaProfilerStart and cudaProfilerStop, so that
`ncu --profile-from-start off` records only that call's kernels. Prints one line per case with
the wall time of the profiled call (a plain CUDA event pair; not a d2k timing).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from d2k.content import Benchmark
from d2k.execution.inputs import build_inputs
from d2k.execution.worker import load_module
from d2k.job_payload import task_payload


def parse(arg: str) -> tuple[str, str, str]:
    parts = arg.split(":")
    if len(parts) not in (2, 3):
        raise SystemExit(f"expected TASK:WORKLOAD[:SOLUTION], got {arg!r}")
    return parts[0], parts[1], parts[2] if len(parts) == 3 else "expert"


def load_case(bench: Benchmark, task_id: str, workload_id: str, solution: str):
    """The solution's ``run``, the workload (a dict) and its inputs on the GPU, built from its seed.
    ``compiled`` is ``torch.compile`` of the task's reference (as `d2k bench --solution compiled`)."""
    payload = task_payload(bench, task_id)
    ref = load_module(payload["reference_path"], f"ref_{task_id}")
    if solution == "compiled":
        import torch

        fn = torch.compile(ref.reference)
    else:
        path = Path(solution) if solution.endswith(".py") else bench.task_dir(task_id) / f"{solution}.py"
        module = load_module(path, f"sol_{task_id}_{path.stem}")
        fn = module.reference if path.name == "reference.py" else module.run  # a reference's entry is reference()
    matches = [w for w in bench.select_workloads(task_id, "all") if w.id in (workload_id, f"{task_id}_{workload_id}")]
    if not matches:
        raise SystemExit(f"{task_id} has no workload {workload_id!r}")
    w = matches[0].model_dump()
    return fn, w, build_inputs(payload["signature"], w, w["seed"], "cuda", False, ref)


def run_cases(args: list[str], warmup: int, measure) -> None:
    """For each TASK:WORKLOAD[:SOLUTION] in ``args``: load the case on the GPU, call it ``warmup``
    times (compilation, autotuning and the allocator stay outside what is measured), then
    ``measure(task_id, workload, solution, fn, inputs)``; its inputs are freed before the next case."""
    cases = [parse(a) for a in args]
    bench = Benchmark.load(only=sorted({c[0] for c in cases}))
    for task_id, workload_id, solution in cases:
        fn, w, inputs = load_case(bench, task_id, workload_id, solution)
        for _ in range(warmup):
            fn(**inputs)
        torch.cuda.synchronize()
        measure(task_id, w, solution, fn, inputs)
        del inputs
        torch.cuda.empty_cache()


def main(argv: list[str]) -> int:
    def one_profiled_call(task_id, w, solution, fn, inputs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.cudart().cudaProfilerStart()
        start.record()
        fn(**inputs)
        end.record()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        print(f"{task_id} {w['id']} {Path(solution).stem}: {start.elapsed_time(end) * 1e3:.1f} us (one call, events)", flush=True)

    run_cases(argv, 2, one_profiled_call)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
