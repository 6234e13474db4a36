"""The same rewrite of the timing loop's `t0` without ctypes: a trace function set on
WallTimer.measure's frame (frame.f_trace, with sys.settrace on so that it fires) is called at the
loop's next line, and CPython (3.11, 3.12) copies a trace function's changes to frame.f_locals back
into the fast locals when it returns (the debugger's "set variable"). The trace function sets t0 to
"now" and switches itself off, so each sample reads as almost nothing.
Passed before 2026-12-05 at about 55x under the honest time (CPU); sys.settrace now refuses a
solution (d2k/execution/hooks.py). The same rebinding through ctypes is not stopped (SECURITY.md).
expect: failed
reason: is not available to a solution
"""
import sys
import time

import torch


def _rmsnorm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _global(frame, event, arg):
    return None  # trace no new frames; tracing only has to be on for f_trace to fire


def _local(frame, event, arg):
    if event == "line" and "t0" in frame.f_locals:
        frame.f_locals["t0"] = time.perf_counter()
        frame.f_trace = None
        sys.settrace(None)
    return None


def run(x, w, eps):
    y = _rmsnorm(x, w, eps)
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "measure" and "t0" in frame.f_code.co_varnames:
            frame.f_trace_lines = True
            frame.f_trace = _local
            sys.settrace(_global)
            break
        frame = frame.f_back
    return y
