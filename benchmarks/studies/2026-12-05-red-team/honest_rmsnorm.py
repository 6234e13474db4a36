"""rmsnorm in torch, nothing else: the honest figure the attacks' forged ones are set against."""
import torch


def run(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
