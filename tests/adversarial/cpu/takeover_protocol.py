"""Takes over the candidate's end of the wire protocol: the first time run() is called by the
timing loop's warm-up, it does not return. It finds the harness's Candidate object in its callers'
frames and, with the harness's own (unpatched) reply/recv functions, speaks the timing protocol
itself: asks for the seed, announces every timed call as issued without running anything, reads
each keep decision and only then computes the kept calls' outputs (replaying the perturbation on
the pristine sets, as the trusted side does), and finally replies ok with per-call times of its
choosing (1 us each). It then re-enters the harness's serve loop so later commands (next workload,
exit) are answered normally. No function is replaced and no thread is started, so neither the
timer guard nor the thread watch has anything to see; unkept timed calls are never computed.
Passed before 2026-12-05 with 1 us per call (CPU); a harness message sent with the solution's
code on the stack now fails the evaluation. A takeover that frames the messages itself and
writes them with os.write is not stopped (SECURITY.md).
expect: failed
reason: only the harness speaks
"""
import os
import sys

import torch


def _compute(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _takeover(frame):
    while frame is not None and frame.f_code.co_name != "time":
        frame = frame.f_back
    loc = frame.f_locals
    cand, wire = loc["self"], loc["wire"]
    pristine, names, n_sets = loc["pristine"], loc["names"], loc["n_sets"]
    returned, mutated = loc["returned"], loc["mutated"]
    reps = int(loc["settings"].get("interpreter_reps", 3))
    cand.reply({"op": "seed", "call": 0})
    seed = int(wire.recv(cand.cmd_fd, 0)[0]["seed"])
    for j in range(reps):
        i = j % n_sets
        wire.perturb(pristine[i], names, seed, j)   # the inputs call j "ran" on, as the trusted side replays them
        cand.reply({"op": "issued", "call": j})     # nothing was run
        decision, _ = wire.recv(cand.cmd_fd, 0)
        seed = int(decision["next_seed"])
        if decision.get("keep"):
            out = _compute(**pristine[i])            # only now, and only for the calls that are checked
            metas, blobs, facts = cand.outputs(out, {}, returned, mutated)
            cand.reply({"op": "kept", "call": j, "outputs": metas, "facts": facts}, blobs)
    cand.reply({"ok": True, "seconds": 0.01, "timing": {
        "method": "interpreter_wall", "samples_ms": [0.001] * reps, "warmup_calls": 1, "input_sets": n_sets}})
    cand.serve()      # the harness answers the rest (next workload, exit)
    os._exit(0)


def run(x, w, eps):
    caller = sys._getframe(1)
    if caller.f_code.co_name == "call" and caller.f_back is not None and caller.f_back.f_code.co_name == "measure":
        _takeover(caller)
    return _compute(x, w, eps)
