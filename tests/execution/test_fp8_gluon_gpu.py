"""fp8_blockwise_gemm's Gluon path (sm_90, e4m3, bf16 C, M > 64) on shapes the bench workloads do
not cover: M and N that are not multiples of the tile (the TMA loads zero-fill, the TMA store
clips, the last B-scale block is partial), both tile widths (128 x 64 when the 128 x 128 tiles
number fewer than two per SM, 128 x 128 otherwise) and programs that walk several tiles. The
bench workloads hold whole tiles only. Runs through the same sweep, checks and tolerance as any
evaluation; first asserts that the expert's gate sends each shape to the Gluon kernel."""

from __future__ import annotations

import pytest
from gpu_paths import gemm_workload, gluon_expert, sweep_expert

pytestmark = pytest.mark.gpu

# (M, N, K): tile width 64 with one tile per program; width 64 with a partial last M tile and a
# partial B-scale block; width 128 with ragged M and N and several tiles per program
SHAPES = [(65, 136, 384), (333, 1000, 1152), (2100, 4104, 640)]


def test_gluon_path_passes_ragged_tiles(tmp_path):
    torch, bench, expert = gluon_expert("fp8_blockwise_gemm")
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
    workloads = [gemm_workload("fp8_blockwise_gemm", "gluon_ragged", *s) for s in SHAPES]
    records = sweep_expert(bench, "fp8_blockwise_gemm", workloads, tmp_path)
    assert len(records) == len(SHAPES)
    for record in records:
        assert record["status"] == "passed", (record["workload_id"], record["reason"])
