"""input_attr_del_rewrite.py moved from the inputs to the output, and to a moment before the
snapshot. before() refuses attributes hung on the harness's *input* tensors, but nothing looks at
the output's: run() computes honestly and hangs an object with a __del__ on its output y (which
stays exactly a torch.Tensor; after() copies it with the C clone). The last reference to a timed
call's y is WallTimer.measure()'s local `result`: y dies when measure() returns, i.e. after the
guard's last check in measure() and before Candidate.time() takes its snapshot of the figures
(`measured = json.dumps(timing)`), so the snapshot already holds what the __del__ wrote. The
__del__ finds measure()'s freshly built result dict with gc.get_objects() (no frame is read or
written) and divides its per-call times by ten in place. Earlier outputs die inside the window
when the next call's result is bound: the __del__ sees measure() as its caller there (it reads the
name of its caller's code, nothing more) and returns at once.
Every call is right; only the reported figure is forged.
Passed at 5-12x under the honest time on the CPU interpreter (session 21's held-out red team, on f4601d4);
after the fix it passes at its honest time: it gains nothing.
expect: passed
median_at_least_of_control: 0.3
"""
import gc
import sys

import torch

_done = set()


class _Bomb:
    __slots__ = ()

    def __del__(self):
        # inside the window (the next call's result replacing this one) the caller is measure():
        # nothing to do there, and a gc walk would cost milliseconds of the next call's time
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
    y.marker = _Bomb()
    return y
