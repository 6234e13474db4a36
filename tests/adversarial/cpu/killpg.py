"""Kills its own process group (and so the process that runs it).
expect: crashed
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


import os
import signal


def run(x, w, eps):
    os.killpg(0, signal.SIGKILL)