"""Returns garbage from its timed calls (no work) and, in the next call, finds the copies the
harness kept for checking in its callers' frames and overwrites them with the right result,
computed from inputs it stashed (only kept calls ever get computed; the last timed call is done
honestly, since no later call could fix it). Before kept outputs left the process at once, this
passed: every checked output was right.
expect: failed
expect_gpu: passed
(On the GPU it finds no interpreter loop, WallTimer.measure with its samples, in its frames and computes
every call honestly: H200, 2026-12-05. It tests the interpreter's path only.)
reason: results must be right on every call
"""
import sys

import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


_stash = {}
_fixed = set()


def _frame(pred):
    frame = sys._getframe(2)
    while frame is not None and not pred(frame):
        frame = frame.f_back
    return frame


def run(x, w, eps):
    loop = _frame(lambda f: f.f_code.co_name == "measure" and "samples" in f.f_locals and "j" in f.f_locals)
    owner = _frame(lambda f: "pristine" in f.f_locals and "names" in f.f_locals)
    if loop is None or owner is None:
        return _rms(x, w, eps)  # correctness calls and warm-up: honest
    kept = owner.f_locals.get("kept", {})  # gone now: the kept outputs left the process at once
    for j, (copies, _) in list(kept.items()):
        if (id(kept), j) not in _fixed and (id(kept), j) in _stash:
            copies.copy_(_rms(*_stash[id(kept), j], eps))  # the kept copy becomes the right answer
            _fixed.add((id(kept), j))
    j = loop.f_locals["j"]
    if j == loop.f_locals["self"].reps - 1:
        return _rms(x, w, eps)
    _stash[id(kept), j] = (x.clone(), w.clone())
    return torch.empty_like(x)  # garbage, at no cost
