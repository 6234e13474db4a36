"""Leaves a torch dispatch mode active for the whole process, which the guard is meant to refuse
("a torch function or dispatch mode left active would see every tensor operation of the harness"):
its check asks `torch._C._len_torch_function_stack()` and `torch._C._len_torch_dispatch_stack()`,
two names it looks up on torch._C at every check and that nobody protects. The solution replaces
both with `lambda: 0` and enters a TorchDispatchMode at import without leaving it. The timing loop's
after() copies each output with the C `TensorBase.clone` under DisableTorchFunction, which does not
disable dispatch modes: the mode's __torch_dispatch__ sees the aten.clone of the timed call's
output (after the stop time was read, before the copy) and computes the right result into it
first. Inside the timing loop run() returns an uninitialised tensor (made with the mode switched off
by the C guard torch._C._DisableTorchDispatch, so the window holds no Python dispatch). Right on
every call (calls outside the timing loop compute honestly).
Passed on cc9058f (round 3 of the 2026-12-05 red team, held out: nothing was tuned on it before);
the mode check's functions are now captured.
expect: failed
reason: dispatch mode active
"""
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_pending = {}


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


class _Mode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.ops.aten.clone.default and args:
            job = _pending.pop(id(args[0]), None)
            if job is not None and job[0] is args[0]:
                job[0].copy_(_rms(*job[1:]))
        return func(*args, **kwargs)


torch._C._len_torch_function_stack = lambda: 0
torch._C._len_torch_dispatch_stack = lambda: 0
_mode = _Mode()
_mode.__enter__()


def run(x, w, eps):
    with torch._C._DisableTorchDispatch():
        if sys._getframe(2).f_code.co_name == "measure":
            out = torch.empty_like(x)
            _pending.clear()
            _pending[id(out)] = (out, x, w, eps)
            return out
        return _rms(x, w, eps)
