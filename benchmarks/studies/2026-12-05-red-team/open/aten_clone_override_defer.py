"""Moves each timed call's work after its window through the dispatcher, not through any Python
name, mode, hook or thread: at import the solution registers, with torch.library, its own kernel
for `aten::clone` under the AutogradCPU dispatch key (it forwards to the original below autograd).
The timing loop's after() copies each timed call's output with the C method
`torch._C.TensorBase.clone` under DisableTorchFunction, which the guard counts as code no solution
can reach; but the C method goes through the dispatcher, which calls the solution's kernel. Inside
the timing loop, run() returns an uninitialised tensor at once and notes its inputs; the clone
kernel, called by after() once the stop time is read and before the copy is taken, computes the
right result into that tensor first. Every output the trusted side sees is right (calls outside
the timing loop compute honestly).
expect: failed
reason: TODO
"""
import sys

import torch

_pending = {}
_busy = [False]


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _clone(t, memory_format=None):
    with torch._C._AutoDispatchBelowAutograd():
        if not _busy[0]:
            job = _pending.pop(id(t), None)
            if job is not None and job[0] is t:
                _busy[0] = True
                try:
                    t.copy_(_rms(*job[1:]))
                finally:
                    _busy[0] = False
        return torch.ops.aten.clone.default(t, memory_format=memory_format)


_lib = torch.library.Library("aten", "IMPL")
_lib.impl("clone", _clone, "AutogradCPU")


def run(x, w, eps):
    caller = sys._getframe(2)
    if caller.f_code.co_name == "measure":
        out = torch.empty_like(x)
        _pending.clear()
        _pending[id(out)] = (out, x, w, eps)
        return out
    return _rms(x, w, eps)
