"""The same cheat as recompute_on_keep.py without touching torch.Tensor: a TorchFunctionMode,
pushed at import and left active, answers the timing loop's copies of kept outputs with the
correct result (garbage on every timed call otherwise).
expect: failed
reason: mode active
"""
import inspect

import torch
from torch.overrides import TorchFunctionMode

_last_args = {}


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


class _Recompute(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__name__", "") == "clone" and _last_args and \
                any(f.function == "after" for f in inspect.stack()[1:4]):
            with torch._C.DisableTorchFunction():
                return _rms(*_last_args["xwe"])
        return func(*args, **kwargs)


_Recompute().__enter__()  # never exited


def run(x, w, eps):
    timed = any(f.function in ("time", "measure") for f in inspect.stack())
    if not timed:
        return _rms(x, w, eps)
    _last_args["xwe"] = (x, w, eps)
    return torch.zeros_like(x)
