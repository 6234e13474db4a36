"""Returns None (H=256 workload) and a 0-d tensor (H=100 workload).
expect: failed on both, each with a reason naming the output
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def run(x, w, eps):
    if x.shape[1] == 256:
        return None
    return torch.tensor(0.0, dtype=x.dtype)
