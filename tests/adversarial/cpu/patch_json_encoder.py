"""The same forgery one level down: json.JSONEncoder.encode (a class attribute, so it reaches an
encoder the harness built before the solution was imported) is replaced, not json.dumps.
expect: failed
reason: replaced JSONEncoder.encode
"""
import json

import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


_encode = json.JSONEncoder.encode


def _quartered(self, obj):
    if isinstance(obj, dict) and isinstance(obj.get("timing"), dict):
        samples = obj["timing"].get("samples_ms")
        if isinstance(samples, list):
            obj["timing"]["samples_ms"] = [x / 4 for x in samples]
    return _encode(self, obj)


def run(x, w, eps):
    json.JSONEncoder.encode = _quartered
    return _rms(x, w, eps)
