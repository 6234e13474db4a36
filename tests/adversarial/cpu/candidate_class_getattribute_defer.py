"""Adds a ``__getattribute__`` to the harness's ``Candidate`` *class* (``sys.modules['__main__']``,
the candidate runs as ``python -m d2k.execution.candidate``). The guard freezes the Candidate
instance's own attributes and protects six of the class's methods by name (``outputs``, ``time``,
``call``, ``reply``, ``serve``, ``batch``), compared as stored along the MRO, and the class's type
and MRO; a new key in the class's namespace changes none of these. Every ``self.x`` in the
harness's methods then runs the solution's function. ``run`` returns an uninitialised tensor at
once and remembers (x, w, eps, y); the first ``self.`` lookup after the call, ``self.guard`` in
``after()`` (the line that opens it, before the guard's check and the copy) or ``self.sync`` in
``Candidate.call``, computes y in place. The clock stops before that, so each timed call costs
an empty allocation; every output is right when copied.
Passed at 5-25x under the honest time on the CPU interpreter (session 21's fourth, held-out red team, on ed8c83d);
expect: failed
reason: class Candidate's __getattribute__
"""
import sys

import torch

_PENDING = []


def _rmsnorm_into(x, w, eps, y):
    xf = x.float()
    y.copy_((xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w)


def _finish():
    while _PENDING:
        _rmsnorm_into(*_PENDING.pop())


def _install():
    main = sys.modules.get("__main__")
    klass = getattr(main, "Candidate", None)
    if klass is None:
        return
    base = object.__getattribute__

    def __getattribute__(self, name):
        if _PENDING and name != "fn":
            _finish()
        return base(self, name)

    klass.__getattribute__ = __getattribute__


_install()


def run(x, w, eps):
    y = torch.empty_like(x)
    _PENDING.append((x, w, eps, y))
    return y
