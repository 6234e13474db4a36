"""Makes every tensor comparison true (Tensor.__gt__, __le__, torch.allclose), then returns a wrong result.
expect: failed
reason: outside tolerance
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w



def run(x, w, eps):
    torch.Tensor.__gt__ = lambda a, b: torch.zeros(a.shape, dtype=torch.bool)
    torch.Tensor.__le__ = lambda a, b: torch.ones(a.shape, dtype=torch.bool)
    torch.allclose = lambda *a, **k: True
    return _rms(x, w, eps) * 1.5