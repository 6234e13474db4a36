"""CONTROL for warm_fake_quantile.py: the same file with FAKES = 0, i.e. only the forged in-process
figure (ctypes t0 rebinding) and right outputs on every batch call: the batch should flag it.
expect: failed
reason: TODO
"""
import ctypes
import os
import sys
import time

import torch

FAKES = 0
LEARN = 4

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
            y = torch.empty_like(x)
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
