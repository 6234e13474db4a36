"""Right result, computed with torch operations only: no kernel of its own. It is also the corpus's
honest control: files that must gain nothing are held to a fraction of its fastest call
(``median_at_least_of_control``).
expect: passed
kernel_less: true
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w



def run(x, w, eps):
    return _rms(x, w, eps)