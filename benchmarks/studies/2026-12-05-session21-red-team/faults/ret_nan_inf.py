"""Returns all-NaN (H=256) and all-inf (H=100) outputs of the right shape and dtype.
expect: failed on both (outside tolerance / non-finite)
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def run(x, w, eps):
    if x.shape[1] == 256:
        return torch.full_like(x, float("nan"))
    return torch.full_like(x, float("inf"))
