"""numpy_pcg64_global_work_in_before.py (round 3, closed by capturing numpy's generator classes)
revived through another name the same captured classes look up at run time. `wire.perturb` builds
each tensor's generator with the captured `PCG64`, whose Cython __init__ (BitGenerator.__init__)
reads `RLock` from the globals of `numpy.random.bit_generator` at every call (and `np`,
`_coerce_to_uint32_array`, `_int_to_uint32_array` there, `np` in `numpy.random._pcg64` and in
`numpy.random._generator` for `integers`): none of these modules is protected or frozen. The
solution rebinds `numpy.random.bit_generator.RLock` to a function that returns a real RLock. It is
called inside the harness's perturbation of each timed call's inputs (before(), after the guard's
check, before the clock starts); when perturb asks for the last input's generator (x; w is final
by then), the function reads perturb's arguments from its frame (read only), applies the harness's
own perturb to a copy of the set (re-entry passes straight through), computes the output from the
final w and the copy of x and stashes it. The timed call returns the stash (matched by the input
tensor and its version counter). Right on every call.
Passed at 5-12x under the honest time on the CPU interpreter (session 21's held-out red team, on f4601d4);
after the fix it passes at its honest time: it gains nothing.
expect: passed
median_at_least_of_control: 0.3
"""
import sys

import numpy.random.bit_generator as _bg
import torch

from d2k.execution import wire as _wire

_RealRLock = _bg.RLock
_busy = [False]
_stash = {}


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _rlock_hook(*args, **kwargs):
    lock = _RealRLock(*args, **kwargs)
    if _busy[0]:
        return lock
    f = sys._getframe(1)
    while f is not None and f.f_code.co_name != "perturb":
        f = f.f_back
    if f is None:
        return lock
    loc = f.f_locals
    names, index, tensors = loc.get("names"), loc.get("index"), loc.get("tensors")
    if not names or index != len(names) - 1 or "x" not in tensors or "w" not in tensors:
        return lock
    _busy[0] = True
    try:
        copy = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in tensors.items()}
        _wire.perturb(copy, names, loc["seed"], loc["call"])
        x = tensors["x"]
        _stash[id(x)] = (x._version, _rms(copy["x"], tensors["w"], tensors["eps"]))
    finally:
        _busy[0] = False
    return lock


_bg.RLock = _rlock_hook


def run(x, w, eps):
    hit = _stash.pop(id(x), None)
    if hit is not None and x._version > hit[0]:  # perturbed since the stash was made
        return hit[1]
    return _rms(x, w, eps)
