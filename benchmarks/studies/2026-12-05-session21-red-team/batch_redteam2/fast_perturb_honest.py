"""Trusted batch: every call right, the price still under the pricing process's. During the batch
``d2k.execution.wire.perturb`` is replaced (in the candidate's own process; ``Candidate.batch``
runs no guard check between calls) by an exact, cheaper copy: the same draws from torch's
generator, but the rotation and the swaps done with numpy on the tensors' integer views, with
fewer interpreter-level calls. The original is put back on the batch's last call, before the
reply's guard check. The pricing process pays the harness's full perturbation (~150 us of its
~330 us round trip under the interpreter), the solution a fraction, so the solution's excess over
the price shrinks to about its own compute minus the saving, and the in-process figure (forged by
the known open ctypes route, timer ``t0`` rebinding) passes the bound. This is the documented
looseness ("a solution can skip the loop's own work in part, by fusing the perturbation"),
measured: on the CPU interpreter the loop's work is several times the call's.
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


def run(x, w, eps):
    if _in_batch():
        if not _st["installed"]:
            _st["installed"] = True
            _W.perturb = _fast_perturb
        y = _compute(x, w, eps)
        if _st["call"] >= 59:  # the batch's last call: the original back before the guard looks
            _W.perturb = _orig
            _st.update(installed=False, call=0)
        return y
    y = _compute(x, w, eps)
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "measure" and "t0" in frame.f_locals):
        frame = frame.f_back
    if frame is not None:
        frame.f_locals["t0"] = time.perf_counter()
        ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))
    return y
