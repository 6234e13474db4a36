"""How close to the calibrated copy bandwidth can any kernel stream a memory-bound workload's bytes?
A roof for the SOL fraction of read-dominated tasks (issue 15's W4A16 target: 0.7 of copy at
M <= 16), measured the way d2k times a solution: CudaTimer in span mode, read flush.

For each size (by default the SOL bytes of w4a16_gemm's bench workloads, then 256 MiB and 1 GiB)
it times, on the same device in one process:
  - read_triton: a Triton kernel that reads every byte once (16-byte loads) and reduces it to one
    word per program, over a few grid and block shapes; each shape's median is printed, and the
    best is the roof;
  - read_torch: torch's int32 sum over the same bytes (one reduction kernel);
  - copy_same_bytes: torch's copy of half the bytes (reads plus writes = the size; the calibration's
    own operation, at this size).
The calibrated copy bandwidth is measured first in the same process (d2k.execution.calibrate, the
copy part only), so every fraction compares within one process.

    python3 benchmarks/read_roof.py > $OUT/read_roof.jsonl            # on the GPU
    python3 benchmarks/read_roof.py --sizes 60559360 268435456        # chosen sizes (bytes)

One JSON line per (size, operation, shape): median and quartiles in us, bytes, the fraction of the
copy bandwidth. Nothing here runs on the interpreter: the figures are GPU times or nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import torch
import triton
import triton.language as tl

from d2k.content import Benchmark
from d2k.execution.timing import CudaTimer, TimerGuard
from d2k.perf import workload_bytes

COPY_SIZES = (2**28, 2**30)        # calibrate.py's copy sizes, less the 4-GiB one (time)
EXTRA_SIZES = (2**28, 2**30)


@triton.jit
def _read_all(X, OUT, n_words, BLOCK: tl.constexpr, PROGRAMS: tl.constexpr):
    """OUT[pid] = xor of the int32 words pid*BLOCK + k*PROGRAMS*BLOCK + [0, BLOCK) of X: every word
    of X is read once, in BLOCK-word tiles dealt round-robin to PROGRAMS programs."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    for start in range(pid * BLOCK, n_words, PROGRAMS * BLOCK):
        idx = start + offs
        acc ^= tl.load(X + idx, mask=idx < n_words, other=0)
    tl.store(OUT + pid, tl.xor_sum(acc, axis=0))


def _stats(samples: list[float]) -> dict:
    q = statistics.quantiles(samples, n=4) if len(samples) >= 4 else [min(samples), statistics.median(samples), max(samples)]
    return {"median_us": round(statistics.median(samples) * 1e3, 3), "q1_us": round(q[0] * 1e3, 3),
            "q3_us": round(q[2] * 1e3, 3), "n": len(samples)}


def timed(guard: TimerGuard, call, n_sets: int, span: bool = True) -> dict:
    """d2k's per-call figure for ``call(i)``: the device span (span mode, read flush) where recorded,
    else the event window."""
    timer = CudaTimer("cuda", guard, {"device_span": span, "flush_mode": "read", "budget_ms": 300.0})
    result = timer.measure(call, n_sets, lambda i: None, probe=False)
    samples = result.get("span_samples_ms") or result["samples_ms"]
    out = {**_stats(samples), "method": "device_span" if result.get("span_samples_ms") else "cuda_events"}
    del timer
    return out


def copy_bandwidth(guard: TimerGuard) -> float:
    """calibrate.py's copy figure (bytes read + written per second, best of its sizes), with its
    timer settings (events, the default flush)."""
    best = 0.0
    timer = CudaTimer("cuda", guard, {"budget_ms": 300.0})
    for size in COPY_SIZES:
        src = torch.empty(size, dtype=torch.uint8, device="cuda").random_()
        dst = torch.empty_like(src)
        ms = statistics.median(timer.measure(lambda i: dst.copy_(src), 1, lambda i: None, probe=False)["samples_ms"])
        best = max(best, 2 * size / (ms * 1e-3))
        src = dst = None   # freed before the next size
    del timer
    torch.cuda.empty_cache()
    return best


def w4a16_sizes() -> list[tuple[str, int]]:
    bench = Benchmark.load(only=["w4a16_gemm"])
    task = bench.tasks["w4a16_gemm"]
    return [(w.id, int(workload_bytes(task, w))) for w in bench.select_workloads("w4a16_gemm", "bench")]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", help="bytes (default: w4a16_gemm's bench workloads, 256 MiB, 1 GiB)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("read_roof.py needs a CUDA GPU (its figures are GPU times)", file=sys.stderr)
        return 2
    guard = TimerGuard()
    copy_bps = copy_bandwidth(guard)
    print(json.dumps({"op": "calibrated_copy", "bytes_per_s": copy_bps, "gpu": torch.cuda.get_device_name()}), flush=True)
    sizes = [(f"{n}B", n) for n in args.sizes] if args.sizes else \
        [*w4a16_sizes(), *((f"{n >> 20}MiB", n) for n in EXTRA_SIZES)]
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def emit(label, nbytes, op, shape, figure):
        seconds = figure["median_us"] * 1e-6
        print(json.dumps({"size": label, "bytes": nbytes, "op": op, "shape": shape, **figure,
                          "fraction_of_copy": round(nbytes / seconds / copy_bps, 4)}), flush=True)

    for label, nbytes in sizes:
        words = nbytes // 4
        # four sets at distinct addresses, as d2k rotates input sets
        sets = [torch.randint(-2**31, 2**31 - 1, (words,), dtype=torch.int32, device="cuda") for _ in range(4)]
        for block, per_sm, warps in ((1024, 4, 4), (2048, 4, 8), (4096, 2, 8), (1024, 8, 4), (2048, 8, 8)):
            programs = min(sms * per_sm, triton.cdiv(words, block))
            out = torch.empty(programs, dtype=torch.int32, device="cuda")
            figure = timed(guard, lambda i: _read_all[(programs,)](sets[i], out, words, BLOCK=block, PROGRAMS=programs,
                                                                     num_warps=warps), len(sets))
            emit(label, nbytes, "read_triton", {"block": block, "programs": programs, "warps": warps}, figure)
        emit(label, nbytes, "read_torch", {}, timed(guard, lambda i: sets[i].sum(), len(sets)))
        halves = [(torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda"), s.view(torch.uint8)[: nbytes // 2])
                  for s in sets]
        emit(label, nbytes, "copy_same_bytes", {}, timed(guard, lambda i: halves[i][0].copy_(halves[i][1]), len(halves)))
        sets = halves = None   # freed before the next size
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
