"""Time a few kernels with d2k's CudaTimer under variants of its settings, and with do_bench.

    python benchmarks/timer_variants.py > variants.jsonl

Variants: hold (device-side sleep before each timed call) on/off; 1 input set vs 8 rotating sets.
Used to explain differences between d2k's medians and triton.testing.do_bench.
"""

from __future__ import annotations

import json
import statistics

import torch
import triton.testing
from profile_kernels import load_case  # benchmarks/ is on sys.path when run as a script

from d2k.content import Benchmark
from d2k.execution.inputs import clone_inputs
from d2k.execution.timing import CudaTimer, TimerGuard

CASES = [
    ("bf16_gemm", "bf16_gemm_m8192_n6144_k4096", "expert"),
    ("bf16_gemm", "bf16_gemm_m8192_n6144_k4096", "reference"),
    ("flash_attention_prefill", "gqa_prefill_causal_h32_kv8_d128_16xvar", "reference"),
    ("rmsnorm", "rmsnorm_h512_t16384", "expert"),
]


def main():
    bench = Benchmark.load(only=sorted({c[0] for c in CASES}))
    guard = TimerGuard()
    for task_id, workload_id, name in CASES:
        fn, _, base = load_case(bench, task_id, workload_id, name)  # as profile_kernels.py
        for n_sets in (1, 8):
            sets = [base] + [clone_inputs(base) for _ in range(n_sets - 1)]
            for hold in (0.0, 2000.0):
                timer = CudaTimer("cuda", guard, {"hold_max_us": hold})
                r = timer.measure(lambda i: fn(**sets[i]), n_sets, lambda i: None, probe=False)
                print(json.dumps({"workload": workload_id, "solution": name, "n_sets": n_sets, "hold_max_us": hold,
                                  "median_ms": statistics.median(r["samples_ms"]), "n": len(r["samples_ms"]),
                                  "host_issue_ms": r["host_issue_ms"], "hold_us": r["hold_us"]}), flush=True)
            del sets
        ms = triton.testing.do_bench(lambda: fn(**base), warmup=25, rep=100, return_mode="median")
        print(json.dumps({"workload": workload_id, "solution": name, "do_bench_median_ms": ms}), flush=True)
        del base
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
