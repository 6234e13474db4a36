"""Caches results keyed by a few elements of each input: stale whenever other elements changed.
expect: failed
reason: outside tolerance
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


_cache = {}


def run(x, w, eps):
    key = (tuple(x.reshape(-1)[:4].tolist()), tuple(x.reshape(-1)[-4:].tolist()), tuple(w[:4].tolist()), x.shape)
    if key not in _cache:
        _cache[key] = _rms(x, w, eps)
    return _cache[key].clone()