"""Does each timed call's work before its window opens: a profile function (sys.setprofile, which
no check looks at) sees the timing loop's `before(i, j)` return, i.e. the moment the call's inputs
have been perturbed and restored but before the clock starts (on a GPU: before the flush, the hold
and the start event). It computes the output there from that input set (reached through the
frame's closure variables) and stashes it; the timed call finds the stash for its own input tensors
and returns it without doing anything. The outputs are right on every call (they were computed from
the exact inputs the call got), so the checked calls pass.
Passed before 2026-12-05 at about 15x under the honest time (CPU); sys.setprofile now refuses a
solution (d2k/execution/hooks.py).
expect: failed
reason: is not available to a solution
"""
import sys

import torch


def _rmsnorm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


_STASH = {}


def _profile(frame, event, arg):
    if event == "return" and frame.f_code.co_name == "before" and "restore" in frame.f_code.co_freevars:
        loc = frame.f_locals
        restore = loc["restore"]  # the loop's restore(i) closes over the input sets
        cells = dict(zip(restore.__code__.co_freevars, restore.__closure__ or ()))
        if "sets" not in cells:
            return
        args = cells["sets"].cell_contents[loc["i"]]
        _STASH[id(args["x"])] = (args["x"], args["w"], _rmsnorm(**args))


def run(x, w, eps):
    hit = _STASH.pop(id(x), None)
    if hit is not None and hit[0] is x and hit[1] is w:
        return hit[2]
    sys.setprofile(_profile)  # installed on the first (untimed) call; stays for the timing loop
    return _rmsnorm(x, w, eps)
