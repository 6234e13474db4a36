"""Shared steps of the GPU tests of the experts' sm_90 paths (Gluon kernels): skip anywhere but
sm_90 (or without Gluon), load an expert's file as a module (to ask its gate which path a shape
takes), build GEMM workloads of odd shapes, and run workloads through the ordinary sweep and
checks, untimed."""

from __future__ import annotations

import importlib.util

import pytest

from d2k.content import Benchmark
from d2k.schema import Workload
from d2k.solutions import resolve
from d2k.store import Store
from d2k.sweep import Plan, run_sweep


def require_sm90():
    """torch, or a skip where there is no CUDA device of compute capability 9.0."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the Gluon path runs on sm_90 only")
    return torch


def gluon_expert(task_id: str):
    """(torch, the benchmark holding ``task_id``, its expert.py as a module), or a skip anywhere
    but sm_90 or where this Triton has no Gluon."""
    torch = require_sm90()
    bench = Benchmark.load(only=[task_id])
    expert = expert_module(bench, task_id)
    if expert.gluon is None:
        pytest.skip("this Triton has no Gluon")
    return torch, bench, expert


def gemm_workload(task_id: str, label: str, m: int, n: int, k: int) -> Workload:
    """A bf16 GEMM workload of shape M x N x K outside the task's files, id
    ``{task_id}_{label}_m{m}_n{n}_k{k}``, seeded by its shape."""
    return Workload(id=f"{task_id}_{label}_m{m}_n{n}_k{k}", task=task_id, tag="bench",
                    axes={"M": m, "N": n, "K": k}, dtypes={"dtype": "bfloat16"}, params={}, seed=m + n + k)


def expert_module(bench: Benchmark, task_id: str):
    """The task's expert.py, imported under a name of its own."""
    path = bench.root / "tasks" / task_id / "expert.py"
    spec = importlib.util.spec_from_file_location(f"{task_id}_expert_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sweep_expert(bench: Benchmark, task_id: str, workloads: list[Workload], tmp_path) -> list[dict]:
    """The expert's records on ``workloads``: the same sweep, checks and tolerance as any
    evaluation, untimed, in a store of its own under ``tmp_path``."""
    store = Store(tmp_path / "s.duckdb")
    try:
        result = run_sweep(bench, store, [Plan(resolve(bench, task_id, "expert"), workloads)],
                           "cuda", "test", {}, timed=False)
    finally:
        store.close()
    return result.records
