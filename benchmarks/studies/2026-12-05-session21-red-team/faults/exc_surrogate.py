"""Raises a ValueError whose message holds a lone surrogate (not encodable as UTF-8), as text
decoded with errors='surrogateescape' from a non-UTF-8 byte string does.
expect: error (reason 'ValueError: ...' stored, the store and results.jsonl intact)
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def run(x, w, eps):
    raise ValueError(b"bad byte \xff here".decode("utf-8", "surrogateescape"))
