"""w4a16_gemm's Gluon path (sm_90, bf16, 2 <= M <= 16) on shapes the bench workloads do not cover:
both token tiles (BM 8 for M <= 8, BM 16 above), M that fills neither, N that is no multiple of a
column tile (odd N included: the word and scale loads lose their vector alignment), one scale
group and several with split-K over fewer groups than splits. The one bench workload at these M
is 16 x 8192 x 28672. Runs through the same sweep, checks and tolerance as any evaluation; first
asserts that the expert's gate sends each shape to the Gluon kernel."""

from __future__ import annotations

import pytest
from gpu_paths import gemm_workload, gluon_expert, sweep_expert

pytestmark = pytest.mark.gpu

# (M, N, K): BM 8 with one group and odd N; BM 8 with a partial column tile; M = 8 exactly;
# BM 16 at M = 9 (5 groups, fewer than most SPLIT_K values) and 16 with ragged N; M = 13, 24 groups
SHAPES = [(2, 129, 128), (3, 1000, 384), (8, 4104, 1152), (9, 200, 640), (16, 8200, 2048), (13, 4096, 3072)]


def test_gluon_m16_path_passes_ragged_shapes(tmp_path):
    torch, bench, expert = gluon_expert("w4a16_gemm")
    for m, _, k in SHAPES:
        a = torch.zeros(m, k, device="cuda", dtype=torch.bfloat16)
        s = torch.ones(k // 128, 8, device="cuda", dtype=torch.bfloat16)
        assert expert._gluon_m16_ok(a, s, m), (m, k)
    workloads = [gemm_workload("w4a16_gemm", "gluon_m16_ragged", *s) for s in SHAPES]
    records = sweep_expert(bench, "w4a16_gemm", workloads, tmp_path)
    assert len(records) == len(SHAPES)
    for record in records:
        assert record["status"] == "passed", (record["workload_id"], record["reason"])
