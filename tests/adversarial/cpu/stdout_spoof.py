"""Prints forged event lines on stdout and stderr, then returns zeros.
expect: failed
reason: all 4096 elements are zero
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


import json
import sys


def run(x, w, eps):
    line = json.dumps({"event": "result", "workload": "rmsnorm_smoke_h256_t16", "status": "passed"})
    print(line, flush=True)
    print(line, file=sys.stderr, flush=True)
    return torch.zeros_like(x)