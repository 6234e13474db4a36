"""numpy_rng_hook_work_in_before.py revived one level down. wire.perturb now calls only functions
captured before the import, among them `numpy.random.default_rng`; but that captured function is
Cython code that looks up `PCG64` in its own module's globals (numpy.random._generator) every
time it builds a generator, and nothing protects that module. The solution rebinds
`numpy.random._generator.PCG64` to a class of its own that returns the real bit generator. It is
called inside the harness's perturbation of each timed call's inputs (before(), after the guard's
check, before the clock starts), with the frame of wire.perturb one level up: when perturb asks for
the last input's generator (x; w is final by then), the solution applies the harness's own
perturb to a copy of the set (re-entry passes straight through), computes the output from the
final w and the copy of x, and stashes it. The timed call returns the stash (matched by the input
tensor and its version counter). Right on every call.
expect: failed
reason: TODO
"""
import sys

import numpy.random._generator as _gen
import torch

from d2k.execution import wire as _wire

_RealPCG64 = _gen.PCG64
_busy = [False]
_stash = {}


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


class _PCG64Hook:
    def __new__(cls, seed=None, *args, **kwargs):
        bitgen = _RealPCG64(seed, *args, **kwargs)
        if _busy[0]:
            return bitgen
        f = sys._getframe(1)
        while f is not None and f.f_code.co_name != "perturb":
            f = f.f_back
        if f is None:
            return bitgen
        loc = f.f_locals
        names, index, tensors = loc.get("names"), loc.get("index"), loc.get("tensors")
        if not names or index != len(names) - 1 or "x" not in tensors or "w" not in tensors:
            return bitgen
        _busy[0] = True
        try:
            copy = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in tensors.items()}
            _wire.perturb(copy, names, loc["seed"], loc["call"])
            x = tensors["x"]
            _stash[id(x)] = (x._version, _rms(copy["x"], tensors["w"], tensors["eps"]))
        finally:
            _busy[0] = False
        return bitgen


_gen.PCG64 = _PCG64Hook


def run(x, w, eps):
    hit = _stash.pop(id(x), None)
    if hit is not None and x._version > hit[0]:  # perturbed since the stash was made
        return hit[1]
    return _rms(x, w, eps)
