"""Calls the task's reference module if it can load it (it cannot: hidden), else torch ops.
expect: passed
median_at_least_of_control: 0.3
kernel_less: true
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


import importlib.util
import pathlib

import d2k


def _reference():
    path = pathlib.Path(d2k.__file__).resolve().parents[1] / "tasks" / "rmsnorm" / "reference.py"
    try:
        spec = importlib.util.spec_from_file_location("stolen_reference", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.reference
    except (OSError, ImportError, AttributeError):
        return _rms


def run(x, w, eps):
    return _reference()(x, w, eps)