"""audit_defer_work.py revived: hooks.py replaces sys.addaudithook (and setprofile, settrace) with
refusals on the `sys` module, but `_imp.create_builtin(spec("sys"))` re-runs the single-phase
module's init copy: it updates sys.__dict__ from the copy CPython took at startup, putting every
original function back. The solution takes the original addaudithook from there and puts the
module's dict back as it was (the guard sees its refusals again), then adds an audit hook, which no
check can list. Timed calls return an uninitialised tensor at once; the hook fires on the thread
watch's sys._current_frames() in after(), right after the harness copied the output, finds the copy
in after()'s frame and computes the right result into it, outside the window.
Passed before 2026-12-05's second round at about 5x under the honest time (CPU); the harness's
audit hook now keeps any later one from being added, so its timed calls return empty tensors.
expect: failed
expect_gpu: passed
(On the GPU its timed-call test, a caller called from `measure`, never holds (the CUDA timer's
`one` calls it), so it computes every call honestly: H200, 2026-12-05. It tests the interpreter's path only.)
reason: timed call
"""
import _imp
import importlib.machinery
import sys

import torch


def _compute(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _original(name):
    snapshot = dict(vars(sys))
    _imp.create_builtin(importlib.machinery.ModuleSpec("sys", None))
    original = getattr(sys, name)
    vars(sys).update(snapshot)  # the refusals back in place, as the guard recorded them
    return original


def _hook(event, args):
    if event != "sys._current_frames":
        return
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != "after":
        frame = frame.f_back
    if frame is None:
        return
    loc = frame.f_locals
    copies, sets, i = loc.get("copies"), loc.get("sets"), loc.get("i")
    if type(copies) is torch.Tensor and sets is not None:
        copies.copy_(_compute(**sets[i]))


_original("addaudithook")(_hook)


def run(x, w, eps):
    caller = sys._getframe(1)
    if caller.f_back is not None and caller.f_back.f_code.co_name == "measure":
        return torch.empty_like(x)  # the warm-up (never checked) or a timed call: the hook fills in the harness's copy afterwards
    return _compute(x, w, eps)
