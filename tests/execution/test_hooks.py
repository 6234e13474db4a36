"""What lets a solution run its own code inside the harness's between its calls: hooks on the
interpreter's events (refused, and checked), names the perturbation looks up at run time (none
left), results whose type runs code when read (refused)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from d2k.execution import wire

LOCKED = r"""
import gc, json, signal, sys, threading
from d2k.execution.hooks import HookWatch

original_setprofile = sys.setprofile  # what a solution that digs (gc, ctypes) could still reach
watch = HookWatch()
watch.lock()
gc.disable()
refused = {}
for name, attempt in {
    "sys.setprofile": lambda: sys.setprofile(lambda *a: None),
    "sys.settrace": lambda: sys.settrace(lambda *a: None),
    "threading.settrace": lambda: threading.settrace(lambda *a: None),
    "signal.signal": lambda: signal.signal(signal.SIGALRM, lambda *a: None),
}.items():
    try:
        attempt()
        refused[name] = False
    except Exception as exc:
        refused[name] = type(exc).__name__
# an audit hook is dropped quietly (libraries add them at import: filelock does): never called
heard = []
sys.addaudithook(lambda event, args: heard.append(event))
sys.audit("d2k.test_event")
refused["sys.addaudithook"] = "dropped" if not heard else False
signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # ignoring a signal runs no Python code: allowed
gc.enable()  # does nothing for a solution
checks = {}
watch.check()
checks["clean"] = "passed"
for name, install, remove in [
    ("profile", lambda: original_setprofile(lambda *a: None), lambda: original_setprofile(None)),
    ("gc_callback", lambda: gc.callbacks.append(lambda *a: None), lambda: gc.callbacks.pop()),
]:
    install()
    try:
        watch.check()
        checks[name] = "passed"
    except Exception as exc:
        checks[name] = str(exc)
    remove()
print(json.dumps({"refused": refused, "gc_enabled": gc.isenabled(), "checks": checks}))
"""


def test_the_hook_installers_are_refused_and_a_hook_put_in_place_anyway_is_caught():
    # before: sys.setprofile, sys.addaudithook and signal.signal were free, and red-team files did a
    # call's work after the stop time was read, fixed kept outputs after the keep decision and
    # rewrote the timing reply (tests/adversarial/cpu/profile_*.py, audit_defer_work.py, ...)
    proc = subprocess.run([sys.executable, "-c", LOCKED], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["refused"].pop("sys.addaudithook") == "dropped"
    assert result["refused"] == dict.fromkeys(result["refused"], "TimerTampered") and len(result["refused"]) == 4
    assert result["gc_enabled"] is False
    assert result["checks"]["clean"] == "passed"
    assert "profile or trace function" in result["checks"]["profile"]
    assert "garbage-collector callback" in result["checks"]["gc_callback"]


def test_the_perturbation_looks_up_no_name_a_solution_can_replace(monkeypatch):
    # the candidate perturbs its inputs right before the clock starts: a replaced name called there
    # computes the output unclocked (numpy_rng_hook_work_in_before.py did, through default_rng)
    def inputs():
        gen = torch.Generator().manual_seed(3)
        return {"x": torch.randn(64, 96, generator=gen).half(), "ids": torch.randperm(500, generator=gen).view(5, 100)}

    expected = inputs()
    wire.perturb(expected, ["ids", "x"], seed=9, call=4)

    got = inputs()

    def replaced(*args, **kwargs):
        raise AssertionError("perturb called a name a solution can replace")

    for owner, names in ((np.random, ("default_rng",)), (np, ("arange",)), (torch, ("roll", "as_tensor")),
                         (torch.Tensor, ("view", "copy_", "clone", "__getitem__", "__setitem__", "numel", "dim",
                                         "element_size", "is_contiguous"))):
        for name in names:
            monkeypatch.setattr(owner, name, replaced)
    wire.perturb(got, ["ids", "x"], seed=9, call=4)
    monkeypatch.undo()
    assert all(torch.equal(got[k], expected[k]) for k in expected)


@pytest.mark.parametrize("kind", ["list", "tuple"])
def test_a_result_whose_type_runs_code_when_read_fails_the_call(kind, tmp_path):
    # before: the copy of a list subclass ran its __iter__ after the window closed, and a kept copy
    # ran its __getitem__ after the keep decision (lazy_list_recompute_on_keep.py returned zeros
    # from every unchecked call and passed)
    from d2k.execution import batch, candidate

    cand = candidate.Candidate.__new__(candidate.Candidate)
    cand.wire, cand.batch_module = wire, batch
    base = {"tuple": tuple, "list": list}[kind]
    sub = type("Later", (base,), {})
    metas, blobs, facts = cand.outputs(sub([torch.ones(2)]), {}, ["y"], [])
    assert "error" in facts and "Later" in facts["error"]
