"""Does the L2 flush itself cost the timed call? Times memory-bound kernels with d2k's CudaTimer
under both flush modes and prints one JSON line per (case, mode):

    python benchmarks/flush_variants.py > flush.jsonl                  # the default cases and copies
    python benchmarks/flush_variants.py TASK:WORKLOAD[:SOLUTION] ...   # only these (no copies)

write: the flush zeroes a 2 x L2 buffer (as triton's do_bench does), so the L2 is left full of
dirty lines; read: the flush sums the buffer, so the L2 is left clean. If the timed call has to
write back the flush's dirty lines, `write` medians exceed `read` medians by up to the L2 size
over the write bandwidth (~60 MB / 4 TB/s = 15 us on an H200), most visibly on short kernels.
Modes alternate per repetition so that clock drift hits both alike.
"""

from __future__ import annotations

import json
import statistics
import sys

import torch
from profile_kernels import load_case  # benchmarks/ is on sys.path when run as a script
from profile_kernels import parse as parse_case

from d2k.content import Benchmark
from d2k.execution.inputs import clone_inputs
from d2k.execution.timing import CudaTimer, TimerGuard

CASES = [
    ("rmsnorm", "rmsnorm_h512_t16384", "expert"),
    ("rmsnorm", "rmsnorm_h4096_t8192", "expert"),
    ("kv_cache_append_fp8", "kv_cache_append_fp8_qwen3_30b_chunked_t16384", "expert"),
    ("kv_cache_append_fp8", "kv_cache_append_fp8_llama70b_tp4_decode_t256", "expert"),
    ("silu_and_mul", "silu_and_mul_i768_t32768", "expert"),
    ("softmax_vocab", "softmax_vocab_m4096_n8192", "expert"),
    ("fused_add_rmsnorm", "fused_add_rmsnorm_h2048_t4096", "expert"),
]
COPY_BYTES = (16 * 2**20, 64 * 2**20, 256 * 2**20, 1024 * 2**20)
REPEATS = 3


def timed(guard, mode, call, n_sets, restore):
    timer = CudaTimer("cuda", guard, {"flush_mode": mode, "budget_ms": 300.0})
    samples = timer.measure(call, n_sets, restore, probe=False)["samples_ms"]
    del timer
    return statistics.median(samples), len(samples)


def report(case: dict, guard, call, n_sets, restore):
    for rep in range(REPEATS):
        for mode in (("write", "read") if rep % 2 == 0 else ("read", "write")):
            median, n = timed(guard, mode, call, n_sets, restore)
            print(json.dumps({**case, "mode": mode, "repeat": rep, "median_us": round(median * 1e3, 3), "n": n}),
                  flush=True)


def main(argv: list[str]):
    cases = [parse_case(a) for a in argv] or CASES  # TASK:WORKLOAD[:SOLUTION], as profile_kernels.py
    guard = TimerGuard()
    bench = Benchmark.load(only=sorted({c[0] for c in cases}))
    for task_id, workload_id, name in cases:
        # the same case loading as profile_kernels.py (short workload ids, solution paths, references)
        fn, w, base = load_case(bench, task_id, workload_id, name)
        sets = [base] + [clone_inputs(base) for _ in range(3)]
        report({"case": w["id"], "solution": name}, guard, lambda i: fn(**sets[i]), len(sets), lambda i: None)
        del sets, base
        torch.cuda.empty_cache()
    if argv:
        return
    for nbytes in COPY_BYTES:
        pairs = [(torch.empty(nbytes // 2, dtype=torch.bfloat16, device="cuda"),
                  torch.empty(nbytes // 2, dtype=torch.bfloat16, device="cuda")) for _ in range(4)]
        report({"case": f"copy_{nbytes >> 20}MiB", "solution": "torch.copy_", "bytes": 2 * nbytes}, guard,
               lambda i: pairs[i][0].copy_(pairs[i][1]), len(pairs), lambda i: None)
        del pairs
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1:])
