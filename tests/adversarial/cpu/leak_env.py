"""Leaks its environment (API keys, d2k settings) in its failure reason.
expect: error
forbid: sk-d2k-test-leak
forbid: D2K_WORKDIR
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


import os


def run(x, w, eps):
    raise RuntimeError(repr(dict(os.environ)))