"""Prints 40 MB without a newline before a right result: the harness keeps a bounded tail.
expect: passed
median_at_least_of_control: 0.3
output_bytes_at_least: 40000000
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


import sys


def run(x, w, eps):
    sys.stdout.write("x" * 40_000_000)
    sys.stdout.flush()
    return _rms(x, w, eps)