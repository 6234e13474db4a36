"""fixup_kept.py revived through os.lstat (the CPU run of tests/adversarial/gpu/fixup_kept_cuda.py,
written by the session-20 red team): every timed call returns garbage, and the harness's kept copy
is overwritten with the right result after the keep decision, from code the harness itself runs.
Before each reply the candidate checked that no solution frame sent it (ThreadWatch.
refuse_solution_caller), and that check resolved every frame's file with posixpath.realpath, which
looks os.lstat up by name at each call: a wrapper put in os.lstat at import found after()'s frame
with the decision to keep, the copy and the input set, and computed the call into the copy before
it was sent. Passed on dbb9378 at about 11 us against ~55 us honest (CPU interpreter, 2026-12-05,
both smoke workloads); the thread watch now knows a file by its device and inode, read with os.stat's
C function captured before the solution, so nothing the solution rebinds runs there.
expect: failed
expect_gpu: failed
reason: results must be right on every call
"""
import os
import sys

import torch

_lstat = os.lstat    # the real one: every answer the harness gets stays true
_last = [None]       # (id of the decision, call) last fixed: one realpath calls lstat several times
_inside = [False]


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _fix_kept_copy():
    # 0 this, 1 the wrapper, 2 posixpath's _joinrealpath ... refuse_solution_caller, reply, after
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != "after":
        frame = frame.f_back
    if frame is None:
        return
    loc = frame.f_locals
    decision, copies, sets, i = loc.get("decision"), loc.get("copies"), loc.get("sets"), loc.get("i")
    # reply("issued") comes before the decision; a call not kept is never computed at all
    if type(decision) is not dict or not decision.get("keep") or type(copies) is not torch.Tensor or sets is None:
        return
    key = (id(decision), loc.get("j"))
    if _last[0] == key:
        return
    _last[0] = key
    args = sets[i]  # the inputs the call ran on (the next perturbation comes in the next before())
    # queued on the current stream: behind the clone, ahead of the send's device-to-host copy, and
    # written into the storage that the already packed byte view of the clone shares
    copies.copy_(_rms(args["x"], args["w"], args["eps"]))


def _lstat_fixing(path, *args, **kwargs):
    if not _inside[0]:
        _inside[0] = True
        try:
            _fix_kept_copy()
        finally:
            _inside[0] = False
    return _lstat(path, *args, **kwargs)


os.lstat = _lstat_fixing


def _in_timing_loop():
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "measure":
            return True
        frame = frame.f_back
    return False


def run(x, w, eps):
    if _in_timing_loop():
        return torch.empty_like(x)  # no work in any window: kept calls are fixed after the decision
    return _rms(x, w, eps)
