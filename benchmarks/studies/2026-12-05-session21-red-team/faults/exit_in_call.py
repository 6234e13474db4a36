"""os._exit(0) in a timed call (the first call is the check, the timed loop follows): a clean exit
code mid-timing.
expect: crashed
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w

import os

CALLS = [0]


def run(x, w, eps):
    CALLS[0] += 1
    if CALLS[0] == 4:
        os._exit(0)
    return _rms(x, w, eps)
