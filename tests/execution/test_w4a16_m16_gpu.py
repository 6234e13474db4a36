"""w4a16_gemm's Gluon path (sm_90, bf16, 2 <= M <= 16) on shapes the bench workloads do not cover:
both token tiles (BM 8 for M <= 8, BM 16 above), M that fills neither, N that is no multiple of a
column tile (odd N included: the word and scale loads lose their vector alignment), one scale
group and several with split-K over fewer groups than splits. The one bench workload at these M
is 16 x 8192 x 28672. Runs through the same sweep, checks and tolerance as any evaluation; first
asserts that the expert's gate sends each shape to the Gluon kernel."""

from __future__ import annotations

import importlib.util

import pytest

from d2k.content import Benchmark
from d2k.schema import Workload
from d2k.solutions import resolve
from d2k.store import Store
from d2k.sweep import Plan, run_sweep

pytestmark = pytest.mark.gpu

# (M, N, K): BM 8 with one group and odd N; BM 8 with a partial column tile; M = 8 exactly;
# BM 16 at M = 9 and 16 with ragged N; K of 5 groups (fewer than most SPLIT_K values)
SHAPES = [(2, 129, 128), (3, 1000, 384), (8, 4104, 1152), (9, 200, 640), (16, 8200, 2048), (13, 4096, 3072)]


def _workload(m: int, n: int, k: int) -> Workload:
    return Workload(id=f"w4a16_gemm_gluon_m16_ragged_m{m}_n{n}_k{k}", task="w4a16_gemm", tag="bench",
                    axes={"M": m, "N": n, "K": k}, dtypes={"dtype": "bfloat16"}, params={}, seed=m + n + k)


def _expert_module(bench: Benchmark):
    path = bench.root / "tasks" / "w4a16_gemm" / "expert.py"
    spec = importlib.util.spec_from_file_location("w4a16_expert_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gluon_m16_path_passes_ragged_shapes(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the Gluon path runs on sm_90 only")
    bench = Benchmark.load(only=["w4a16_gemm"])
    expert = _expert_module(bench)
    if expert.gluon is None:
        pytest.skip("this Triton has no Gluon")
    for m, _, k in SHAPES:
        a = torch.zeros(m, k, device="cuda", dtype=torch.bfloat16)
        s = torch.ones(k // 128, 8, device="cuda", dtype=torch.bfloat16)
        assert expert._gluon_m16_ok(a, s, m), (m, k)
    store = Store(tmp_path / "s.duckdb")
    try:
        result = run_sweep(bench, store, [Plan(resolve(bench, "w4a16_gemm", "expert"),
                                               [_workload(*s) for s in SHAPES])],
                           "cuda", "test", {}, timed=False)
    finally:
        store.close()
    assert len(result.records) == len(SHAPES)
    for record in result.records:
        assert record["status"] == "passed", (record["workload_id"], record["reason"])
