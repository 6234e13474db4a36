"""Kills its own process group. Inside a pid namespace the candidate is the namespace's init and
the signal does nothing (it then returns nothing and fails); without one it dies (crashed).
expect: failed|crashed
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


import os
import signal


def run(x, w, eps):
    os.killpg(0, signal.SIGKILL)