"""An independent per-call time for d2k's timing-v2 agreement check: CUDA-graph replay.

For each TASK:WORKLOAD[:SOLUTION], the solution's call is captured N times into one CUDA graph,
each call preceded by an L2 flush that reads (sums) a buffer of 2x the L2 and so leaves no dirty
lines; a second graph holds the flushes alone. The per-call time is
(replay time of the first graph - replay time of the second) / N: no host launches, no events
around single calls, no profiler. Calls rotate over several input sets as in d2k. Solutions that
cannot be captured (host synchronisation, host-side state) are reported as such.

    python3 benchmarks/graph_replay_timing.py rmsnorm:rmsnorm_h4096_t8192 ... > out.jsonl

Runs in-process (no sandbox): a measuring tool for the shipped kernels, not a harness.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

sys.path.insert(0, str(Path(__file__).resolve().parent))
from profile_kernels import parse as parse_case  # noqa: E402

from d2k.content import Benchmark  # noqa: E402
from d2k.execution.inputs import build_inputs, clone_inputs, tensor_bytes  # noqa: E402
from d2k.execution.worker import load_module  # noqa: E402
from d2k.job_payload import task_payload  # noqa: E402


def capture(fn):
    """A CUDA graph of ``fn()``, captured on a side stream after one warm-up run there."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph


def replay_ms(graph, reps: int = 5) -> list[float]:
    """Milliseconds per replay of ``graph`` by CUDA events, ``reps`` replays after one untimed."""
    graph.replay()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        out.append(start.elapsed_time(end))
    return out


def graph_time(fn, reps: int = 5) -> list[float]:
    """Milliseconds per replay of a captured graph of ``fn``, ``reps`` replays."""
    return replay_ms(capture(fn), reps)


def input_sets(bench: Benchmark, task_id: str, workload_id: str, solution: str) -> tuple:
    """The solution's entry point and 2-8 copies of the workload's inputs on the GPU (at most 2 GB
    in all), to rotate over as d2k does."""
    task = task_payload(bench, task_id, "cuda")
    workload = next(w for w in bench.workloads[task_id] if w.id == workload_id).model_dump()
    reference = load_module(bench.task_dir(task_id) / "reference.py", f"ref_{task_id}")
    path = bench.task_dir(task_id) / f"{solution}.py" if not solution.endswith(".py") else Path(solution)
    fn = reference.reference if solution == "reference" else load_module(path, f"sol_{task_id}").run
    base = build_inputs(task["signature"], workload, int(workload.get("seed", 0)) * 1_000_003, "cuda", False, reference)
    n_sets = int(min(8, max(2, 2e9 // max(tensor_bytes(base), 1))))
    return fn, [clone_inputs(base) for _ in range(n_sets)]


def measure(bench: Benchmark, task_id: str, workload_id: str, solution: str, calls: int) -> dict:
    fn, sets = input_sets(bench, task_id, workload_id, solution)
    n_sets = len(sets)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.zeros(2 * l2 // 4, dtype=torch.int32, device="cuda")
    sink = torch.zeros((), dtype=torch.int64, device="cuda")
    for s in sets:  # compile and autotune outside the capture
        fn(**s)
    torch.cuda.synchronize()

    def with_calls():
        for k in range(calls):
            torch.sum(flush, dim=0, dtype=torch.int64, out=sink)
            fn(**sets[k % n_sets])

    def flushes_only():
        for _ in range(calls):
            torch.sum(flush, dim=0, dtype=torch.int64, out=sink)

    try:
        total = graph_time(with_calls)
        base_ms = graph_time(flushes_only)
    except Exception as exc:  # capture is not always possible (host syncs, host-side state)
        return {"task": task_id, "workload": workload_id, "solution": solution,
                "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    per_call = [(t - statistics.median(base_ms)) / calls for t in total]
    return {"task": task_id, "workload": workload_id, "solution": solution, "method": "graph_replay_read_flush",
            "calls_per_graph": calls, "per_call_ms": statistics.median(per_call), "replays_ms": total,
            "flush_only_ms": base_ms}


def main(argv: list[str]) -> int:
    bench = Benchmark.load()
    for case in argv:
        task_id, workload_id, solution = parse_case(case)
        try:
            row = measure(bench, task_id, workload_id, solution or "expert", calls=50)
        except Exception as exc:
            row = {"task": task_id, "workload": workload_id, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
        print(json.dumps(row), flush=True)
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
