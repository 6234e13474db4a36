"""Opens a profiler range named like the harness's own around its kernels, so that in span mode
they are credited to call 0 (on a GPU the profiled probe, no timed call) and the timed calls' spans hold
nothing. The device-span parser refuses a second or unknown d2k_call range. With the event window
(the default) the range changes nothing, and the file passes.
expect: passed
expect_span: failed
reason_span: d2k_call range
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def run(x, w, eps):
    with torch.profiler.record_function("d2k_call_0"):
        return _rms(x, w, eps)
