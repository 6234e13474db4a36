"""Does slow work (forty passes where one would do), then finds the timing loop's start event in
the caller's frames and records it again, after its kernels: the event window then holds almost
nothing. No function is replaced. The trusted side compares the timed median with the kernel time
the profiler's probe measured for one call (call 0, perturbed and checked; it runs in no window, so the file cannot
find an event to move there) and, in span mode, the event window with the device span, which the
event does not move (the span stays the honest figure).
expect: timing_suspect
reason: under half
expect_span: timing_suspect
reason_span: longer than the event window|under half
(In span mode its forty eager passes can make the profiler slow the call; it is then timed
without the profiler, and the probe check catches the emptied window: H200, 2026-12-05.)
"""
import sys

import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def run(x, w, eps):
    y = _rms(x, w, eps)
    for _ in range(40):
        y = _rms(x, w, eps)
    frame = sys._getframe(1)
    while frame is not None:
        start = frame.f_locals.get("start")
        if frame.f_code.co_name == "one" and hasattr(start, "record"):
            start.record()
            break
        frame = frame.f_back
    return y
