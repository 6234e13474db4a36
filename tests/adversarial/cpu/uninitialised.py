"""Returns an uninitialised output (torch.empty_like) without computing anything.
expect: failed
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w



def run(x, w, eps):
    return torch.empty_like(x)