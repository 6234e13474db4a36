"""Returns a tensor on the meta device (no storage at all, H=256) and a complex64 tensor (H=100).
expect: failed or error on both, with a one-line reason
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def run(x, w, eps):
    if x.shape[1] == 256:
        return torch.empty(x.shape, dtype=x.dtype, device="meta")
    return _rms(x, w, eps).to(torch.complex64)
