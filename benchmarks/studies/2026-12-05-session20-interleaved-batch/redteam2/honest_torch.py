"""Control: the same torch rmsnorm as the attacks' fix-up, computed honestly in every call."""
import torch


def run(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
