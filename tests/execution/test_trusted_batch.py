"""The trusted batch (d2k/execution/batch.py): a solution's calls timed by the trusted side's own
clock until it holds each call's outputs, three of them, chosen in secret beforehand, compared with
the reference. It catches a figure understated inside the candidate's process, which the
in-process layer cannot (the red team's ctypes rebinding of the loop's start time, open since
2026-12-05), and a batch faked in part is caught when checked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from d2k.content import Benchmark
from d2k.execution import batch, sandbox
from d2k.solutions import resolve
from d2k.store import Store
from d2k.supervisor import Limits, timing_flags
from d2k.sweep import Plan, run_sweep


def test_the_price_is_a_low_quantile():
    assert batch.low_quantile([5.0, 1.0, 3.0, 2.0, 4.0], 0.0) == 1.0
    assert batch.low_quantile([5.0, 1.0, 3.0, 2.0, 4.0], 1.0) == 5.0
    assert batch.low_quantile([5.0, 1.0, 3.0, 2.0, 4.0], 0.2) == pytest.approx(1.8)  # between the first two, linearly
    assert batch.low_quantile([7.0], 0.2) == 7.0


def _timing(median_ms: float, per_call_ms: float, null_ms: float) -> dict:
    return {"method": "interpreter_wall", "samples_ms": [median_ms] * 3,
            "trusted_batch": {"calls": 20, "per_call_ms": per_call_ms, "null_per_call_ms": null_ms, "allowance_ms": 0.0}}


def test_a_median_under_half_the_batch_excess_is_suspect():
    assert timing_flags(_timing(0.060, 0.090, 0.030), [0.060] * 3) == []
    (flag,) = timing_flags(_timing(0.005, 0.090, 0.030), [0.005] * 3)
    assert "under half the 60.00 us per call" in flag


def test_on_a_gpu_the_flag_leaves_room_for_the_host_work_the_figure_leaves_out():
    # the honest rmsnorm expert at h7168_t64 on an H100 (session 24): a 2.18-us device figure, and
    # warm round trips priced 2.6263 ms (solution) and 2.0845 ms (null): host work, not a forgery
    from d2k.execution.batch import BATCH_ALLOWANCE_GPU_MS

    timing = _timing(0.00218, 2.6263, 2.0845)
    timing["trusted_batch"]["allowance_ms"] = 0.05
    assert "under half the 541.80 us per call" in timing_flags(timing, [0.00218] * 3)[0]
    timing["trusted_batch"]["allowance_ms"] = BATCH_ALLOWANCE_GPU_MS
    assert timing_flags(timing, [0.00218] * 3) == []
    # restart_window.py's emptied window there: an excess of 20.8 ms against a 1.2-us figure
    timing = _timing(0.00125, 36.1435, 15.3572)
    timing["trusted_batch"]["allowance_ms"] = BATCH_ALLOWANCE_GPU_MS
    assert "under half the 20786.30 us per call" in timing_flags(timing, [0.00125] * 3)[0]


def test_a_failed_pricing_is_not_a_pass():
    # the pricing process failed (timing.trusted_batch.null_error): no price, no bound, and a
    # solution can make it fail (on a GPU, by taking the memory it needs), so the record is suspect
    # whatever its median
    for median_ms in (0.005, 0.060):
        timing = _timing(median_ms, 0.090, 0.030)
        del timing["trusted_batch"]["null_per_call_ms"]
        timing["trusted_batch"]["null_error"] = "CandidateFailed: the pricing process ran out of memory"
        (flag,) = timing_flags(timing, [median_ms] * 3)
        assert "pricing process failed (CandidateFailed: the pricing process ran out of memory)" in flag


def test_calls_cheaper_than_the_pricing_process_are_suspect():
    # a solution that skipped part of the loop's own work (its own, cheaper perturbation: session
    # 21's batch red team) costs the trusted side less than a process that computes nothing
    (flag,) = timing_flags(_timing(0.005, 0.285, 0.330), [0.005] * 3)
    assert "45.00 us less than the pricing process's" in flag
    # an honest call costs more than nothing
    assert timing_flags(_timing(0.050, 0.400, 0.330), [0.050] * 3) == []


def test_pricing_calls_during_which_the_solution_ran_are_suspect():
    for freezer in ("cgroup", "sigstop"):
        timing = _timing(0.050, 0.400, 0.330)
        timing["trusted_batch"].update(freezer=freezer, calls_alone={"solution": 20, "null": 17},
                                       null_samples_ms=[0.33] * 20)
        (flag,) = timing_flags(timing, [0.050] * 3)
        assert "not stopped during 3 of 20 pricing calls" in flag
        timing["trusted_batch"]["calls_alone"]["null"] = 20
        assert timing_flags(timing, [0.050] * 3) == []
    # where nothing could stop the tree (no /proc, a refused signal), nothing is claimed
    timing["trusted_batch"].update(freezer="none", calls_alone={"solution": 0, "null": 0})
    assert timing_flags(timing, [0.050] * 3) == []


pytestmark_e2e = pytest.mark.skipif(not sandbox.namespaces_available(),
                                    reason="unshare --mount --net --pid is refused here")

# The red team's ctypes_rebind_t0.py (benchmarks/studies/2026-12-05-red-team/open/) with a call
# slow enough (about 2 ms: forty passes) that the interpreter's round-trip noise (tens of us) cannot
# hide it: after computing, it rebinds the loop's start time through PyFrame_LocalsToFast, so each
# timed call reads as a few microseconds
SLOW_REBIND = '''
import ctypes
import sys
import time

import torch


def run(x, w, eps):
    for _ in range(40):
        xf = x.float()
        y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "measure" and "t0" in frame.f_locals):
        frame = frame.f_back
    if frame is not None:
        frame.f_locals["t0"] = time.perf_counter()
        ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))
    return y
'''

SKIPS_IN_THE_BATCH = '''
import sys

import torch


def run(x, w, eps):
    batch = any(sys._getframe(k).f_code.co_name == "batch_call" for k in range(1, 4))
    if batch:
        return torch.empty_like(x)  # nothing computed inside the trusted clock
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
'''


def _evaluate(tmp_path: Path, solutions: list[str]) -> list[dict]:
    os.environ["D2K_WORKDIR"] = str(tmp_path / "work")
    bench = Benchmark.load(only=["rmsnorm"])
    workloads = bench.select_workloads("rmsnorm", "smoke")[:1]
    plans = [Plan(resolve(bench, "rmsnorm", s), workloads) for s in solutions]
    store = Store(tmp_path / "batch.duckdb")
    result = run_sweep(bench, store, plans, "interpreter", "test", {}, limits=Limits(per_workload_s=120),
                       timing={"trusted_batch": True})
    store.close()
    return [next(r for r in result.records if r["solution_id"] == p.solution.solution_id) for p in plans]


@pytestmark_e2e
def test_honest_solutions_pass_with_the_batch_and_understated_ones_are_caught(tmp_path):
    forged = tmp_path / "slow_rebind.py"
    forged.write_text(SLOW_REBIND)
    skips = tmp_path / "skips_in_the_batch.py"
    skips.write_text(SKIPS_IN_THE_BATCH)
    expert, rebind, skipper = _evaluate(tmp_path, ["expert", str(forged), str(skips)])
    if expert["status"] == "timing_suspect" and "trusted side's own clock" in (expert["reason"] or ""):
        # CI's two workers share two cores: the batch's 120 calls can fall in a busy stretch that the
        # in-process figure's 4 calls missed (once: 5.7 ms in-process against 14.1 ms of excess).
        # One re-run, for the honest expert only; the understated files below get none.
        (expert,) = _evaluate(tmp_path / "again", ["expert"])
    assert expert["status"] == "passed", expert["reason"]
    tb = expert["timing"]["trusted_batch"]
    assert tb["calls"] == 60 and len(tb["checked_calls"]) == 3 and tb["per_call_ms"] > tb["null_per_call_ms"] > 0
    # the two processes' calls shuffled together, each timed with the other stopped
    assert sorted(tb["order"]) == ["n"] * 60 + ["s"] * 60 and "ss" in tb["order"] and "nn" in tb["order"]
    pairs = list(zip(tb["order"], tb["order"][1:]))
    assert tb["warm_calls"] == {"solution": pairs.count(("s", "s")), "null": pairs.count(("n", "n"))}
    assert len(tb["samples_ms"]) == len(tb["null_samples_ms"]) == 60
    assert min(tb["calls_alone"].values()) >= 54, tb["calls_alone"]
    # where the warm round trips' time went, per side: the trusted clock's three parts, and the
    # candidate's own report of its part, which fits inside the send and the wait that hold it in
    # every call (in the send when this process lost its core while writing the seed: on CI's two
    # shared cores the median wait was once 4 us against a 177-us call). So the median of the
    # per-call sums is ordered too; the sum of the parts' medians is not (a run under load once had
    # 0.05 ms more than it)
    for side in ("solution", "null"):
        phases = tb["phases_ms"][side]
        assert set(phases) == {"send", "wait", "read", "send_wait", "cand_call", "cand_sync", "cand_pack",
                               "cand_total"}, phases
        assert all(v >= 0 for v in phases.values()), phases
        # 1e-4 ms: the candidate rounds each of its parts to 0.1 us
        assert phases["cand_total"] <= phases["send_wait"] + 1e-4, phases
    assert tb["phases_ms"]["solution"]["cand_call"] > tb["phases_ms"]["null"]["cand_call"]   # only one computes
    # rebinding t0 through ctypes passes the in-process checks (open in SECURITY.md)
    assert rebind["status"] == "timing_suspect", (rebind["status"], rebind["reason"], rebind["timing"].get("trusted_batch"))
    assert "trusted side's own clock" in rebind["reason"]
    assert skipper["status"] == "failed" and "trusted batch call" in skipper["reason"], skipper["reason"]
