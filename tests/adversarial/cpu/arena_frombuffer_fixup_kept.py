"""fixup_kept through a torch function the guard does not keep: ``torch.frombuffer``. A frame whose
tensors hold at least 1 MiB (``wire.ARENA_MIN_BYTES``: every rmsnorm bench workload's output but
the decode one's) is sent through the shared arena, and ``Arena.write`` looks ``torch.frombuffer``
up on the torch module at every call. The guard protects five names of torch's
(``sum``, ``profiler``, ``cuda``, ``_C``, ``Tensor``), not this one. A timed call returns an
uninitialised tensor at once; when the harness sends a *kept* call's outputs (after the keep
decision, from ``after()``), the replacement finds ``after()``'s frame, writes the right answer,
computed from ``sets[i]``, into ``copies`` (the harness's copy, which the blob being written is a
byte view of), then calls the real function. Unkept timed calls stay garbage. Calls whose output
crosses the pipe (under 1 MiB: the smoke workloads, the decode one) and correctness calls compute
honestly. Needs ``--workloads all`` (or bench) to reach the arena under the interpreter.
Passed at 5-25x under the honest time on the CPU interpreter (session 21's fourth, held-out red team, on ed8c83d);
on the smoke workloads it computes honestly by design (its frames are under 1 MiB); on
the bench workloads it passed at 45-60 us against 66-287 ms honest before torch.frombuffer was captured.
expect: passed
median_at_least_of_control: 0.3
"""
import sys

import torch

_real_frombuffer = torch.frombuffer


def _rmsnorm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _frombuffer(*args, **kwargs):
    frame = sys._getframe(1)
    if frame.f_code.co_name == "write":
        while frame is not None and frame.f_code.co_name != "after":
            frame = frame.f_back
        if frame is not None:
            loc = frame.f_locals
            copies, sets, i = loc.get("copies"), loc.get("sets"), loc.get("i")
            if type(copies) is torch.Tensor and sets is not None:
                s = sets[i]
                copies.copy_(_rmsnorm(s["x"], s["w"], s["eps"]))
    return _real_frombuffer(*args, **kwargs)


torch.frombuffer = _frombuffer


def run(x, w, eps):
    f1 = sys._getframe(1)
    timed = f1.f_code.co_name == "call" and f1.f_back is not None and f1.f_back.f_code.co_name == "measure"
    if timed and x.numel() * x.element_size() >= (1 << 20):
        return torch.empty_like(x)  # nothing computed: only a kept call's copy is fixed, after the decision
    return _rmsnorm(x, w, eps)
