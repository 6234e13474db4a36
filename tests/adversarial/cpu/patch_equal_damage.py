"""Makes torch.equal always true, then zeroes its input after computing a right result.
expect: failed
reason: modified input x
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w



def run(x, w, eps):
    torch.equal = lambda a, b: True
    y = _rms(x, w, eps)
    x.zero_()
    return y