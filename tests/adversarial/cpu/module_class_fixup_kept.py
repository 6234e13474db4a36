"""fixup_kept.py revived through a module `__class__` swap (see module_class_swap.py): every timed
call returns zeros (no work, wrong). The harness's wire module gets a ModuleType subclass whose
`__getattribute__` hands after() a wrapped `recv`; the wrapper reads the trusted side's decision and,
only when the call is kept, computes the right output into the harness's copy (found in after()'s
frame) before outputs() packs it. Unkept timed calls stay all zeros; the checked ones are right.
The guard's getattr_static still finds the original `recv` in the module's dict.
Passed before 2026-12-05's second round, zeros on unchecked timed calls (CPU); the guard now checks
each protected owner's type.
expect: failed
reason: changed the type of
"""
import sys
import types

import torch

from d2k.execution import wire as _wire

_REAL = _wire.recv
WRONG = {"unkept_zero_calls": 0}


def _rmsnorm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _recv(*args, **kwargs):
    header, blobs = _REAL(*args, **kwargs)
    frame = sys._getframe(1)
    if frame.f_code.co_name == "after" and type(header) is dict and "keep" in header:
        loc = frame.f_locals
        if header["keep"]:
            loc["copies"].copy_(_rmsnorm(**loc["sets"][loc["i"]]))
        else:
            WRONG["unkept_zero_calls"] += 1
    return header, blobs


class _Wire(types.ModuleType):
    def __getattribute__(self, name):
        if name == "recv":
            return _recv
        return types.ModuleType.__getattribute__(self, name)


_wire.__class__ = _Wire


def run(x, w, eps):
    caller = sys._getframe(1)
    if caller.f_back is not None and caller.f_back.f_code.co_name == "measure":
        return torch.zeros_like(x)  # the warm-up (unchecked) or a timed call: no work, wrong
    return _rmsnorm(x, w, eps)
