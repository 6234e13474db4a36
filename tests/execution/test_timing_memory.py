"""Automatic garbage collection is off in a candidate once the solution is imported, so anything
the harness leaves in a reference cycle during the timing loop stays until the loop's reply. On the
H200 (2026-12-05) the thread check's own frame did: two outputs per timed call piled up and
silu_and_mul's largest workload (235 MB outputs) ran out of 140 GB. This runs a solution that fails
as soon as an output older than the previous call's is still alive."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from d2k.content import Benchmark
from d2k.execution import sandbox
from d2k.solutions import resolve
from d2k.store import Store
from d2k.supervisor import Limits
from d2k.sweep import Plan, run_sweep

pytestmark = pytest.mark.skipif(not sandbox.namespaces_available(),
                                reason="unshare --mount --net --pid is refused here")

WATCHFUL = '''
import weakref

import torch

_outputs = []


def run(x, w, eps):
    # the previous call's output may still be bound in the timing loop; none before it
    alive = sum(ref() is not None for ref in _outputs[:-1])
    if alive:
        raise RuntimeError(f"{alive} outputs of earlier calls are still alive: the harness keeps them")
    xf = x.float()
    y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
    _outputs.append(weakref.ref(y))
    return y
'''


def test_no_timed_calls_outputs_pile_up_while_collection_is_off(tmp_path: Path):
    os.environ["D2K_WORKDIR"] = str(tmp_path / "work")
    path = tmp_path / "watchful.py"
    path.write_text(WATCHFUL)
    bench = Benchmark.load(only=["rmsnorm"])
    workloads = bench.select_workloads("rmsnorm", "smoke")[:1]
    store = Store(tmp_path / "memory.duckdb")
    result = run_sweep(bench, store, [Plan(resolve(bench, "rmsnorm", str(path)), workloads)], "interpreter", "test",
                       {}, limits=Limits(per_workload_s=120), timing={"interpreter_reps": 6})
    store.close()
    (record,) = result.records
    assert record["status"] == "passed", record["reason"]
    assert len(record["samples_ms"]) == 6
