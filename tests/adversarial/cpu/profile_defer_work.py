"""Moves all of its work out of the timed window with sys.setprofile (not a thread, not a patched
function: the timer guard and the thread watch see nothing). Inside the timing loop, run() only
allocates the output and returns it; a profile hook installed at import fires on the Python 'call'
event of the harness's own after() (which runs once the call's stop time has been read and before
the output is copied for checking) and computes the right result into that output in place. Every
output, timed or checked, is right; the timed window holds an allocation only. (On a GPU the same
hook launches the kernels after the end event is recorded.)
Passed before 2026-12-05 at about 6x under the honest time (CPU); sys.setprofile now refuses a
solution (d2k/execution/hooks.py).
expect: failed
reason: is not available to a solution
"""
import sys

import torch

_PENDING = []


def _compute(x, w, eps, out=None):
    xf = x.float()
    y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
    if out is not None:
        out.copy_(y)
        return out
    return y


def _hook(frame, event, arg):
    if event == "call" and _PENDING and frame.f_code.co_name == "after":
        x, w, eps, out = _PENDING.pop()
        _compute(x, w, eps, out)


sys.setprofile(_hook)


def run(x, w, eps):
    caller = sys._getframe(1)
    if caller.f_code.co_name == "call" and caller.f_back is not None and caller.f_back.f_code.co_name == "measure":
        out = torch.empty_like(x)
        _PENDING[:] = [(x, w, eps, out)]
        return out
    return _compute(x, w, eps)
