"""Caches results by tensor identity and version counter: the harness changes values between timed
calls in place, which bumps the version, so the cache never serves a stale result (neutralised).
expect: passed
median_at_least_of_control: 0.3
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


_cache = {}


def run(x, w, eps):
    key = (id(x), x._version, id(w), w._version)
    if key not in _cache:
        _cache.clear()
        _cache[key] = _rms(x, w, eps)
    return _cache[key]