"""restart_window with a cache for the probe: a call whose inputs are unchanged since a call it has
seen (same storage, same version counter) returns that call's output without computing; every other
call does slow work (forty passes) and then re-records the window's start event after its kernels.
When the profiled probe ran on the warm-up's inputs (before 2026-12-05), it was served from the
cache, so the probe's kernel time, the bound the timed median is held against, was almost nothing
and the emptied windows passed in events mode. The probe is now perturbed by its own seed and
always checked: it computes honestly, and the emptied windows fall under half its kernel time.
expect: timing_suspect
reason: under half
expect_span: timing_suspect
"""
import sys

import torch

_seen: dict = {}


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def run(x, w, eps):
    # the address and version counter alone matched a freed earlier input at the same address in
    # the first correctness trial (H200, 2026-12-05): a few values tell them apart
    key = (x.data_ptr(), x._version, w.data_ptr(), w._version, x.shape, float(x.reshape(-1)[:1024].float().sum()))
    if key in _seen:
        return _seen[key]
    y = _rms(x, w, eps)
    for _ in range(40):
        y = _rms(x, w, eps)
    _seen[key] = y
    frame = sys._getframe(1)
    while frame is not None:
        start = frame.f_locals.get("start")
        if frame.f_code.co_name == "one" and hasattr(start, "record"):
            start.record()
            break
        frame = frame.f_back
    return y
