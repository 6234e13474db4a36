"""Starts a thread that, while the harness times it, finds the timing loop's list of per-call
times in the main thread's frames and keeps dividing new entries by four. No function is replaced,
so the timer guard sees nothing; before the thread check this passed with a time four times too
short (CPU interpreter, 2026-12-04).
expect: failed
reason: a thread the solution started was running its code
"""
import sys
import threading
import time

import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


_done = set()


def _rewrite(main_id):
    deadline = time.time() + 60
    while time.time() < deadline:
        frame = sys._current_frames().get(main_id)
        while frame is not None:
            samples = frame.f_locals.get("samples")
            if frame.f_code.co_name == "measure" and isinstance(samples, list):
                for k, x in enumerate(samples):
                    if (id(samples), k) not in _done:
                        samples[k] = x / 4
                        _done.add((id(samples), k))
            frame = frame.f_back
        time.sleep(0.0002)


_started = []


def run(x, w, eps):
    if not _started:
        _started.append(threading.Thread(target=_rewrite, args=(threading.get_ident(),), daemon=True))
        _started[0].start()
    return _rms(x, w, eps)
