"""fixup_kept.py revived through an instance attribute of the harness's Candidate object. The guard
protects `Candidate.outputs` on the class, but `self.outputs(...)` finds an instance attribute
first, and the Candidate instance (reached at import through Candidate.load's frame) is never
frozen. The solution sets `candidate.outputs` to a function of its own. run() never computes
anything: it returns an uninitialised tensor from every call, checked or timed. The shadow
outputs() is what packs a result for the trusted side: in a correctness call it computes the right
answer from the call's inputs (its `args`); in the timing loop it runs only for a kept call, after
the keep decision, and computes the answer from after()'s input set (after()'s frame: `sets[i]`).
Unkept timed calls stay garbage; every checked one is right; the window holds an allocation only.
Passed on cc9058f (round 3 of the 2026-12-05 red team, held out: nothing was tuned on it before);
the candidate object is now frozen before the import.
expect: failed
reason: changed the Candidate's outputs
"""
import sys

import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _install():
    f = sys._getframe(1)
    while f is not None:
        me = f.f_locals.get("self")
        if type(me).__name__ == "Candidate":
            original = type(me).outputs

            def outputs(result, args, returned, mutated):
                caller = sys._getframe(1)
                if caller.f_code.co_name == "after":
                    loc = caller.f_locals
                    inputs = loc["sets"][loc["i"]]
                else:
                    inputs = args
                right = _rms(inputs["x"], inputs["w"], inputs["eps"])
                return original(me, right, args, returned, mutated)  # noqa: B023 - bound once, the loop ends there

            me.outputs = outputs
            return True
        f = f.f_back
    return False


_INSTALLED = _install()


def run(x, w, eps):
    return torch.empty_like(x)  # never the answer
