"""Removes the L2 flush before each timed call (its data would then be warm in the L2).
expect: failed
reason: replaced CudaTimer.flush_l2
"""
import torch

from d2k.execution import timing


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def run(x, w, eps):
    timing.CudaTimer.flush_l2 = lambda self: None
    return _rms(x, w, eps)
