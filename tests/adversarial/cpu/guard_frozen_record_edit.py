"""guard_frozen_list_clear.py without touching the list: edits the guard's *record* of itself.
Each entry of ``TimerGuard.frozen`` is ``(obj, mutable, attrs, type)`` where ``attrs`` is a plain
dict built by ``_attributes`` (name -> (value, pairs-or-None)), so the record the guard compares
against is as mutable as the object it describes. The solution finds the guard through ``gc``, sets
``guard.perf_counter`` to the real clock scaled by 1/10 and writes the same function into the
guard's own record (``attrs["perf_counter"] = (scaled, None)``): the list keeps its length and its
entries, the check compares the changed attribute with the changed record, by identity, and finds
them the same. So making ``frozen`` a tuple would not close guard_frozen_list_clear.py's class
unless the records are immutable too. ``run`` computes the right answer honestly on every call;
only the clock is forged.
Passed at 5-25x under the honest time on the CPU interpreter (session 21's fourth, held-out red team, on ed8c83d);
the records are tuples now: its edit does nothing and it gains nothing.
expect: passed
median_at_least_of_control: 0.3
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
        for _entry in _obj.frozen:
            if _entry[0] is _obj and "perf_counter" in _entry[2]:
                _entry[2]["perf_counter"] = (_scaled, None)
                _obj.perf_counter = _scaled


def run(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
