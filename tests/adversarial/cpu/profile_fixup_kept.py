"""fixup_kept.py revived through sys.setprofile: every timed call returns garbage (an uninitialised
tensor, no work) and computes nothing, ever, unless the harness decides to keep that call. A
profile hook installed at import fires on the 'call' event of the harness's outputs() -- which the
timing loop calls only for a kept call, after the decision arrived and after the copy was taken,
"before any more of the solution's code runs" -- and overwrites the kept copy in place with the
right answer, computed from the call's own (perturbed) inputs found in the timing loop's frames.
Unkept timed calls stay wrong; the checked ones are right.
Passed before 2026-12-05, wrong on every unchecked timed call (CPU); sys.setprofile now refuses a
solution.
expect: failed
reason: is not available to a solution
"""
import sys

import torch

STATS = {"garbage": 0, "fixed": 0}


def _compute(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _hook(frame, event, arg):
    if event != "call" or frame.f_code.co_name != "outputs":
        return
    after = frame.f_back
    if after is None or after.f_code.co_name != "after":
        return
    loc = after.f_locals            # after(i, j, result): `sets` is one of its free variables
    args = loc["sets"][loc["i"]]    # the inputs call j ran on (perturbed in place before it)
    frame.f_locals["result"].copy_(_compute(args["x"], args["w"], args["eps"]))
    STATS["fixed"] += 1


sys.setprofile(_hook)


def run(x, w, eps):
    caller = sys._getframe(1)
    if caller.f_code.co_name == "call" and caller.f_back is not None and caller.f_back.f_code.co_name == "measure":
        STATS["garbage"] += 1
        return torch.full_like(x, 1234.0)  # wrong on every timed call
    return _compute(x, w, eps)
