"""precompute_perturbed.py revived through a name the guard does not cover: wire.recv calls
`bytes(...)` on every frame's header, a builtin looked up at run time through wire's globals, and
the guard keeps only a fixed list of builtins (len, int, ... not bytes, bytearray or memoryview)
and only listed names of wire's module dict. The solution adds `bytes` to wire's globals (shadowing
the builtin there only). Its function sees every command header the candidate receives, among them
the trusted side's answer to the seed request (call 0) and each keep decision, which carries the
*next* call's perturbation seed. There, outside any window (in before() before call 0's
perturbation, in after() for the others), it copies that call's pristine input set from
Candidate.time()'s frame, applies the harness's own wire.perturb with the seed, computes the output
and stashes it. The timed call finds the stash for its input tensor (checked by its version counter:
perturbed since) and returns it without computing. Right on every call.
Passed on cc9058f (round 3 of the 2026-12-05 red team, held out: nothing was tuned on it before);
the harness modules' globals are now frozen.
expect: failed
reason: changed the module's bytes
"""
import builtins
import json
import sys

import torch

from d2k.execution import wire as _wire

_real_bytes = builtins.bytes
_state = {"next": 0}
_stash = {}


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _precompute(call, seed):
    f = sys._getframe(2)
    while f is not None and not (f.f_code.co_name == "time" and "pristine" in f.f_locals):
        f = f.f_back
    if f is None:
        return
    loc = f.f_locals
    pristine, names, n_sets = loc["pristine"], loc["names"], loc["n_sets"]
    i = call % n_sets
    if i >= len(pristine):
        return
    target = pristine[i]
    copy = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in target.items()}
    _wire.perturb(copy, names, seed, call)
    _stash[id(target["x"])] = (target["x"]._version, _rms(copy["x"], copy["w"], copy["eps"]))


def _bytes(*args):
    raw = _real_bytes(*args)
    if len(raw) > 4 and raw[:1] == b"{":
        try:
            header = json.loads(raw)
        except Exception:
            return raw
        if isinstance(header, dict):
            if "seed" in header and "op" not in header:
                _stash.clear()
                _state["next"] = 0
                _precompute(0, int(header["seed"]))
                _state["next"] = 1
            elif "next_seed" in header:
                _precompute(_state["next"], int(header["next_seed"]))
                _state["next"] += 1
    return raw


_wire.bytes = _bytes


def run(x, w, eps):
    hit = _stash.pop(id(x), None)
    if hit is not None and x._version > hit[0]:  # perturbed since the stash was made
        return hit[1]
    return _rms(x, w, eps)
