"""Raises BaseException subclasses from run(): SystemExit(3) on the H=256 workload,
KeyboardInterrupt on the H=100 one (the candidate reports both as raised; the d2k parent must
not take the KeyboardInterrupt as its own Ctrl-C).
expect: error on both workloads, the run 'finished'
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def run(x, w, eps):
    if x.shape[1] == 256:
        raise SystemExit(3)
    raise KeyboardInterrupt()
