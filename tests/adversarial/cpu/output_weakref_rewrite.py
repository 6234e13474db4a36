"""output_attr_del_rewrite.py without an attribute: a weakref callback on the output tensor (a
plain weakref.ref kept by the solution; weakref.finalize would do as well), so a check that refused
attributes on outputs as on inputs would not see it. The last reference to a timed call's y is
WallTimer.measure()'s local `result`; y dies when measure() returns, after the guard's last check
there and before Candidate.time() snapshots the figures. The callback finds measure()'s freshly
built result dict with gc.get_objects() and divides its per-call times by ten in place. Earlier
outputs die inside the window (when the next result is bound): the callback sees measure() as its
caller's code there and returns at once. Every call is right; only the figure is forged.
Passed at 5-12x under the honest time on the CPU interpreter (session 21's held-out red team, on f4601d4);
after the fix it passes at its honest time: it gains nothing.
expect: passed
median_at_least_of_control: 0.3
"""
import gc
import sys
import weakref

import torch

_done = set()
_refs = set()


def _gone(ref):
    _refs.discard(ref)
    if sys._getframe(1).f_code.co_name == "measure":
        return
    for obj in gc.get_objects():
        if type(obj) is dict and obj.get("method") == "interpreter_wall" and id(obj) not in _done:
            samples = obj.get("samples_ms")
            if type(samples) is list and samples:
                _done.add(id(obj))
                for k in range(len(samples)):
                    samples[k] = samples[k] / 10


def run(x, w, eps):
    xf = x.float()
    y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
    _refs.add(weakref.ref(y, _gone))
    return y
