"""Replaces time.perf_counter while running.
expect: failed
reason: replaced time.perf_counter
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


import time


def run(x, w, eps):
    time.perf_counter = lambda: 0.0
    return _rms(x, w, eps)