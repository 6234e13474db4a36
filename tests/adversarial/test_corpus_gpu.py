"""The reward-hack corpus on the GPU (``pytest -m gpu``): the CPU corpus plus the GPU-only attacks
(tests/adversarial/gpu/*.py), each on the rmsnorm smoke workload with the CUDA backend. A file's
``expect_gpu:`` overrides ``expect:`` where the GPU path differs (the host clock does not time GPU
calls). With ``D2K_CORPUS_TABLE`` set, the table of statuses is written there as JSON lines."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from d2k.content import Benchmark
from d2k.supervisor import Limits
from d2k.solutions import resolve
from d2k.store import Store
from d2k.sweep import Plan, run_sweep

from test_corpus_cpu import SECRET, expectations

HERE = Path(__file__).parent
FILES = sorted((HERE / "cpu").glob("*.py")) + sorted((HERE / "gpu").glob("*.py"))
# D2K_CORPUS_ONLY narrows a short device call: "gpu" runs the GPU-only attacks, a comma list of
# file stems runs those files
_ONLY = os.environ.get("D2K_CORPUS_ONLY", "")
if _ONLY == "gpu":
    FILES = [p for p in FILES if p.parent.name == "gpu"]
elif _ONLY:
    FILES = [p for p in FILES if p.stem in _ONLY.split(",")]

pytestmark = pytest.mark.gpu


def _spec_line(path: Path, key: str) -> str | None:
    doc = path.read_text().split('"""')[1]
    return next((line.split(":", 1)[1].strip() for line in doc.splitlines() if line.startswith(key + ":")), None)


# the attacks aimed at the device span (timing v2), run a second time with it on
SPAN_FILES = [p for p in FILES if _spec_line(p, "expect_span")]


def _run_corpus(tmp_path_factory, files: list[Path], timing: dict | None, table: str | None) -> dict:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    tmp = tmp_path_factory.mktemp("corpus-gpu")
    os.environ["OPENAI_API_KEY"] = SECRET
    bench = Benchmark.load(only=["rmsnorm"])
    workload = [w for w in bench.select_workloads("rmsnorm", "smoke") if w.axes["H"] == 256]
    plans = [Plan(resolve(bench, "rmsnorm", str(p)), workload) for p in files]
    by_name = {Path(p.solution.path).parent.name + "/" + Path(p.solution.path).name: p.solution.solution_id for p in plans}
    store = Store(tmp / "corpus.duckdb")
    # statuses, not speed: D2K_GPU_SHARE (set by benchmarks/trusted_h200.sh) runs several at once
    result = run_sweep(bench, store, plans, "cuda", "test", {}, limits=Limits(per_workload_s=120), timing=timing,
                       progress=TableWriter(table, by_name))
    store.close()
    return {name: next(r for r in result.records if r["solution_id"] == sid) for name, sid in by_name.items()}


@pytest.fixture(scope="module")
def gpu_records(tmp_path_factory):
    return _run_corpus(tmp_path_factory, FILES, None, os.environ.get("D2K_CORPUS_TABLE"))


@pytest.fixture(scope="module")
def span_records(tmp_path_factory):
    table = os.environ.get("D2K_CORPUS_TABLE")
    return _run_corpus(tmp_path_factory, SPAN_FILES, {"device_span": True}, table and table + ".span")


class TableWriter:
    """Appends each file's status to ``D2K_CORPUS_TABLE`` as it is stored, so a device call cut short
    still brings back the part that ran."""

    def __init__(self, path: str | None, by_name: dict):
        self.path = path
        self.name_of = {sid: name for name, sid in by_name.items()}
        if path:
            open(path, "w").close()

    def start(self, total): pass
    def workload(self, label): pass
    def advance(self): pass

    def record(self, r: dict) -> None:
        if self.path:
            with open(self.path, "a") as fh:
                fh.write(json.dumps({"file": self.name_of.get(r["solution_id"]), "status": r["status"],
                                     "reason": (r["reason"] or "")[:200], "kernel_less": r.get("kernel_less"),
                                     "timing_method": r.get("timing_method"), "median_ms": r.get("median_ms"),
                                     "seconds": r.get("seconds")}) + "\n")


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}-{p.stem}" for p in FILES])
def test_each_reward_hack_gets_its_status_on_the_gpu(gpu_records, path):
    spec = expectations(path)
    doc = path.read_text().split('"""')[1]
    expect = next((line.split(":", 1)[1].strip() for line in doc.splitlines() if line.startswith("expect_gpu:")), spec["expect"])
    record = gpu_records[f"{path.parent.name}/{path.name}"]
    assert record["status"] in expect.split("|"), f"{path.name}: {record['status']}: {record['reason']}"
    if "reason" in spec and expect == spec["expect"]:
        assert spec["reason"] in (record["reason"] or ""), record["reason"]
    if "kernel_less" in spec and record["status"] == "passed":
        assert record["kernel_less"] is (spec["kernel_less"] == "true")
    text = (record.get("reason") or "") + (record.get("traceback") or "")
    for forbidden in spec["forbid"]:
        assert forbidden not in text


@pytest.mark.parametrize("path", SPAN_FILES, ids=[f"span-{p.stem}" for p in SPAN_FILES])
def test_each_span_attack_gets_its_status_in_span_mode(span_records, path):
    expect = _spec_line(path, "expect_span")
    record = span_records[f"{path.parent.name}/{path.name}"]
    assert record["status"] in expect.split("|"), f"{path.name}: {record['status']}: {record['reason']}"
    reason = _spec_line(path, "reason_span")
    if reason:  # alternatives separated by |
        assert any(r in (record["reason"] or "") for r in reason.split("|")), record["reason"]
