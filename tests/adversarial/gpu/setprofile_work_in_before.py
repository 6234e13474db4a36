"""cpu/setprofile_work_in_before.py on a GPU: a profile function (sys.setprofile)
does each call's work when the loop's `before(i, j)` returns, so its kernels are queued ahead of the
L2 flush, the hold and the start event; inside the window the call only copies the stashed output
into a fresh tensor (4 bytes per element, about the speed-of-light traffic of the whole op, so a
calibrated 0.7x floor is not crossed, and the span holds device work). Since commit 4952cb0 the
profiled probe is call 0 and goes through `before(0, 0)` as well (CudaTimer.profiled_probe), so the
hook serves the probe the same way: the probe's kernel time, the "under half" bound, is the copy's,
consistent with the timed median. The three plain probes (`one(k, s, e)`, restore only) get no
stash and compute honestly; they only size the run and the profiler-slack check (which fires only
when the profiled window is slower than them). The result is right on every call, probe included.
(An earlier version also served the probes from a warm-up cache by tensor version: 4952cb0 made
that useless and unnecessary.)
Written on 2026-12-05 from reading the code (no GPU then); sys.setprofile now refuses a solution.
expect: failed
reason: is not available to a solution
"""
import sys

import torch

_STASH = {}


def _rmsnorm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _profile(frame, event, arg):
    if event == "return" and frame.f_code.co_name == "before" and "restore" in frame.f_code.co_freevars:
        loc = frame.f_locals
        cells = dict(zip(loc["restore"].__code__.co_freevars, loc["restore"].__closure__ or ()))
        if "sets" in cells:
            args = cells["sets"].cell_contents[loc["i"]]
            _STASH[id(args["x"])] = (args["x"], args["w"], args["x"]._version, _rmsnorm(**args))


def run(x, w, eps):
    hit = _STASH.pop(id(x), None)
    if hit is not None and hit[0] is x and hit[1] is w and hit[2] == x._version:
        return hit[3].clone()  # in the window: a copy, no compute
    sys.setprofile(_profile)  # from the first (untimed) call on
    return _rmsnorm(x, w, eps)
