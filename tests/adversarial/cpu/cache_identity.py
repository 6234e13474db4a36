"""Caches results by tensor identity only (not values): later calls on a reused buffer get stale results.
expect: failed
reason: outside tolerance
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


_cache = {}


def run(x, w, eps):
    key = (id(x), id(w))
    if key not in _cache:
        _cache[key] = _rms(x, w, eps)
    return _cache[key]