"""Candidate.time() imports its timer lazily at every timing (`from d2k.execution.timing import
CudaTimer, TimerTampered, WallTimer`), which reads `sys.modules["d2k.execution.timing"]`. The guard
protects attributes of the real timing module object (and the real classes' methods), not which
object sys.modules holds under that name. The solution leaves the real module untouched and puts a
copy in sys.modules whose WallTimer is a subclass handing the inherited, unchanged measure() a clock
scaled by 1/20. Computes the right result on every call.
expect: failed
reason: TODO
"""
import sys
import types

import torch

from d2k.execution import timing as _timing

_SCALE = 0.05


class _Clock:
    def __init__(self, real):
        self._real = real
        pc = real.perf_counter
        self.perf_counter = lambda: pc() * _SCALE

    def __getattr__(self, name):
        return getattr(self._real, name)


class _WallTimer(_timing.WallTimer):
    def __init__(self, guard, settings):
        super().__init__(_Clock(guard), settings)


_fake = types.ModuleType(_timing.__name__)
_fake.__dict__.update(_timing.__dict__)
_fake.WallTimer = _WallTimer
sys.modules[_timing.__name__] = _fake


def run(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
