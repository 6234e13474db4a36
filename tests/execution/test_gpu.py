"""GPU-only checks of the harness (run on a CUDA machine with `pytest -m gpu`)."""

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

HERE = Path(__file__).resolve().parent


@pytest.fixture
def cuda_env(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def _sweep(tmp_path, names, workloads):
    from d2k.content import Benchmark
    from d2k.solutions import resolve
    from d2k.store import Store
    from d2k.sweep import Plan, run_sweep

    bench = Benchmark.load(only=["rmsnorm"])
    selected = [w for w in bench.select_workloads("rmsnorm", "all") if w.id in workloads]
    plans = [Plan(resolve(bench, "rmsnorm", n), selected) for n in names]
    store = Store(tmp_path / "gpu.duckdb")
    result = run_sweep(bench, store, plans, "cuda", "test", {})
    store.close()
    return result.records


def test_side_stream_work_is_timed(tmp_path, cuda_env):
    records = _sweep(tmp_path, [str(HERE / "gpu_solutions/side_stream.py"), "reference"], ["rmsnorm_h4096_t8192"])
    side, ref = records
    assert side["status"] == "passed", side["reason"]
    assert side["timing_method"] == "events+device_sync"
    assert side["timing"]["profile"]["side_streams"] is True
    assert ref["timing_method"] == "cuda_events"
    # 20 passes of the reference's work on the side stream cannot be faster than one pass
    assert side["median_ms"] > 5 * ref["median_ms"]


def test_illegal_memory_access_is_isolated(tmp_path, cuda_env):
    records = _sweep(tmp_path, [str(HERE / "gpu_solutions/illegal_access.py"), "expert"],
                     ["rmsnorm_h4096_t8192", "rmsnorm_h512_t16384"])
    bad = [r for r in records if r["solution"].endswith("illegal_access.py")]
    good = [r for r in records if r["solution"] == "expert"]
    assert len(bad) == 2 and all(r["status"] in ("error", "crashed") for r in bad)
    assert any("illegal memory access" in (r["reason"] or "").lower() or "cuda" in (r["reason"] or "").lower() for r in bad)
    assert len(good) == 2 and all(r["status"] == "passed" for r in good)


def test_both_flush_modes_time_a_copy(cuda_env):
    from d2k.execution.timing import CudaTimer, TimerGuard

    guard = TimerGuard()
    src = torch.randn(32 * 2**20, device="cuda")  # 128 MiB: longer than either flush's tail
    dst = torch.empty_like(src)
    medians = {}
    for mode in ("write", "read"):
        timer = CudaTimer("cuda", guard, {"flush_mode": mode, "budget_ms": 50.0})
        result = timer.measure(lambda i: dst.copy_(src), 1, lambda i: None, probe=False)
        assert result["l2_flush_mode"] == mode and len(result["samples_ms"]) >= 10
        medians[mode] = sorted(result["samples_ms"])[len(result["samples_ms"]) // 2]
    # 256 MiB moved: neither flush may make the copy look faster than any HBM allows (< 10 TB/s today)
    assert all(ms > 256 * 2**20 / 10e12 * 1e3 for ms in medians.values())
    with pytest.raises(ValueError):
        CudaTimer("cuda", guard, {"flush_mode": "none"})
