"""Returns, from every call, a list subclass holding nothing yet: the work runs when the harness
first iterates it or asks its length, which happens after the timed window closes (the timing
loop's `after` copies the outputs with `type(result)(c_clone(r) ... for r in result)`, calling the
solution's own class and its `__iter__`; `outputs()` calls its `__len__`/`__getitem__`). Every
output the trusted side sees is right, and the timed window holds only building an empty object.
Passed before 2026-12-05 at about 14x under the honest time (CPU); a result must now be exactly a
torch.Tensor, a tuple or a list.
expect: failed
reason: not exactly a torch.Tensor
"""
import torch


def _rmsnorm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


class Lazy(list):
    def __init__(self, items=(), thunk=None):
        list.__init__(self, items)
        self.thunk = thunk

    def _force(self):
        thunk = getattr(self, "thunk", None)
        if thunk is not None:
            self.thunk = None
            list.append(self, thunk())

    def __iter__(self):
        self._force()
        return list.__iter__(self)

    def __len__(self):
        self._force()
        return list.__len__(self)

    def __getitem__(self, i):
        self._force()
        return list.__getitem__(self, i)


def run(x, w, eps):
    return Lazy(thunk=lambda: _rmsnorm(x, w, eps))
