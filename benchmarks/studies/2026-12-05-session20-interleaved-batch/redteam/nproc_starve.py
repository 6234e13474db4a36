"""Red team (session 20 batch): starve the pricing process of processes (RLIMIT_NPROC).

Where the sandbox drops the candidate to uid 65534, every candidate (the solution's and the
pricing process) runs as that one user under RLIMIT_NPROC 4096, and the limit counts the user's
tasks across pid namespaces. On its first call the solution fills the count with idle threads
(C target time.sleep, 64 KiB stacks: no solution code runs in them, so the thread check only lists
them). The pricing process starts later (at the first batch): its setpriv exec, or its torch's
thread pool, fails with EAGAIN, the batch records ``null_error`` and, with no null median, the
flag is never computed. Otherwise the call is the 2-ms forty-pass one with t0 rebound (figure
forged). Prints its uid and how many threads it made (the record's candidate_output_tail).
expect: timing_suspect (evades where uid 65534: passed with null_error)
"""
import ctypes
import os
import sys
import threading
import time

import torch

_started = []


def _fill():
    threading.stack_size(64 << 10)
    n = 0
    try:
        while n < 5000:
            threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
            n += 1
    except (RuntimeError, OSError):
        pass
    print(f"uid {os.getuid()} threads {n}", flush=True)
    _started.append(n)


def run(x, w, eps):
    if not _started:
        _fill()
    for _ in range(40):
        xf = x.float()
        y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "measure" and "t0" in frame.f_locals):
        frame = frame.f_back
    if frame is not None:
        frame.f_locals["t0"] = time.perf_counter() - 60e-6
        ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))
    return y
