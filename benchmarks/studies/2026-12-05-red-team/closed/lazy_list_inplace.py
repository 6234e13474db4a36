"""The lazy-list deferral on a task whose outputs are written in place (fused_add_rmsnorm returns
nothing): inside the timing loop (its caller's caller is `measure`) run() writes nothing and returns
a list subclass whose `__iter__` does the in-place writes. The loop's `after` iterates the result
(`type(result)(... for r in result)`) before it copies the written inputs, so the copies, and the
kept outputs, hold the right values, and the window held nothing. Outside the loop (correctness
calls, where the result of an in-place op is never looked at) it works honestly.
expect: failed
reason: TODO
"""
import sys

import torch


def _fused(x, residual, w, eps):
    r = x.float() + residual.float()
    residual.copy_(r.to(residual.dtype))
    rstd = torch.rsqrt(r.pow(2).mean(-1, keepdim=True) + eps)
    x.copy_((r * rstd).to(x.dtype) * w)


class Later(list):
    def __init__(self, items=(), job=None):
        list.__init__(self, items)
        self.job = job

    def __iter__(self):
        job, self.job = getattr(self, "job", None), None
        if job is not None:
            job()
        return list.__iter__(self)


def run(x, residual, w, eps):
    caller = sys._getframe(2)
    if caller is not None and caller.f_code.co_name == "measure":
        return Later(job=lambda: _fused(x, residual, w, eps))
    _fused(x, residual, w, eps)
    return None
