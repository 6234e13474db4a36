"""Trusted batch: fake a handful of WARM batch calls (garbage outputs), as warm_fake_quantile.py,
and make each fake round trip cost LESS than a pricing call by deferring its input perturbation:
during the batch ``d2k.execution.wire.perturb`` is replaced (in the candidate's own process; the
guard is not checked inside ``Candidate.batch``) by a wrapper that, on a call it fakes, only
queues (seed, call) and returns, and on the next honest call applies the queued perturbations in
order before the current one (the inputs are perturbed cumulatively, so every honest call still
runs on exactly the inputs the trusted side replays). The original is put back on the batch's
last call, before the reply's guard check. The warm/cold decision is made at the perturbation's
entry from the time since the previous call returned (a cold call waited out a pricing call and
a thaw/freeze). The solution's price (20th percentile of its warm round trips) falls under the
pricing process's, so the excess is <= 0 and any forged in-process figure passes the bound; the
in-process figure is forged by the known open ctypes route (timer ``t0`` rebinding).
Detection: only if one of the 3 secretly checked calls (of 60) is a fake: C(60-F,3)/C(60,3).
expect: failed
reason: TODO
"""
import ctypes
import sys
import time

import torch

import d2k.execution.wire as _W

FAKES = 10
LEARN = 4
_orig = _W.perturb
_st = {"last": None, "gaps": [], "fakes": 0, "pending": [], "fake_now": False, "installed": False}


def _perturb(tensors, names, seed, call):
    st = _st
    now = time.perf_counter()
    gap = None if st["last"] is None else now - st["last"]
    fake = False
    if gap is not None:
        st["gaps"].append(gap)
        if len(st["gaps"]) > LEARN and st["fakes"] < FAKES and gap < 1.5 * min(st["gaps"]) and call < 59:
            fake = True
    st["fake_now"] = fake
    if fake:
        st["fakes"] += 1
        st["pending"].append((seed, call))
        return None
    for s, c in st["pending"]:
        _orig(tensors, names, s, c)
    st["pending"].clear()
    st["call"] = call
    return _orig(tensors, names, seed, call)


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
    st = _st
    if _in_batch():
        if not st["installed"]:
            st["installed"] = True
            _W.perturb = _perturb
        if st["fake_now"]:
            st["fake_now"] = False
            y = torch.empty_like(x)
        else:
            y = _compute(x, w, eps)
        if st.get("call", 0) >= 59:  # the batch's last call: put the original back before the guard looks
            _W.perturb = _orig
            st.update(installed=False, last=None, gaps=[], fakes=0, call=0)
        else:
            st["last"] = time.perf_counter()
        return y
    y = _compute(x, w, eps)
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "measure" and "t0" in frame.f_locals):
        frame = frame.f_back
    if frame is not None:
        frame.f_locals["t0"] = time.perf_counter()
        ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))
    return y
