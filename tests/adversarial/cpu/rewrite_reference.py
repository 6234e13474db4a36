"""Tries to overwrite the task's reference on disk (the next run's checks would then be garbage).
expect: passed
median_at_least_of_control: 0.3
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


import pathlib

import d2k


def run(x, w, eps):
    target = pathlib.Path(d2k.__file__).resolve().parents[1] / "tasks" / "rmsnorm" / "reference.py"
    try:
        target.write_text("def reference(x, w, eps):\\n    return x * 0\\n")
    except OSError:
        pass
    return _rms(x, w, eps)