"""Rewrites its own timing on the way out: json.dumps, which encodes every reply header, is
replaced by one that divides each reported per-call time by four (before the reply path was
guarded, this passed with a time four times too short).
expect: failed
reason: replaced json.dumps
"""
import json

import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


_dumps = json.dumps


def _quartered(obj, *args, **kwargs):
    if isinstance(obj, dict) and isinstance(obj.get("timing"), dict):
        for key in ("samples_ms", "span_samples_ms", "kernel_sum_ms"):
            if isinstance(obj["timing"].get(key), list):
                obj["timing"][key] = [x / 4 for x in obj["timing"][key]]
    return _dumps(obj, *args, **kwargs)


def run(x, w, eps):
    json.dumps = _quartered
    return _rms(x, w, eps)
