"""Finds the timer guard through gc and stops its clock, so every timed call reads as zero.
expect: timing_suspect
expect_gpu: passed|timeout
reason: zero or negative

On the GPU the timed figures come from CUDA events, so a stopped host clock cannot make a call read
as free; it only stalls the candidate's own time-bounded warm-up (10,000 calls, each scanning gc),
and the evaluation times out (seen on the H200, 2026-12-03). Either way nothing forged is stored.
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