"""Raises an exception whose __str__ itself raises (and whose __repr__ raises too).
expect: error or crashed, with a one-line reason; never a hang
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


class Nasty(Exception):
    def __str__(self):
        raise RuntimeError("__str__ refuses")

    def __repr__(self):
        raise RuntimeError("__repr__ refuses")


def run(x, w, eps):
    raise Nasty()
