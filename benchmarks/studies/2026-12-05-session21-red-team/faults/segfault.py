"""Dereferences NULL through ctypes in run(): SIGSEGV in the candidate.
expect: crashed (killed by SIGSEGV)
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w

import ctypes


def run(x, w, eps):
    ctypes.string_at(0)
    return _rms(x, w, eps)
