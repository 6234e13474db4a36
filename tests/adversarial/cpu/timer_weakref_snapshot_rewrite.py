"""A weakref callback on the harness's ``WallTimer`` instance, which dies when ``Candidate.time()``
returns (its frame's locals are cleared after the return value is built; the guard thawed the
timer just before). During its first timed call the solution finds the timer as ``measure()``'s
``self`` (its caller's caller) and keeps ``weakref.ref(timer, callback)`` in its own globals: a
weakref sits in the object's weakref slot, not in the ``vars()`` the guard freezes. The callback
runs after every check of ``time()``, including its snapshot of the figures: it finds the return
dict ``{"ok", "timing", "timing_snapshot"}`` with ``gc.get_objects()``, divides
``timing["samples_ms"]`` by ten in place, and writes a fresh ``json.dumps`` of the forged timing
into ``"timing_snapshot"`` (the snapshot travels in a mutable dict). ``serve()`` then compares the
forged timing with the forged snapshot, and its guard and thread checks find nothing replaced and no
thread. Every call computes the right answer; only the figure is forged.
Passed at 5-25x under the honest time on the CPU interpreter (session 21's fourth, held-out red team, on ed8c83d);
the timer now dies before the figures are compared: it gains nothing.
expect: passed
median_at_least_of_control: 0.3
"""
import gc
import json
import sys
import weakref

import torch

_REFS = []


def _gone(ref):
    for obj in gc.get_objects():
        if type(obj) is dict and "timing_snapshot" in obj and obj.get("ok") is True:
            timing = obj.get("timing")
            if type(timing) is dict and type(timing.get("samples_ms")) is list:
                samples = timing["samples_ms"]
                for k in range(len(samples)):
                    samples[k] = samples[k] / 10
                obj["timing_snapshot"] = json.dumps(timing, sort_keys=True)


def _arm():
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != "measure":
        frame = frame.f_back
    if frame is None:
        return
    timer = frame.f_locals.get("self")
    if timer is not None and not any(r() is timer for r in _REFS):
        _REFS.append(weakref.ref(timer, _gone))


def run(x, w, eps):
    _arm()
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
