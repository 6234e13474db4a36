"""On its 4th call (inside the timed loop) forks a child that ignores SIGTERM/SIGHUP, starts a new
session and sleeps holding every inherited fd (the reply pipe, the command pipe, the arena,
stdout); the candidate then exits with code 0.
expect: crashed within seconds (the pid namespace kills the child), no leftover process
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w

import os
import signal
import time

CALLS = [0]
MARKER = "d2k-redteam-g-child-holds-pipes"


def run(x, w, eps):
    CALLS[0] += 1
    if CALLS[0] == 4:
        if os.fork() == 0:
            os.setsid()
            for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                signal.signal(s, signal.SIG_IGN)
            os.execvp("sleep", ["sleep", "600", MARKER]) if False else time.sleep(600)
            os._exit(0)
        os._exit(0)
    return _rms(x, w, eps)
