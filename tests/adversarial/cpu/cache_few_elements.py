"""Caches results keyed by a summary of each input that the perturbation keeps: its sum (a row's
values are only moved within the row). The cached result is stale on every timed call. (Its first
version keyed on the first and last four elements; since the rotation moves those on every call,
that version recomputed each time and passed honestly.)
expect: failed
reason: outside tolerance
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


_cache = {}


def run(x, w, eps):
    key = (float(x.double().sum()), float(w.double().sum()), x.shape)
    if key not in _cache:
        _cache[key] = _rms(x, w, eps)
    return _cache[key].clone()