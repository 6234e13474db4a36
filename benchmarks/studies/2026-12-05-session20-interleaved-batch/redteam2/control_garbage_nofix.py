"""Control for sysmodules_torch_fixup_kept.py: the same garbage from every timed call, no fix-up.
Must fail (the kept calls are compared)."""
import sys

import torch


def _in_timing_loop():
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "measure":
            return True
        frame = frame.f_back
    return False


def run(x, w, eps):
    if _in_timing_loop():
        return torch.empty_like(x)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
