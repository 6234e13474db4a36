"""Makes every CUDA event pair report a microsecond.
expect: failed
reason: replaced Event.elapsed_time
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def run(x, w, eps):
    torch.cuda.Event.elapsed_time = lambda self, end: 1e-3
    return _rms(x, w, eps)
