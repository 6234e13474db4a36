"""The lazy-list deferral of cpu/lazy_list_result.py, kept partial so that the
GPU's cross-checks see a plausible figure: inside the window the call launches only the row
statistics (x.float(), square, mean, rsqrt: about 18 of eager's 40 bytes per element); the
normalisation and the multiply by w are launched from the returned list subclass's `__iter__`,
which the timing loop's `after` calls after `end.record()` (CudaTimer.measure's `one`), so they land
after the end event. The profiled probe (call 0 since 4952cb0, CudaTimer.profiled_probe) hands its result to `after`
only once profile_streams has returned, so its kernel time, the "under half the probe" bound,
shrinks with the window too, and its checked output is right; in
span mode the deferred kernels are launched outside every d2k_call_j range and are not counted. The
window still holds real device work, well above the speed-of-light floor (4 bytes per element).
Written on 2026-12-05 from reading the code (no GPU then); a result must now be exactly a
torch.Tensor, a tuple or a list, so it fails at its first checked call.
expect: failed
reason: not exactly a torch.Tensor
"""
import torch


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
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)  # in the window
    return Lazy(thunk=lambda: (xf * rstd).to(x.dtype) * w)      # after the end event
