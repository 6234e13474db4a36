"""The timing loop's after() copies each timed call's output inside
`with torch._C.DisableTorchFunction():`, a name it looks up on torch._C at every call; the guard
protects torch.Tensor's methods, torch.sum, the profiler... but not torch._C.DisableTorchFunction.
The solution replaces it with a context manager class whose __enter__ (run by after(), once the
window has closed and before the copy is taken) finds after()'s frame and computes the right output
into the returned tensor in place. Timed calls return an uninitialised tensor at once.
Passed before 2026-12-05's second round at about 5x under the honest time (CPU); the name is now
captured before the timing loop and guarded.
expect: failed
reason: DisableTorchFunction
"""
import sys

import torch

_REAL = torch._C.DisableTorchFunction


def _compute(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


class DisableTorchFunction:
    def __init__(self):
        self.inner = _REAL()

    def __enter__(self):
        frame = sys._getframe(1)
        if frame.f_code.co_name == "after":
            loc = frame.f_locals
            result, sets, i = loc.get("result"), loc.get("sets"), loc.get("i")
            if type(result) is torch.Tensor and sets is not None:
                result.copy_(_compute(**sets[i]))
        return self.inner.__enter__()

    def __exit__(self, *exc):
        return self.inner.__exit__(*exc)


torch._C.DisableTorchFunction = DisableTorchFunction


def run(x, w, eps):
    caller = sys._getframe(1)
    if caller.f_back is not None and caller.f_back.f_code.co_name == "measure":
        return torch.empty_like(x)  # the warm-up (never checked) or a timed call: __enter__ fills it in after the window
    return _compute(x, w, eps)
