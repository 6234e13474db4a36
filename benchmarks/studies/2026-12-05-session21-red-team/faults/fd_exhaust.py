"""Opens file descriptors up to its limit at import (keeps them), then returns right results: the
harness's own later needs (pipes, memfds, imports) find none free.
expect: error/crashed with a clear reason, or passed; never a hang
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w

import os

HELD = []
try:
    while True:
        HELD.append(os.open("/dev/null", os.O_RDONLY))
except OSError:
    pass


def run(x, w, eps):
    return _rms(x, w, eps)
