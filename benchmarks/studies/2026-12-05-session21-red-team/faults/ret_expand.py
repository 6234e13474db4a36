"""Returns a zero-strided view announcing 2**31 x 2**31 elements (H=256; materialising it needs
8 EiB), and the right result as a sparse COO tensor (H=100).
expect: failed or error on both, with a one-line reason, no hang
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def run(x, w, eps):
    if x.shape[1] == 256:
        return torch.zeros(1, 1, dtype=x.dtype).expand(2**31, 2**31)
    return _rms(x, w, eps).to_sparse()
