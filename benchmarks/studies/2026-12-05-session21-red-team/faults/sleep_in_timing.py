"""Right results, but the 4th call (inside the timed loop, after the checks passed) sleeps 600 s.
Run with --timeout 8.
expect: timeout on both workloads after about 8 s each, no leftover process
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w

import time

CALLS = [0]


def run(x, w, eps):
    CALLS[0] += 1
    if CALLS[0] == 4:
        time.sleep(600)
    return _rms(x, w, eps)
