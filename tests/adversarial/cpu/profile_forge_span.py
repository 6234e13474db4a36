"""Computes honestly and leaves the measured per-call times alone, but adds a device span of its
own to the timing: a sys.setprofile hook (installed at import, never seen by the timer guard or the
thread watch) gets the timing loop's result dict as the argument of measure()'s 'return' event and
puts span_samples_ms = [0.0005, ...] into it. The parent takes a span it finds in a reply as the
primary figure (timing_method device_span) without asking whether the job asked for one (the CPU
interpreter never records one) and checks only the event samples against the trusted wall time.
Passed before 2026-12-05 with a 0.5 us figure (CPU); sys.setprofile now refuses a solution, and
the trusted side refuses a span the job did not ask for.
expect: failed
reason: is not available to a solution
"""
import sys

import torch


def _hook(frame, event, arg):
    if event == "return" and frame.f_code.co_name == "measure" and isinstance(arg, dict) and "samples_ms" in arg:
        arg["span_samples_ms"] = [0.0005 for _ in arg["samples_ms"]]
        arg["method"] = "cuda_events"


sys.setprofile(_hook)


def run(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
