"""Finds the timer guard through gc and stops its clock, so every timed call would read as zero.
expect: failed
reason: changed the TimerGuard's perf_counter

The guard's own captured primitives are frozen when the solution is imported, and the check after
the first (correctness) call sees the replaced clock. Before that, the interpreter's calls read
as zero (timing_suspect), and on the H200 the stopped clock stalled the time-bounded warm-up
until the evaluation timed out (2026-12-03).
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


import gc


def run(x, w, eps):
    for obj in gc.get_objects():
        if type(obj).__name__ == "TimerGuard":
            obj.perf_counter = lambda: 0.0
    return _rms(x, w, eps)