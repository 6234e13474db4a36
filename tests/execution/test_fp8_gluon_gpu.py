"""fp8_blockwise_gemm's Gluon path (sm_90, e4m3, bf16 C, M > 64) on shapes the bench workloads do
not cover: M and N that are not multiples of the tile (the TMA loads zero-fill, the TMA store
clips, the last B-scale block is partial), both tile widths (128 x 64 when the 128 x 128 tiles
number fewer than two per SM, 128 x 128 otherwise) and programs that walk several tiles. The
bench workloads hold whole tiles only. Runs through the same sweep, checks and tolerance as any
evaluation; first asserts that the expert's gate sends each shape to the Gluon kernel."""

from __future__ import annotations

import importlib.util

import pytest

from d2k.content import Benchmark
from d2k.schema import Workload
from d2k.solutions import resolve
from d2k.store import Store
from d2k.sweep import Plan, run_sweep

pytestmark = pytest.mark.gpu

# (M, N, K): tile width 64 with one tile per program; width 64 with a partial last M tile and a
# partial B-scale block; width 128 with ragged M and N and several tiles per program
SHAPES = [(65, 136, 384), (333, 1000, 1152), (2100, 4104, 640)]


def _workload(m: int, n: int, k: int) -> Workload:
    return Workload(id=f"fp8_blockwise_gemm_gluon_ragged_m{m}_n{n}_k{k}", task="fp8_blockwise_gemm",
                    tag="bench", axes={"M": m, "N": n, "K": k}, dtypes={"dtype": "bfloat16"},
                    params={}, seed=m + n + k)


def _expert_module(bench: Benchmark):
    path = bench.root / "tasks" / "fp8_blockwise_gemm" / "expert.py"
    spec = importlib.util.spec_from_file_location("fp8_expert_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gluon_path_passes_ragged_tiles(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the Gluon path runs on sm_90 only")
    bench = Benchmark.load(only=["fp8_blockwise_gemm"])
    expert = _expert_module(bench)
    if expert.gluon is None:
        pytest.skip("this Triton has no Gluon")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    widths = set()
    for m, n, k in SHAPES:
        a = torch.zeros(m, k, device="cuda").to(torch.float8_e4m3fn)
        b = torch.zeros(n, k, device="cuda").to(torch.float8_e4m3fn)
        a_s = torch.ones(m, k // 128, device="cuda")
        b_s = torch.ones(-(-n // 128), k // 128, device="cuda")
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        assert expert._gluon_ok(a, a_s, b, b_s, c, m, n, k), (m, n, k)
        widths.add(expert._gluon_launch_args(a, a_s, b, b_s, c, m, n, k, sms)[1]["BN"])
    assert widths == {64, 128}
    store = Store(tmp_path / "s.duckdb")
    try:
        result = run_sweep(bench, store, [Plan(resolve(bench, "fp8_blockwise_gemm", "expert"),
                                               [_workload(*s) for s in SHAPES])],
                           "cuda", "test", {}, timed=False)
    finally:
        store.close()
    assert len(result.records) == len(SHAPES)
    for record in result.records:
        assert record["status"] == "passed", (record["workload_id"], record["reason"])
