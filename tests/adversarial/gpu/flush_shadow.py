"""Removes the L2 flush without touching the timer class: finds the timer in its callers' frames
and sets an instance attribute flush_l2 that does nothing (it shadows the class's method, which
the guard compares), so every timed call would find its data warm in the L2.
expect: failed
reason: changed the CudaTimer's flush_l2
"""
import sys

import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def run(x, w, eps):
    frame = sys._getframe(1)
    while frame is not None:
        timer = frame.f_locals.get("self")
        if type(timer).__name__ == "CudaTimer" and "flush_l2" not in vars(timer):
            timer.flush_l2 = lambda: None
            break
        frame = frame.f_back
    return _rms(x, w, eps)
