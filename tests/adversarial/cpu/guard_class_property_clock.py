"""Adds a property named ``perf_counter`` to the harness's ``TimerGuard`` *class*. A data
descriptor on a class wins over the instance's own dict, so ``g.perf_counter`` in the timer reads
the property, which returns the real clock scaled by 1/10, while the guard's instance keeps its
captured ``perf_counter`` untouched in ``vars(guard)`` (what the guard freezes) and its type and
MRO stay the same (what it checks for its own class, after guard_class_swap.py). The timing
module's globals are frozen by entry identity, and the class object there is the same object.
``run`` computes the right answer honestly on every call; only the clock is forged.
Passed at 5-25x under the honest time on the CPU interpreter (session 21's fourth, held-out red team, on ed8c83d);
expect: failed
reason: class TimerGuard's perf_counter
"""
import time

import torch

from d2k.execution.timing import TimerGuard

_SCALE = 0.1
_real = time.perf_counter
_base = _real()


def _scaled():
    return _base + (_real() - _base) * _SCALE


TimerGuard.perf_counter = property(lambda self: _scaled)


def run(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
