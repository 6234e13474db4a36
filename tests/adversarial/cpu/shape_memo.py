"""Memoises the result by input shape: every later call with that shape gets the first result.
expect: failed
reason: outside tolerance
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


_memo = {}


def run(x, w, eps):
    if x.shape not in _memo:
        _memo[x.shape] = _rms(x, w, eps)
    return _memo[x.shape].clone()