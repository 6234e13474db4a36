"""mla_decode's Gluon path (sm_90, bf16, H = 128, 64-token pages, one split) on shapes the bench
workloads do not cover: ragged sequences whose last tile is partial (1, 63, 64, 65 and 200
tokens), so the kernel's masked scores and zeroed value rows are exercised. The bench workloads
hold whole pages only. Runs through the same sweep, checks and tolerance as any evaluation."""

from __future__ import annotations

import pytest
from gpu_paths import require_sm90, sweep_expert

from d2k.content import Benchmark
from d2k.schema import Workload

pytestmark = pytest.mark.gpu

LENGTHS = [1, 63, 64, 65, 200]


def _ragged_h128() -> Workload:
    pages = [-(-n // 64) for n in LENGTHS]
    return Workload(id="mla_decode_gluon_tail_h128_ps64", task="mla_decode", tag="bench",
                    axes={"B": len(LENGTHS), "H": 128, "PS": 64, "NP": sum(pages), "KV": sum(LENGTHS)},
                    dtypes={"dtype": "bfloat16"},
                    params={"seq_lens": LENGTHS, "sm_scale": 0.07216878364870323}, seed=7)


def test_gluon_path_passes_partial_tiles(tmp_path):
    require_sm90()
    bench = Benchmark.load(only=["mla_decode"])
    [record] = sweep_expert(bench, "mla_decode", [_ragged_h128()], tmp_path)
    assert record["status"] == "passed", record["reason"]
