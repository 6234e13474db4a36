"""cpu/thread_exec_audit_veto.py on the CUDA path: a thread whose stack holds nothing of the
solution's installs what the veto refuses only "while the solution's code is on the stack", and
the hook runs the call's work inside the harness's after(), between the end event and the copy.
The CPU file's thread rebuilt sys.addaudithook, which the veto (hooks.audit_veto) now refuses
whatever the stack. It still lets sys.setprofile through when no frame of the solution's is on
the stack that raises the event, and on Python 3.12 (the H200's 3.12.3) `sys._setprofileallthreads`,
the C function behind threading.setprofile_all_threads, installs a profile function in every
thread, raising that event once per thread in the stack of the thread that calls it. The harness
replaced threading.setprofile_all_threads, not the sys function. At import the solution starts a
thread whose target is compiled from a string under another file name into globals of its own:
its stack holds threading.py and that string's code, so the thread watch lists it
(flags.threads_alive) and never refuses it. Each timed call (and the probe, call 0) returns
torch.empty_like(x) and, last, asks the thread to install the profile function in every thread
(the main thread waits; a refusal the interpreter reports as unraisable is caught with
sys.unraisablehook and raised in run(), in the harness's words). On a GPU the profile function
(string code as well) gets the c_call of after()'s C TensorBase.clone with after()'s frame, queues
the call's work into the result on the current stream (behind the end event, ahead of the clone:
every copy is right) and removes itself from every thread before after()'s thread check and the
guard's check in the next before(). The probe holds no device work (its work is queued in its
after(), once the profiler stopped), so the "under half the probe" check has no bound (it skips a
zero); each timed window holds a short spin (2 us, or a 2.5 TB/s kernel's time for the op's bytes,
or 0.6x the probe's kernel time). Warm-up calls make the same hand-off and wait 200 us on the
host, so the hold covers the hand-off and the profile's cost ahead of end.record(). Without
sys._setprofileallthreads (Python before 3.12) it computes honestly.
Written 2026-12-05 (session 20) by reading the code; NOT run on a GPU. (Checked on Python 3.12.1
with a copy of the veto, no torch: the thread's install reaches the main thread and removes
itself at the C call, and a veto that refuses whatever the stack is reported through
sys.unraisablehook.)
expect: failed
reason: is not available
(Closed the same day, before any GPU run: sys._setprofileallthreads and _settraceallthreads are
replaced with refusals, and the harness's audit hook refuses their events whoever asks.)
First GPU run (session 23, an H100, Python 3.12.3): timeout at the 120-s limit, not failed. The
refusal raised in the thread, not through sys.unraisablehook, so serve() ended without setting
`done` and run() waited for good: refused, but the record said only that it hung. serve() now
hands any exception of its install back to run(), which raises it, as the file meant to (predicted,
not yet run on a GPU).
"""
import sys
import threading
import time

import torch

_SRC = '''
def compute(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def profile(frame, event, arg):
    # the c_call of after()'s `c_clone(result)`: arg is that method bound to the result
    if event != "c_call" or frame.f_code.co_name != "after" or getattr(arg, "__name__", None) != "clone":
        return
    loc = frame.f_locals
    result, sets, i = loc.get("result"), loc.get("sets"), loc.get("i")
    if sets is None or getattr(arg, "__self__", None) is not result:
        return
    set_all(None)  # from every thread; this stack holds after() and the harness, nothing of the solution's
    args = sets[i]
    result.copy_(compute(args["x"], args["w"], args["eps"]))  # same stream, after end, before the clone


def install():
    refused = []
    previous = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: refused.append(unraisable.exc_value)
    try:
        set_all(profile)
    finally:
        sys.unraisablehook = previous
    return refused[0] if refused else None


def serve():
    # the thread's whole life; its frames are threading.py's and this string's
    while True:
        asked.wait()
        asked.clear()
        try:
            box[1] = install() if box[0] == "install" else None
        except BaseException as exc:  # a refusal raised here: hand it to run()
            box[1] = exc
        done.set()
'''

_scope = {"__name__": "d2k_lib_helper", "sys": sys, "torch": torch, "set_all": getattr(sys, "_setprofileallthreads", None),
          "asked": threading.Event(), "done": threading.Event(), "box": [None, None]}
exec(compile(_SRC, "/usr/lib/python3/dist-packages/d2k_lib_helper.py", "exec"), _scope)
if _scope["set_all"] is not None:
    threading.Thread(target=_scope["serve"], daemon=True).start()


def _ask(what):
    """Have the thread do ``what`` while this one waits; what it reports (a refusal) or None."""
    box, done = _scope["box"], _scope["done"]
    box[0], box[1] = what, None
    done.clear()
    _scope["asked"].set()
    done.wait()
    return box[1]


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _role():
    """Which call of the CUDA timing loop is running: 'warmup', 'plain' (the unannounced sizing
    probes), 'probe' (the profiled call 0), 'timed'; None for anything else."""
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
    """A spin in the window (see the docstring)."""
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
    if role is None or not x.is_cuda or _scope["set_all"] is None:
        return _rms(x, w, eps)  # correctness calls, or nothing to exploit: honest
    if role == "warmup":
        _ask("nothing")
        until = time.perf_counter() + 2e-4
        while time.perf_counter() < until:
            pass
        return torch.empty_like(x)
    y = torch.empty_like(x)
    if role in ("plain", "timed"):
        _pad(x, w, loop)
    if role in ("probe", "timed"):  # after() follows: the profile function removes itself there
        refused = _ask("install")
        if refused is not None:
            raise refused
    return y
