"""Closes the candidate's reply pipe (its fd number is in sys.argv) inside its first call, then
returns a right result: the harness cannot answer.
expect: crashed (or error), quickly, the next workload in a fresh process
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w

import os
import sys


def run(x, w, eps):
    os.close(int(sys.argv[2]))
    return _rms(x, w, eps)
