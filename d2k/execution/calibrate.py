"""Measure the device's ceilings: copy bandwidth and dense matmul throughput (worker side).

Peaks are the best of a few sizes, each timed like a solution (events, L2 flushed, warm-up by
time, median). Copy bandwidth counts bytes read plus bytes written. Matmuls run on random data.
"""

from __future__ import annotations

import statistics

import torch

from d2k.execution.timing import CudaTimer, TimerGuard


def _median_ms(timer: CudaTimer, fn) -> float:
    result = timer.measure(lambda i: fn(), 1, lambda i: None, probe=False)
    return statistics.median(result["samples_ms"])


def calibrate(settings: dict | None = None) -> dict:
    if not torch.cuda.is_available():
        raise RuntimeError("calibration needs a CUDA GPU")
    settings = {"budget_ms": 300.0, **(settings or {})}
    guard = TimerGuard()
    timer = CudaTimer("cuda", guard, settings)
    results: dict = {"copy": [], "bf16": [], "fp8": [], "fp32": []}

    for size in (2**28, 2**30, 2**32):
        src = torch.empty(size, dtype=torch.uint8, device="cuda").random_()
        dst = torch.empty_like(src)
        ms = _median_ms(timer, lambda: dst.copy_(src))
        results["copy"].append({"bytes": 2 * size, "median_ms": ms, "bytes_per_s": 2 * size / (ms * 1e-3)})
        del src, dst

    for n in (4096, 8192):
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        ms = _median_ms(timer, lambda: a @ b)
        results["bf16"].append({"n": n, "median_ms": ms, "flops_per_s": 2 * n**3 / (ms * 1e-3)})
        major, minor = torch.cuda.get_device_capability()
        if (major, minor) >= (8, 9) and hasattr(torch, "_scaled_mm"):
            a8 = a.to(torch.float8_e4m3fn)
            b8 = b.to(torch.float8_e4m3fn).t()  # column-major second operand
            one = torch.tensor(1.0, device="cuda")
            try:
                ms = _median_ms(timer, lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
                results["fp8"].append({"n": n, "median_ms": ms, "flops_per_s": 2 * n**3 / (ms * 1e-3)})
            except RuntimeError as exc:
                results["fp8_error"] = str(exc)[:200]
        del a, b

    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        n = 4096
        a = torch.randn(n, n, device="cuda")
        b = torch.randn(n, n, device="cuda")
        ms = _median_ms(timer, lambda: a @ b)
        results["fp32"].append({"n": n, "median_ms": ms, "flops_per_s": 2 * n**3 / (ms * 1e-3)})
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous

    def best(key, field):
        values = [r[field] for r in results[key]]
        return max(values) if values else None

    return {
        "copy_bytes_per_s": best("copy", "bytes_per_s"),
        "bf16_flops_per_s": best("bf16", "flops_per_s"),
        "fp8_flops_per_s": best("fp8", "flops_per_s"),
        "fp32_flops_per_s": best("fp32", "flops_per_s"),
        "details": results,
    }
