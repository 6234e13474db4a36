"""Replaces the timer classes' measure with one that reports a microsecond per call.
expect: failed
reason: replaced
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


from d2k.execution import timing


def _forged(self, call, n_sets, restore, probe=False, before=None, after=None):
    return {"method": "interpreter_wall", "samples_ms": [1e-3] * 4, "warmup_calls": 1, "input_sets": n_sets}


def run(x, w, eps):
    timing.WallTimer.measure = _forged
    timing.CudaTimer.measure = _forged
    return _rms(x, w, eps)