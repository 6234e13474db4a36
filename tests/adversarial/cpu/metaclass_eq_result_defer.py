"""lazy_list_result.py revived through the very check that closed it. after() refuses a result that is
not exactly a torch.Tensor, a tuple or a list with `type(result) in (torch.Tensor, tuple, list)`:
a tuple's `in` compares with `==`, and when the left operand's type does not decide, Python asks
the right one's, i.e. the __eq__ of the result's *metaclass*. run() returns at once an instance of
a plain class (not a list or tuple subclass) whose metaclass defines __eq__ and which holds
references to the call's (final) inputs. The metaclass's __eq__ runs inside after(), once the
window has closed and before the copy: it computes the output from those inputs and answers True,
so the check passes; the copy `tuple(c_clone(r) ... for r in result)` then iterates the object,
whose __iter__ yields the computed tensor (an exact torch.Tensor). named_outputs() reads exact
types only after that. No name is replaced, no frame is read or written, no hook, no thread. Every
output, timed or checked, is right; the timed window holds building one small object.
Passed at 5-12x under the honest time on the CPU interpreter (session 21's held-out red team, on f4601d4);
expect: failed
reason: not exactly a torch.Tensor
"""
import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


class _Meta(type):
    def __eq__(cls, other):
        # reached from after()'s `type(result) in (torch.Tensor, tuple, list)`: the window is closed
        pending = cls._pending
        if pending:
            obj = pending.pop()
            obj.value = _rms(*obj.args)
        return other is tuple or other is torch.Tensor or type.__eq__(cls, other)

    __hash__ = type.__hash__


class Deferred(metaclass=_Meta):
    _pending: list = []
    __slots__ = ("args", "value")

    def __init__(self, args):
        self.args = args
        self.value = None
        Deferred._pending.append(self)

    def _done(self):
        if self.value is None:
            self.value = _rms(*self.args)
            if self in Deferred._pending:
                Deferred._pending.remove(self)
        return self.value

    def __iter__(self):
        return iter((self._done(),))

    def __len__(self):
        return 1

    def __getitem__(self, k):
        return (self._done(),)[k]


def run(x, w, eps):
    return Deferred((x, w, eps))
