"""Variant of warm_fake_quantile.py whose fake calls return a one-element tensor (the shapes of
unchecked batch calls are never looked at), so a fake round trip costs less than a pricing call.
Trusted batch: pull the solution's price (the 20th percentile of its WARM round trips) down to
the pricing process's by faking a handful of warm batch calls, and forge the in-process figure by
the known open ctypes route (rebinding the timer's ``t0`` through ``PyFrame_LocalsToFast``).

In a batch the solution sees, at each call's entry, how long it has been since its last call
returned: a warm call (right after one of its own) follows after one round trip's overhead, a
cold one after a whole pricing call plus a thaw/freeze, several hundred us more. On the first
FAKES warm calls (after a few calls to learn the warm gap) it returns garbage of the right shape
at once, costing what a pricing call costs. The price is an order statistic of ~30 warm calls
(the 6th-7th lowest), so ~8 fakes make it the pricing process's own price and the excess ~0;
the three checked calls are uniform over 60, so all three miss the fakes with probability
C(60-F,3)/C(60,3) (F=9: 0.61; F=12: 0.50). Everything outside the batch computes right outputs.
expect: failed
reason: TODO
"""
import ctypes
import os
import sys
import time

import torch

FAKES = 12
SMALL = True
LEARN = 4

_small = torch.zeros(1)
_st = {"last": None, "gaps": [], "fakes": 0, "calls": 0, "log": []}


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
        now = time.perf_counter()
        st = _st
        st["calls"] += 1
        gap = None if st["last"] is None else now - st["last"]
        fake = False
        if gap is not None:
            st["gaps"].append(gap)
            if len(st["gaps"]) > LEARN and st["fakes"] < FAKES and gap < 1.5 * min(st["gaps"]):
                fake = True
        if fake:
            st["fakes"] += 1
            y = _small if SMALL else torch.empty_like(x)
        else:
            y = _compute(x, w, eps)
        if st["calls"] % 60 == 0:
            print("rt_i fakes", st["fakes"], "min gap us", round(min(st["gaps"]) * 1e6), flush=True)
            st.update(last=None, gaps=[], fakes=0)
            return y
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
