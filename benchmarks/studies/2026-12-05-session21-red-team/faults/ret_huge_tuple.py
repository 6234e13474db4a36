"""Returns a tuple of a million small tensors (H=256) and a 2-tuple of right outputs (H=100).
expect: failed on both (wrong number of outputs), quickly, no memory blow-up in the worker
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def run(x, w, eps):
    if x.shape[1] == 256:
        y = _rms(x, w, eps)
        return tuple(y[:1, :1] for _ in range(1_000_000))
    y = _rms(x, w, eps)
    return (y, y)
