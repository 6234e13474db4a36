"""Is right only when a checker is on the call stack; otherwise returns garbage.
expect: failed
reason: outside tolerance
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


import inspect


def run(x, w, eps):
    names = {f.function for f in inspect.stack()}
    if names & {"check", "compare", "compare_tensor", "cache_probe", "run_candidate"}:
        return _rms(x, w, eps)
    return _rms(x, w, eps) * -1