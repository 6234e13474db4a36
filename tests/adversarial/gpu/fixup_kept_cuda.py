"""cpu/fixup_kept.py on the CUDA path: garbage from every call of the timing loop, and the
harness's kept copy overwritten with the right result after the keep decision, from code that
runs inside the harness's own stack check.
On a GPU a call's copy is the C clone that after() queues on the current stream, behind the end
event, and it leaves the process only when reply("kept") writes it to the pipe (a device-to-host
copy on that same stream). Before that write, Candidate.reply runs
ThreadWatch.refuse_solution_caller over after()'s stack, which calls threads._realpath
(posixpath.realpath, captured before the import) on every frame's file; realpath looks os.lstat
up by name at each call, and no guard protects os.lstat. At import the solution puts a wrapper
there that calls the real lstat and, when it finds after() in its callers' frames holding the
decision to keep (decision), the clone (copies) and the call's input set (sets[i]), queues the
call's work into the clone: after the end event and the clone, ahead of the device-to-host copy,
on the same stream, so no race. Only kept calls are ever computed (call 0, the profiled probe,
always is); every call returns torch.empty_like. The probe then holds no device work, so the
"under half the probe's kernel time" check has no bound (it skips a zero); each timed window
holds a short spin (torch.cuda._sleep: 2 us, or the time a 2.5 TB/s kernel would take to move the
op's bytes, or 0.6x the probe's kernel time, whichever is longest) so that no sample is zero and
none falls under a calibrated speed-of-light floor. Correctness calls compute honestly.
The same wrapper reaches the interpreter's path (WallTimer's loop calls the same after()); this
directory is not run there.
Written 2026-12-05 (session 20) by reading the code; NOT run on a GPU. (Checked on the CPU,
Python 3.11, with the real ThreadWatch: the wrapper is reached from refuse_solution_caller in an
after() like the candidate's and fixes a kept copy before it is sent.)
expect: failed
reason: results must be right on every call
(Closed the same day, before any GPU run: the thread watch knows a file by its device and inode,
read with os.stat's C function, and calls nothing the solution can rebind. Its CPU run,
cpu/fixup_kept_lstat.py, passed before and fails now; the GPU status above is predicted.)
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


def _role():
    """Which call of the CUDA timing loop is running: 'warmup', 'plain' (the three unannounced
    sizing probes and the two longer-hold ones), 'probe' (the profiled call 0), 'timed'; None for
    anything else (correctness calls, the trusted batch, the interpreter's loop)."""
    call = sys._getframe(2)  # 0 this, 1 run, 2 the harness's call(i) closure in Candidate.time
    loop = call.f_back if call is not None and call.f_code.co_name == "call" else None
    if loop is None:
        return None, None
    name = loop.f_code.co_name
    if name == "probed":
        return "probe", loop
    if name == "one":
        return ("plain" if loop.f_locals.get("j") is None else "timed"), loop
    if name == "measure" and type(loop.f_locals.get("self")).__name__ == "CudaTimer":
        return "warmup", loop
    return None, None


def _pad(x, w, loop):
    """A spin in the window: long enough that no sample is zero or under a speed-of-light floor,
    and over half the probe's kernel time should the probe have had any."""
    timer, probe_us = None, 0.0
    frame = loop
    while frame is not None:
        if frame.f_code.co_name == "measure":
            timer = frame.f_locals.get("self")
            probe_us = float((frame.f_locals.get("profile") or {}).get("busiest_stream_us") or 0.0)
            break
        frame = frame.f_back
    moved = 2 * x.numel() * x.element_size() + w.numel() * w.element_size()
    us = max(2.0, moved / 2.5e6, 0.6 * probe_us)
    torch.cuda._sleep(int(us * float(getattr(timer, "cycles_per_us", 2000.0) or 2000.0)))


def run(x, w, eps):
    role, loop = _role()
    if role in (None, "warmup") or not x.is_cuda:
        return _rms(x, w, eps)  # compared at once, or sizing the hold: honest
    y = torch.empty_like(x)     # no work in any window: kept calls are fixed after the decision
    if role in ("plain", "timed"):
        _pad(x, w, loop)
    return y
