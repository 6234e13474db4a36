"""Garbage on timed calls (fast), right on checked ones, and right again for the timed calls the
harness keeps: it replaces torch.Tensor.clone so that, when the timing loop copies a kept call's
output, the copy is the correct result computed from the call's own inputs.
expect: failed
reason: replaced Tensor.clone
"""
import inspect

import torch

_real_clone = torch.Tensor.clone
_last_args = {}


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _clone(self, *args, **kwargs):
    if _last_args and any(f.function == "after" for f in inspect.stack()[1:4]):
        return _rms(*_last_args["xwe"])
    return _real_clone(self, *args, **kwargs)


torch.Tensor.clone = _clone


def run(x, w, eps):
    timed = any(f.function in ("time", "measure") for f in inspect.stack())
    if not timed:
        return _rms(x, w, eps)
    _last_args["xwe"] = (x, w, eps)
    return torch.zeros_like(x)
