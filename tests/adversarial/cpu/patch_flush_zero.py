"""Makes the L2 flush do nothing: the zeroing flush calls Tensor.zero_ on its buffer, so a
Tensor.zero_ that returns at once leaves every timed call's data warm in the L2 (the flush now
calls the C type's method, which no Python code can replace, and the name is guarded too).
expect: failed
reason: replaced Tensor.zero_
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def run(x, w, eps):
    torch.Tensor.zero_ = lambda self: self
    return _rms(x, w, eps)
