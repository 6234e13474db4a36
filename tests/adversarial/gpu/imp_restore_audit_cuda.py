"""cpu/imp_restore_audit.py on the CUDA path: an installer the harness replaced is rebuilt with
`_imp.create_builtin`, and the hook it installs runs the call's work inside the harness's after(),
between the end event and the copy.
The CPU file rebuilt sys.addaudithook; the harness's own audit hook (hooks.audit_veto) now refuses
that event whoever asks. It refuses sys.setprofile and sys.settrace only "while the solution's
code is on the stack": a frame whose globals are the solution module's, or whose file is the
solution's. So everything here that runs after the import, run() included, is compiled from a
string under another file name into globals of its own (the module's `run` is that function):
no frame the veto looks at is the solution's. At import the module rebuilds the original
sys.setprofile (create_builtin re-runs the single-phase sys module's init copy into sys.__dict__;
the dict is then put back as the guard recorded it). Each timed call (and the probe, call 0)
returns torch.empty_like(x) and, last, installs a profile function. On a GPU that matters:
after() copies the result with the C method TensorBase.clone, a method descriptor, so the profile
function gets a c_call for it with after()'s frame; there it queues the call's work into the
result on the current stream (behind the end event, ahead of the clone: the copy, checked or not,
is right) and removes itself, before after()'s thread check and the guard's check in the next
before(). No window holds the work; the probe holds no device work (its work is queued in its
after(), once the profiler has stopped), so the "under half the probe" check has no bound (it
skips a zero); each timed window holds a short spin (2 us, or a 2.5 TB/s kernel's time for the
op's bytes, or 0.6x the probe's kernel time). Warm-up calls wait 200 us on the host, so the hold
(1.5x the warm-up's issue time + 20 us) covers the profile function's cost ahead of end.record().
(On the interpreter the same profile would compute into the result before WallTimer's copy; this
directory is not run there.)
Written 2026-12-05 (session 20) by reading the code; NOT run on a GPU. (Checked on the CPU with
the real lock, veto and ThreadWatch on Python 3.11, and with a copy of the veto on 3.12.1: the
install passes the veto, the profile fires on the C clone in an after() and removes itself, and
HookWatch.check passes afterwards.)
expect: failed
reason: installed a profile or trace function
(Its interpreter variant, run on the CPU the same day, failed so: the profile function did not
remove itself in after() (it compares `arg.__self__` with the result, and the harness calls the
clone unbound), and the hook check found it. The GPU status above is predicted from that.)
"""
import _imp
import importlib.machinery
import sys
import time

import torch


def _original(name):
    """sys.<name> as CPython built it, with sys.__dict__ put back as it was (the guard's view)."""
    snapshot = dict(vars(sys))
    _imp.create_builtin(importlib.machinery.ModuleSpec("sys", None))
    original = getattr(sys, name)
    vars(sys).update(snapshot)
    return original


_SRC = '''
def compute(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def role(call):
    # (role, loop frame) of the timing loop's call that `call` (run's caller) makes: warmup, plain
    # (the unannounced sizing probes), probe (call 0, profiled), timed; None otherwise
    loop = call.f_back if call.f_code.co_name == "call" else None
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


def pad(x, w, loop):
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


def profile(frame, event, arg):
    # the c_call of after()'s `c_clone(result)`: arg is that method bound to the result
    if event != "c_call" or frame.f_code.co_name != "after" or getattr(arg, "__name__", None) != "clone":
        return
    loc = frame.f_locals
    result, sets, i = loc.get("result"), loc.get("sets"), loc.get("i")
    if sets is None or getattr(arg, "__self__", None) is not result:
        return
    setprofile(None)  # the original again; no solution frame on this stack either
    args = sets[i]
    result.copy_(compute(args["x"], args["w"], args["eps"]))  # same stream, after end, before the clone


def run(x, w, eps):
    kind, loop = role(sys._getframe(1))
    if kind is None or not x.is_cuda:
        return compute(x, w, eps)  # correctness calls: honest
    if kind == "warmup":
        until = perf_counter() + 2e-4
        while perf_counter() < until:
            pass
        return torch.empty_like(x)
    y = torch.empty_like(x)
    if kind in ("plain", "timed"):
        pad(x, w, loop)
    if kind in ("probe", "timed"):  # after() follows: the profile function removes itself there
        setprofile(profile)
    return y
'''

_scope = {"__name__": "d2k_lib_helper", "sys": sys, "torch": torch, "perf_counter": time.perf_counter,
          "setprofile": _original("setprofile")}
exec(compile(_SRC, "/usr/lib/python3/dist-packages/d2k_lib_helper.py", "exec"), _scope)
run = _scope["run"]
