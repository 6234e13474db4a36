"""Leaves a detached daemon behind (setsid, double fork) that would outlive d2k.
expect: failed
reason: all 4096 elements are zero
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


import os
import subprocess
import sys

MARKER = "d2k-adversarial-daemon-7f3a9c"
if os.fork() == 0:
    os.setsid()
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", MARKER], start_new_session=True,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os._exit(0)


def run(x, w, eps):
    return torch.zeros_like(x)