"""Finds tolerance dictionaries through gc and loosens them, then returns a wrong result.
expect: failed
reason: outside tolerance
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


import gc


def run(x, w, eps):
    for obj in gc.get_objects():
        if isinstance(obj, dict) and "atol" in obj and "rtol" in obj:
            obj["atol"] = obj["rtol"] = 1e9
            obj["matched_ratio"] = 0.0
    return _rms(x, w, eps) + 3.0