"""Reassigns the `__class__` of the harness's wire module to a ModuleType subclass with a
`__getattribute__` of the solution's. The guard compares `wire.perturb` through
`inspect.getattr_static`, which never runs `__getattribute__` and still finds the original function
in the module's dict, so nothing looks changed; but the timing loop's `wire.perturb(...)` in
before() is an ordinary attribute lookup and gets the solution's wrapper: it runs the real
perturbation, then computes the output on the now-final inputs and stashes it, before the clock
starts. The timed call returns the stash. Right on every call.
Passed before 2026-12-05's second round at about 18x under the honest time (CPU); the guard now
checks each protected owner's type and finds attributes without running Python code.
expect: failed
reason: changed the type of
"""
import types

import torch

from d2k.execution import wire as _wire

_STASH = {}
_REAL = _wire.perturb


def _rmsnorm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _perturb(tensors, names, seed, call):
    _REAL(tensors, names, seed, call)
    if "x" in tensors and "w" in tensors and "eps" in tensors:
        _STASH[id(tensors["x"])] = _rmsnorm(tensors["x"], tensors["w"], tensors["eps"])


class _Wire(types.ModuleType):
    def __getattribute__(self, name):
        if name == "perturb":
            return _perturb
        return types.ModuleType.__getattribute__(self, name)


_wire.__class__ = _Wire


def run(x, w, eps):
    hit = _STASH.pop(id(x), None)
    if hit is not None:
        return hit
    return _rmsnorm(x, w, eps)
