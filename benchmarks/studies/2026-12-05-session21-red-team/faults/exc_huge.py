"""Raises an exception with a 100 MB message (and a 100 MB traceback line).
expect: error, reason cut to a few hundred characters
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def run(x, w, eps):
    raise ValueError("A" * 100_000_000)
