"""Right only on the timed calls the harness keeps, garbage on the others, with no function
replaced. run() returns a list subclass; the timing loop copies it with `type(result)(...)`, i.e.
it builds the copy with the solution's own class, and reads a kept call's copy (after the decision
to keep it has arrived) with that class's `__len__`/`__getitem__`. The class hands out
zeros when iterated (so the copy taken before the decision holds garbage) and
computes the right answer from the call's inputs only when an element is read, which the harness
does for kept copies (and for the untimed correctness calls) only.
Passed before 2026-12-05, wrong on every unchecked timed call; a result must now be exactly a
torch.Tensor, a tuple or a list.
expect: failed
reason: not exactly a torch.Tensor
"""
import torch

_LAST = {}


def _rmsnorm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w

class Outputs(list):
    def __iter__(self):
        # what the harness copies before it knows whether the call is checked: garbage
        return iter([torch.zeros_like(_LAST["x"])])

    def __len__(self):
        return 1

    def __getitem__(self, i):
        # read only when the output is sent: the correctness calls, and kept timed calls
        return _rmsnorm(_LAST["x"], _LAST["w"], _LAST["eps"])

def run(x, w, eps):
    _LAST.update(x=x, w=w, eps=eps)
    return Outputs()
