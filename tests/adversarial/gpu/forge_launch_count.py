"""Does its work in torch alone (no kernel of its own) and raises the candidate's count of Triton
launches, which is how the interpreter tells a kernel-less solution. On a GPU the profiler's
kernel names decide, so it is still flagged kernel-less there. (Under the interpreter the count is
all there is: SECURITY.md says so.)
expect: passed
kernel_less: true
"""
import torch

from d2k.execution import candidate


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def run(x, w, eps):
    candidate.LAUNCHES["triton"] += 1
    return _rms(x, w, eps)
