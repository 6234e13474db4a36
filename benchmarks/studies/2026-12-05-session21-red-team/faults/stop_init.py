"""On its first call forks a child that sends SIGSTOP to the candidate (pid 1 of its namespace)
and to its own process group, and SIGSTOPs itself; then returns a right result.
expect: passed (init ignores a namespace-internal SIGSTOP) or crashed/timeout; never a hang past
the timeout, no leftover stopped process
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w

import os
import signal

DONE = []


def run(x, w, eps):
    if not DONE:
        DONE.append(1)
        me = os.getpid()
        if os.fork() == 0:
            os.kill(me, signal.SIGSTOP)
            os.kill(os.getpid(), signal.SIGSTOP)
            os._exit(0)
        os.kill(me, signal.SIGSTOP)
    return _rms(x, w, eps)
