"""cpu/thread_filename_bool_defer.py on the CUDA path. The CPU file tells its timed calls by the
interpreter loop's frames (`call` called from `measure`); the CUDA loop calls from `one` (the timed
calls and the unannounced sizing calls) and `probed` (call 0, under the profiler), so on a GPU the
CPU file computed every call honestly and passed (session 23, an H100). This form tells them apart
as the CUDA loop names them. The route is the same: a parked thread whose code has a file name of
a str subclass, whose __bool__ the thread watch would call when it asks `co_filename or ""` in
after(), where `copies` holds the call's output, copied, and not yet announced; __bool__ computes
the right result into that copy on the current stream. Timed calls and the probe return
torch.empty_like(x) at once; warm-up and correctness calls compute honestly.
The thread watch reads file names without their methods since 11dc230, so __bool__ should never
run and the copies keep whatever the allocator left. Predicted, not yet run on a GPU.
expect: failed|timing_suspect
"""
import sys
import threading

import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


_fixed = set()


class _Name(str):
    __slots__ = ()

    def __bool__(self):
        f = sys._getframe(1)
        while f is not None and not (f.f_code.co_name == "after" and f.f_code.co_filename.endswith("candidate.py")):
            f = f.f_back
        if f is not None:
            loc = f.f_locals
            copies, i, j, sets = loc.get("copies"), loc.get("i"), loc.get("j"), loc.get("sets")
            if type(copies) is torch.Tensor and sets is not None and (id(copies), j) not in _fixed:
                s = sets[i]
                copies.copy_(_rms(s["x"], s["w"], s["eps"]))   # same stream: after the end event
                _fixed.add((id(copies), j))
        return True


_SRC = "def park(event):\n    event.wait()\n"
_scope: dict = {}
exec(compile(_SRC, _Name("<d2k-park>"), "exec"), _scope)
_event = threading.Event()
threading.Thread(target=_scope["park"], args=(_event,), daemon=True).start()


def _timed_or_probe() -> bool:
    """A call of the CUDA loop whose output after() copies and announces: the profiled probe
    (`probed`) or a timed call (`one` with a call number j)."""
    call = sys._getframe(2)   # 0 this, 1 run, 2 the harness's call(i) closure
    if call is None or call.f_code.co_name != "call" or call.f_back is None:
        return False
    loop = call.f_back
    return loop.f_code.co_name == "probed" or (loop.f_code.co_name == "one" and loop.f_locals.get("j") is not None)


def run(x, w, eps):
    if x.is_cuda and _timed_or_probe():
        return torch.empty_like(x)
    return _rms(x, w, eps)
