"""Empties the guard's list of frozen objects. ``TimerGuard.frozen`` holds every object whose own
attributes the guard keeps as they were (the harness's modules, json's, the Candidate instance, the
hook and thread watches, the timer and the guard itself); the guard freezes itself with
``mutable=("frozen",)``, since ``freeze`` appends to that list and ``thaw`` rebinds it, so the list
is the solution's to change: ``guard.frozen.clear()`` (the guard found through ``gc``) leaves
nothing frozen, and the check raises nothing. The file then does what the freeze of the guard was
built to stop (patch_guard_clock.py, session 17): it gives the guard instance a ``perf_counter`` of
its own, the real clock scaled by 1/10. ``time.perf_counter``, which the guard does protect by
name, is untouched. ``run`` computes the right answer honestly on every call; only the clock is
forged. (Objects frozen later, the timer in each ``time()``, are appended after the clearing and
checked as usual.)
Passed at 5-25x under the honest time on the CPU interpreter (session 21's fourth, held-out red team, on ed8c83d);
the guard's records are a tuple now: its clear() fails.
expect: error|failed
"""
import gc
import time

import torch

from d2k.execution.timing import TimerGuard

_SCALE = 0.1
_real = time.perf_counter
_base = _real()


def _scaled():
    return _base + (_real() - _base) * _SCALE


for _obj in gc.get_objects():
    if type(_obj) is TimerGuard:
        _obj.frozen.clear()
        _obj.perf_counter = _scaled


def run(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
