"""profile_defer_work.py without sys.setprofile: an audit hook (sys.addaudithook, which cannot be
removed once added, and which the guard does not look for) runs the solution's code whenever the
harness raises an audit event. The thread watch's own sys._current_frames() raises one, and the
timing loop's after() calls the thread watch right after it copies a timed call's output and
before it announces the call. Timed calls return an uninitialised tensor at once; the hook finds
that copy in after()'s frame and computes the right result into it, outside the timed window.
Passed before 2026-12-05 (CPU); sys.addaudithook now adds nothing in a candidate
(d2k/execution/hooks.py: quietly since the H200 showed libraries adding hooks at import), so its
timed calls return uninitialised tensors.
On the CUDA path (session 23, an H100) it passed: its role test names the interpreter loop's
frames (`call` called from `measure`), and the CUDA loop calls from `one`, so every GPU call
computes honestly, and the hook has nothing to fix.
expect_gpu: passed
expect: failed
reason: timed call
"""
import sys

import torch


def _compute(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _audit(event, args):
    if event != "sys._current_frames":
        return
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != "after":
        frame = frame.f_back
    if frame is None:
        return
    loc = frame.f_locals
    if "copies" in loc:
        inputs = loc["sets"][loc["i"]]
        loc["copies"].copy_(_compute(inputs["x"], inputs["w"], inputs["eps"]))


sys.addaudithook(_audit)


def run(x, w, eps):
    caller = sys._getframe(1)
    if caller.f_code.co_name == "call" and caller.f_back is not None and caller.f_back.f_code.co_name == "measure":
        return torch.empty_like(x)
    return _compute(x, w, eps)
