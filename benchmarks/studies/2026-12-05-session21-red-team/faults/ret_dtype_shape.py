"""Returns the right values in float64 (H=256) and the right values transposed, shape [H, T]
(H=100).
expect: failed on both (dtype, shape)
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def run(x, w, eps):
    if x.shape[1] == 256:
        return _rms(x, w, eps).double()
    return _rms(x, w, eps).t().contiguous()
