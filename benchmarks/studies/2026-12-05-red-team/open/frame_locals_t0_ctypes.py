"""Does the work honestly, then rewrites the timing loop's local `t0` (WallTimer.measure's start
time, a plain float in a fast local) to "now", found through its callers' frames and written back
with ctypes' PyFrame_LocalsToFast, which CPython 3.11 and 3.12 export (SECURITY.md counts only
3.13's write-through f_locals as a way to rebind the loop's locals). No function is replaced and no
thread runs: every sample reads as the few microseconds from the rewrite to the return.
expect: failed
reason: TODO
"""
import ctypes
import sys
import time

import torch

_LOCALS_TO_FAST = ctypes.pythonapi.PyFrame_LocalsToFast
_LOCALS_TO_FAST.argtypes = [ctypes.py_object, ctypes.c_int]
_LOCALS_TO_FAST.restype = None


def _rmsnorm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def run(x, w, eps):
    y = _rmsnorm(x, w, eps)
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "measure" and "t0" in frame.f_code.co_varnames:
            loc = frame.f_locals  # a snapshot (FastToLocals)
            if "t0" in loc:
                loc["t0"] = time.perf_counter()
                _LOCALS_TO_FAST(frame, 0)
            break
        frame = frame.f_back
    return y
