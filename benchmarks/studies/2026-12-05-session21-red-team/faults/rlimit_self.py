"""Lowers its own address-space limit to 1 GiB above what it uses and its file-size limit to 0,
at import; then returns right results.
expect: passed (the harness needs neither) or error with a clear reason
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w

import resource

vm = int(open("/proc/self/statm").read().split()[0]) * 4096
resource.setrlimit(resource.RLIMIT_AS, (vm + (1 << 30), vm + (1 << 30)))
resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
import os
os.umask(0o777)
os.chdir("/")


def run(x, w, eps):
    return _rms(x, w, eps)
