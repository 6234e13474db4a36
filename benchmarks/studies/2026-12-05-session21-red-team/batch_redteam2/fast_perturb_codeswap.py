"""Variant of fast_perturb_honest.py that replaces nothing the guard compares: at import it swaps
the ``__code__`` of ``d2k.execution.wire.perturb`` (the same function object, so every identity the
guard keeps still holds) for a trampoline that calls the exact, cheaper numpy copy of the
perturbation (reached through a module of its own in ``sys.modules``). It stays in place for the
whole run, timing loop included (the perturbation lies outside the in-process window), and is never
put back. Every call is right; the trusted batch's solution round trips undercut the pricing
process's, whose perturbation is the harness's own; the in-process figure is forged by the known
ctypes route (timer ``t0`` rebinding). Shows that a guard check inside the batch loop would not
close fast_perturb_honest.py.
expect: failed
reason: TODO
"""
import ctypes
import sys
import time

import numpy as np
import torch

import d2k.execution.wire as _W

_orig = _W.perturb
_A, _B, _M = _W._MIX_A, _W._MIX_B, _W._MASK64
_BV = _W._BYTE_VIEW
_st = {"installed": False, "call": 0}


_G = torch.Generator()
_randint = torch.randint
_plans = {}


def _plan(t):
    """Per input tensor (the batch keeps the same pristine tensors): its numpy integer view and sizes."""
    key = id(t)
    plan = _plans.get(key)
    if plan is None or plan[0] is not t:
        shape = t.shape
        cols = shape[-1] if len(shape) else 1
        numel = t.numel()
        rows = numel // max(cols, 1)
        ok = cols >= 2 and rows >= 1 and t.element_size() in _BV and t.is_contiguous()
        ints = t.view(_BV[t.element_size()]).numpy().reshape(rows, cols) if ok else None
        k = min(rows, max(1, -(-numel // 4096))) if ok else 0
        plan = (t, ok, rows, cols, k, np.arange(k) * (rows // k) if ok else None, ints, ints.reshape(-1) if ok else None)
        _plans[key] = plan
    return plan


def _fast_perturb(tensors, names, seed, call):
    _st["call"] = call
    g = _G
    base = seed * _A + call * _B
    for index, name in enumerate(names):
        t, ok, rows, cols, k, spaced, ints, flat = _plan(tensors[name])
        if not ok:
            continue
        g.manual_seed((base + index) & _M)
        if k < rows:
            start = int(_randint(0, rows, (1,), generator=g))
            first = ((spaced + start) % rows) * cols
        else:
            first = spaced * cols
        a = _randint(0, cols, (k,), generator=g).numpy()
        b = (a + _randint(1, cols, (k,), generator=g).numpy()) % cols
        shift = int(_randint(1, cols, (1,), generator=g))
        tmp = ints.copy()
        ints[:, shift:] = tmp[:, :cols - shift]
        ints[:, :shift] = tmp[:, cols - shift:]
        ia, ib = first + a, first + b
        va = flat[ia]
        flat[ia] = flat[ib]
        flat[ib] = va


def _in_batch():
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "batch_call":
            return True
        frame = frame.f_back
    return False


def _compute(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


import types as _types

_stash = _types.ModuleType("_rt_i_fast")
_stash.f = _fast_perturb
sys.modules["_rt_i_fast"] = _stash


def _tramp(tensors, names, seed, call):
    return __import__("sys").modules["_rt_i_fast"].f(tensors, names, seed, call)


_W.perturb.__code__ = _tramp.__code__


def run(x, w, eps):
    if _in_batch():
        return _compute(x, w, eps)
    y = _compute(x, w, eps)
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "measure" and "t0" in frame.f_locals):
        frame = frame.f_back
    if frame is not None:
        frame.f_locals["t0"] = time.perf_counter()
        ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))
    return y
