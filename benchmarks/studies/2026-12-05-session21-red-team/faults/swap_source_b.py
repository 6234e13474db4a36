"""The source that actually runs in the swap test (honest rmsnorm); see swap_source_a.py.
expect: passed (when run on its own)
"""
import torch


def run(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w  # SOURCE-B
