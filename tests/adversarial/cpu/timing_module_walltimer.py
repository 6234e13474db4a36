"""Candidate.time() looks its timer classes up by name at every timing, `from d2k.execution.timing
import CudaTimer, TimerTampered, WallTimer`; the guard protects `WallTimer.measure` and
`CudaTimer.measure/flush_l2/...` on the original classes, and five functions of the timing module,
but not the module's names `WallTimer`/`CudaTimer` themselves. The solution (which can import the
harness's d2k package: it is bound back into the sandbox) rebinds `timing.WallTimer` to a subclass
whose __init__ hands the inherited (unchanged) measure() a clock of its own: the real one scaled by
1/20 (the instance attributes are frozen only after __init__, as they then are). Computes the right
result on every call.
Passed on cc9058f (round 3 of the 2026-12-05 red team, held out: nothing was tuned on it before);
the harness modules' globals are now frozen.
expect: failed
reason: changed the module's WallTimer
"""
import torch

from d2k.execution import timing as _timing

_SCALE = 0.05
_Orig = _timing.WallTimer


class _Clock:
    def __init__(self, real):
        self._real = real
        pc = real.perf_counter
        self.perf_counter = lambda: pc() * _SCALE

    def __getattr__(self, name):
        return getattr(self._real, name)


class WallTimer(_Orig):
    def __init__(self, guard, settings):
        super().__init__(_Clock(guard), settings)


WallTimer.__qualname__ = WallTimer.__name__ = "WallTimer"
WallTimer.__module__ = _Orig.__module__
_timing.WallTimer = WallTimer


def run(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
