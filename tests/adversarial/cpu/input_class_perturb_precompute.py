"""Does each timed call's work inside the harness's own perturbation, before the clock starts, with
no frame walk, no patched name, no hook, no thread and no ctypes. run() receives the harness's own
pristine input tensors (an input the op does not write is passed as the very object the harness
keeps in `pristine[i]`), and sets `x.__class__` to a torch.Tensor subclass of its own (allowed:
Tensor instances carry a __dict__, so the layouts match). before() refuses a tensor with attributes
only when `type(t) is torch.Tensor`, and nothing else looks at the inputs' types. Before every later
timed call on that input set, `wire.perturb` works on x with the C types' methods (view, roll, copy_,
__getitem__, __setitem__), which still honour a subclass's __torch_function__ (perturb does not run
under DisableTorchFunction). So the subclass sees every step of the perturbation; at x's second
`__setitem__` (the last move; w, sorted first, is already final) the inputs the call will get are
final: it computes the output there, outside the timed window, and stashes it. The timed call
returns the stash. Right on every call; the first timed call on the second input set (not yet
converted) is computed honestly.
Passed at 5-12x under the honest time on the CPU interpreter (session 21's held-out red team, on f4601d4);
expect: failed
reason: changed the type of an input
"""
import torch

_DTF = torch._C.DisableTorchFunction
_plain = torch._C.TensorBase.as_subclass
_SETITEM = torch._C.TensorBase.__setitem__

_partner = {}   # storage address of x -> (x, w, eps) for the x tensors turned into Sneaky
_stash = {}     # storage address of x -> y computed during the perturbation
_moves = {}     # storage address of x -> number of __setitem__ seen


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


class Sneaky(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        out = super().__torch_function__(func, types, args, kwargs or {})
        if func is _SETITEM:
            with _DTF():
                key = args[0].untyped_storage().data_ptr()
                if key in _partner:
                    n = _moves.get(key, 0) + 1
                    _moves[key] = n
                    if n % 2 == 0:  # perturb's last move on x: the call's inputs are final
                        x, w, eps = _partner[key]
                        _stash[key] = _rms(_plain(x, torch.Tensor), _plain(w, torch.Tensor), eps)
        return out


def run(x, w, eps):
    with _DTF():
        key = x.untyped_storage().data_ptr()
    y = _stash.pop(key, None)
    if y is not None and _partner[key][0] is x and _partner[key][1] is w:
        return y
    with _DTF():
        if type(x) is torch.Tensor:
            x.__class__ = Sneaky
        _partner[key] = (x, w, eps)
        _moves[key] = 0
        return _rms(_plain(x, torch.Tensor), _plain(w, torch.Tensor), eps)
