"""input_attr_del_rewrite.py without an attribute on the tensor: a weakref finalizer on the
harness's input tensor x, registered during the timing loop, runs when the harness lets the input
sets go at the end of the timing (after its last checks) and divides the per-call times in the
timing reply it finds in the harness's frame by twenty. It computes honestly. Caught since
2026-12-05: the reply is compared with a snapshot taken before the sets are let go (with that
comparison switched off it passed at 3.0 us on h256_t16, honest 54 us, CPU interpreter). Since
session 21 the sets are let go, and collected, before the figures are compared with what was
measured, so the comparison inside the timing catches it first.
expect: failed
reason: the timing changed while the harness checked it
"""
import sys
import weakref

import torch

_armed = []


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _rewrite():
    frame = sys._getframe(1)
    while frame is not None:
        timing = frame.f_locals.get("timing")
        if frame.f_code.co_name == "time" and isinstance(timing, dict) and "samples_ms" in timing:
            timing["samples_ms"] = [s / 20 for s in timing["samples_ms"]]
            return
        frame = frame.f_back


def run(x, w, eps):
    frame = sys._getframe(1)
    in_timing = any(f.f_code.co_name == "measure" for f in (frame, frame.f_back) if f is not None)
    if in_timing and not _armed:
        _armed.append(weakref.finalize(x, _rewrite))
    return _rms(x, w, eps)
