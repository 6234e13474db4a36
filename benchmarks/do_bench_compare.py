"""Time the same kernels with triton.testing.do_bench, for comparison with d2k's timer.

    python benchmarks/do_bench_compare.py --tasks rmsnorm,bf16_gemm > do_bench.jsonl

One JSON line per (task, workload, solution, repeat): do_bench's median (its own 256 MB L2 flush
per rep, one input set, CUDA events). Join with d2k's medians in the store to compare.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch
import triton.testing

from d2k.content import Benchmark
from d2k.execution.inputs import build_inputs
from d2k.execution.worker import load_module
from d2k.job_payload import task_payload


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", default="rmsnorm,bf16_gemm,flash_attention_prefill")
    parser.add_argument("--solutions", default="expert,reference")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    bench = Benchmark.load(only=args.tasks.split(","))
    for task_id in bench.tasks:
        payload = task_payload(bench, task_id)
        reference = load_module(payload["reference_path"], f"ref_{task_id}")
        for name in args.solutions.split(","):
            fn = (reference.reference if name == "reference"
                  else load_module(bench.task_dir(task_id) / f"{name}.py", f"{name}_{task_id}").run)
            for workload in bench.select_workloads(task_id, "bench"):
                w = workload.model_dump()
                inputs = build_inputs(payload["signature"], w, w["seed"] * 1_000_003, "cuda", False, reference)
                for repeat in range(args.repeats):
                    ms = triton.testing.do_bench(lambda: fn(**inputs), warmup=25, rep=100, return_mode="median")
                    print(json.dumps({"task_id": task_id, "workload_id": workload.id, "solution": name,
                                      "repeat": repeat, "do_bench_median_ms": ms}), flush=True)
                del inputs
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
