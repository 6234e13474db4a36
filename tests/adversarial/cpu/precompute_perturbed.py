"""Reads the perturbation's seed from the timing command in its callers' frames, replays every
timed call's perturbation on its own copies of the input sets during warm-up (outside any timed
window) and computes all their outputs then; each timed call returns its precomputed output and
does no work. Every checked call was right and this passed (CPU interpreter, 2026-12-04), so only
a seed the candidate cannot know in advance stops it: each timed call's perturbation seed now
arrives just before that call.
expect: failed
expect_gpu: passed
(On the GPU it finds no interpreter loop in its frames and computes every call honestly: H200,
2026-12-05. It tests the interpreter's path only.)
reason: outside tolerance
"""
import sys

import torch

from d2k.execution import wire


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


_cache = {}


def _frame_with(*names):
    frame = sys._getframe(2)
    while frame is not None and not all(n in frame.f_locals for n in names):
        frame = frame.f_back
    return frame


def run(x, w, eps):
    timing = _frame_with("cmd", "pristine", "names", "n_sets")
    if timing is None:
        return _rms(x, w, eps)  # a correctness call: do the work
    local = timing.f_locals
    cache = _cache.setdefault(id(local["pristine"]), {})
    loop = _frame_with("samples", "j")
    if loop is None or loop.f_code.co_name != "measure":
        if not cache:  # warm-up: replay every timed call's perturbation, compute its output
            sets = [{k: v.clone() for k, v in p.items() if isinstance(v, torch.Tensor)} for p in local["pristine"]]
            for j in range(64):
                state = sets[j % local["n_sets"]]
                # the one seed of every call where it used to be; now no call's seed is known at
                # warm-up, and a guess is wrong
                wire.perturb(state, local["names"], local.get("seed", 0), j)
                cache[j] = _rms(state["x"], state["w"], eps)
        return _rms(x, w, eps)
    return cache[loop.f_locals["j"]].clone()  # a timed call: no work
