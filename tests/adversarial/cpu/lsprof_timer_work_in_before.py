"""setprofile_work_in_before.py revived without sys.setprofile: `_lsprof.Profiler` (cProfile's C
core) installs its C profile function itself (not through the replaced sys.setprofile) and calls
a Python *timer* of the solution's choosing on every call and return event of the interpreter.
The HookWatch check only asks `sys.getprofile()`, which it looks up by name on `sys` and which no
one protects: the solution replaces it with `lambda: None`. The timer sees the timing loop's C call
to `g.perf_counter()` that reads t0 (the inputs are final by then); it computes that call's output
from the input set (found through the `call` closure's `sets` cell) and stashes it; the timed call
returns the stash. Right on every call.
Passed before 2026-12-05's second round at about 6x under the honest time (CPU); an audit hook of
the harness's, installed before the import, now refuses sys.setprofile events (however raised)
while the solution's code is on the stack.
expect: failed
expect_gpu: failed|error
(On the H200's Python 3.12 `_lsprof` goes through sys.monitoring, and `Profiler.enable` raised
"ValueError: Another profiling tool is already active" at its first call: an error, no figure. 2026-12-05.
No tool was active: `Profiler.enable` calls `sys.monitoring.use_tool_id` by name, the harness's
refusal of it raised, and `_lsprof` words any failure there as that ValueError.)
reason: is not available to a solution
"""
import _lsprof
import linecache
import sys

import torch


def _rmsnorm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


_STASH = {}
_STATE = {}


def _t0_line(code):
    lines = linecache.getlines(code.co_filename)
    for n in range(code.co_firstlineno, len(lines)):
        if "t0 = g.perf_counter()" in lines[n - 1]:
            return n
    return -1


def _timer():
    frame = sys._getframe(1)
    code = frame.f_code
    if code.co_name != "measure" or frame.f_lineno != _STATE.get(code, 0):
        if code.co_name == "measure" and code not in _STATE:
            _STATE[code] = _t0_line(code)
        return 0.0
    loc = frame.f_locals
    call, j, n_sets = loc.get("call"), loc.get("j"), loc.get("n_sets")
    if call is None or j is None or _STATE.get("last") == j:
        return 0.0  # the C call's return event fires on the same line, inside the window: once only
    _STATE["last"] = j
    cells = dict(zip(call.__code__.co_freevars, call.__closure__ or ()))
    if "sets" not in cells:
        return 0.0
    args = cells["sets"].cell_contents[j % n_sets]
    _STASH[id(args["x"])] = (args["x"], args["w"], _rmsnorm(**args))
    return 0.0


def run(x, w, eps):
    prof = _STATE.get("prof")
    if prof is not None:
        prof.disable()  # the timer's own cost stays out of the window: off for the call's body
    hit = _STASH.pop(id(x), None)
    if hit is not None and hit[0] is x and hit[1] is w:
        prof.enable()
        return hit[2]
    if prof is not None:
        prof.enable()
    if "prof" not in _STATE:
        sys.getprofile = lambda: None  # what HookWatch.check asks
        prof = _lsprof.Profiler(_timer)
        prof.enable()
        _STATE["prof"] = prof
    return _rmsnorm(x, w, eps)
