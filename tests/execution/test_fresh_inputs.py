"""Fresh inputs per timed call (wire.refill, a task's FRESH_INPUTS_PER_CALL): what a row reduces to
regardless of order must not repeat from one timed call to the next."""

import json

import pytest
import torch

from d2k.execution import wire

# an honest top-k/top-p sampler (sorts every row on every call) that also prints DUP when a timed
# call's rows have the same multiset of values as a call it saw before: the row-statistics cache of
# session 21 kept each row's sorted top values from call to call and matched them so
SPOTS_REPEATS = '''
import sys

import torch

_seen = set()


def _timed():
    # the timed calls: under the interpreter call() from measure() once its loop variable j exists
    # (the warm-up call before the loop runs on the set as first sent); on a GPU call() from one()
    # with a call number j, or from probed() (call 0)
    caller = sys._getframe(2)
    loop = caller.f_back if caller.f_code.co_name == "call" else None
    if loop is None:
        return False
    if loop.f_code.co_name == "measure":
        return "j" in loop.f_locals
    return loop.f_code.co_name == "probed" or (loop.f_code.co_name == "one" and loop.f_locals.get("j") is not None)


def run(probs, top_k, top_p, u):
    vals, _ = torch.sort(probs, dim=-1, descending=True, stable=True)
    key = hash(vals.cpu().numpy().tobytes())
    if _timed():
        if key in _seen:
            print("DUP", flush=True)
    _seen.add(key)
    B = probs.shape[0]
    out = torch.empty(B, dtype=torch.int32, device=probs.device)
    csum = torch.cumsum(vals.double(), -1)
    for b in range(B):
        k = int(top_k[b])
        M = csum[b, k - 1]
        before = csum[b, :k] - vals[b, :k].double()
        c = int((before <= float(top_p[b]) * M).sum())
        t = vals[b, c - 1]
        Q = csum[b, c - 1]
        w = torch.where(probs[b] >= t, probs[b].double(), 0.0)
        idx = int((torch.cumsum(w, 0) <= float(u[b]) * Q).sum())
        out[b] = min(idx, int(torch.nonzero(probs[b] >= t).max()))
    return out
'''


def test_refill_overwrites_in_place_and_refuses_what_does_not_match():
    target = {"x": torch.zeros(3, 4, dtype=torch.bfloat16), "k": torch.zeros(3, dtype=torch.int32), "eps": 1e-6}
    storage = target["x"].data_ptr()
    fresh = {"x": torch.randn(3, 4).to(torch.bfloat16), "k": torch.arange(3, dtype=torch.int32), "eps": 1e-6}
    metas, blobs = wire.pack(fresh)
    wire.refill(target, metas, [bytearray(b.numpy().tobytes()) for b in blobs])
    assert torch.equal(target["x"], fresh["x"]) and torch.equal(target["k"], fresh["k"])
    assert target["x"].data_ptr() == storage   # same tensors: only the values are new
    for bad in ({**fresh, "x": torch.zeros(3, 5, dtype=torch.bfloat16)},    # another shape
                {**fresh, "k": torch.zeros(3, dtype=torch.int64)},           # another dtype
                {**fresh, "eps": 1e-5},                                      # a scalar changed
                {"x": fresh["x"], "eps": 1e-6}):                             # an input missing
        metas, blobs = wire.pack(bad)
        with pytest.raises(wire.WireError):
            wire.refill(target, metas, [bytearray(b.numpy().tobytes()) for b in blobs])


@pytest.mark.parametrize("fresh", ["task", False])
def test_no_timed_call_sees_a_row_multiset_it_saw_before(tmp_path, fresh):
    _repeats(tmp_path, fresh, "interpreter")


@pytest.mark.gpu
@pytest.mark.parametrize("fresh", ["task", False])
def test_no_timed_call_sees_a_row_multiset_it_saw_before_on_the_gpu(tmp_path, fresh):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    _repeats(tmp_path, fresh, "cuda")


def _repeats(tmp_path, fresh, backend: str) -> None:
    path = tmp_path / "spots_repeats.py"
    path.write_text(SPOTS_REPEATS)
    record, timing = _first_smoke(tmp_path, "top_k_top_p_sampling", str(path), backend, {"fresh_inputs": fresh}, 120)
    flags = record["flags"] if isinstance(record["flags"], dict) else json.loads(record["flags"] or "{}")
    printed = flags.get("candidate_output_tail") or ""
    if fresh == "task":   # the task asks for fresh inputs: never a repeat
        assert timing["fresh_inputs"] is True and "DUP" not in printed
    else:                 # perturbation alone: the rows' multisets come back (the test can fail)
        assert timing["fresh_inputs"] is False and "DUP" in printed


def _first_smoke(tmp_path, task: str, solution: str, backend: str, timing: dict, limit_s: float) -> tuple[dict, dict]:
    """One evaluation of ``solution`` on ``task``'s first smoke workload (by id), which must pass:
    its record and its timing."""
    from d2k.content import Benchmark
    from d2k.solutions import resolve
    from d2k.store import Store
    from d2k.supervisor import Limits
    from d2k.sweep import Plan, run_sweep

    bench = Benchmark.load(only=[task])
    first = sorted(bench.select_workloads(task, "smoke"), key=lambda w: w.id)[:1]
    store = Store(tmp_path / "fresh.duckdb")
    record = run_sweep(bench, store, [Plan(resolve(bench, task, solution), first)], backend, "test", {},
                       limits=Limits(per_workload_s=limit_s), timing=timing).records[0]
    store.close()
    assert record["status"] == "passed", record["reason"]
    return record, record["timing"] if isinstance(record["timing"], dict) else json.loads(record["timing"])


def test_fresh_inputs_keep_the_timed_calls_within_the_bytes_budget():
    from d2k.execution.worker import FRESH_BYTES_BUDGET, FRESH_MAX_REPS, fresh_max_reps

    settings = {"min_reps": 10, "max_reps": 1000}
    # small sets: the count cap; a 256-MB set: the bytes budget
    assert fresh_max_reps(settings, 1 << 20) == FRESH_MAX_REPS
    assert 10 < fresh_max_reps(settings, 1 << 28) == int(FRESH_BYTES_BUDGET // (1 << 28)) < FRESH_MAX_REPS
    # never under the loop's minimum (a 1-GB set, cross_entropy at llama3 n4096, gets 10 calls),
    # never over a smaller maximum
    assert fresh_max_reps(settings, 1 << 30) == 10
    assert fresh_max_reps({"min_reps": 10, "max_reps": 5}, 1 << 20) == 5


@pytest.mark.parametrize("fresh", ["task", False])
@pytest.mark.parametrize("task, inputs", [("moe_grouped_topk_routing", ["bias", "router_logits"]),
                                          ("top_k_top_p_sampling", ["probs", "top_k", "top_p", "u"])])
def test_fresh_draws_replace_a_perturbation_that_would_break_the_inputs_margins(tmp_path, fresh, task, inputs):
    # both tasks draw inputs with no decision near flipping, which the perturbation undoes (it
    # rotates the routing logits against the bias, and pairs a sampling row with another row's
    # top_k, top_p and u): with fresh inputs they are not perturbed (UNPERTURBED_WHEN_FRESH); with
    # fresh inputs off they are, so nothing stays the same from call to call either way (the first
    # smoke workloads, t13_e72_g1 and v1000_b3, have several rows: the 1-D inputs are perturbable)
    _, timing = _first_smoke(tmp_path, task, "expert", "interpreter",
                             {"fresh_inputs": fresh, "trusted_batch": fresh == "task", "batch_calls": 12}, 240)
    if fresh == "task":
        assert timing["fresh_inputs"] is True and timing["perturbed_inputs"] == []
        # the trusted batch draws no fresh inputs: it perturbs them, so its calls differ
        assert timing["trusted_batch"]["perturbed_inputs"] == inputs
    else:
        assert timing["fresh_inputs"] is False and timing["perturbed_inputs"] == inputs
