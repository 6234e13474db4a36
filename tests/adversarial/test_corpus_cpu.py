"""The reward-hack corpus (tests/adversarial/cpu/*.py) on the CPU interpreter: each file's docstring
states the status it must get (``expect:``), a fragment of the reason (``reason:``), text that must
never come back in the reason or traceback (``forbid:``) and whether it is flagged kernel-less.
Besides the per-file status, nothing a candidate did may survive the run: no forged row, no daemon,
no change to the content tree."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from d2k.content import Benchmark, find_root
from d2k.supervisor import Limits
from d2k.solutions import resolve
from d2k.store import Store
from d2k.sweep import Plan, run_sweep

# one worker runs this module: its tests share one module-scoped run
pytestmark = pytest.mark.xdist_group("test_corpus_cpu")

CORPUS = Path(__file__).parent / "cpu"
FILES = sorted(CORPUS.glob("*.py"))
SECRET = "sk-d2k-test-leak"


def expectations(path: Path) -> dict:
    doc = path.read_text().split('"""')[1]
    spec: dict = {"forbid": []}
    for line in doc.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "forbid":
            spec["forbid"].append(value)
        elif key in ("expect", "reason", "kernel_less", "output_bytes_at_least"):
            spec[key] = value
    return spec


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("corpus")
    root = find_root()
    reference = root / "tasks" / "rmsnorm" / "reference.py"
    before = hashlib.sha256(reference.read_bytes()).hexdigest()
    saved = {k: os.environ.get(k) for k in ("D2K_WORKDIR", "OPENAI_API_KEY")}
    os.environ["D2K_WORKDIR"] = str(tmp / "work")
    os.environ["OPENAI_API_KEY"] = SECRET
    try:
        bench = Benchmark.load(only=["rmsnorm"])
        workload = [w for w in bench.select_workloads("rmsnorm", "smoke") if w.axes["H"] == 256]
        plans = [Plan(resolve(bench, "rmsnorm", str(p)), workload) for p in FILES]
        store = Store(tmp / "corpus.duckdb")
        result = run_sweep(bench, store, plans, "interpreter", "test", {}, limits=Limits(per_workload_s=60))
        rows = store.query("SELECT solution_id, count(*) FROM evaluations GROUP BY solution_id")[1]
        store.close()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    by_path = {Path(p.solution.path).name: p.solution.solution_id for p in plans}
    records = {name: next(r for r in result.records if r["solution_id"] == sid) for name, sid in by_path.items()}
    return {"records": records, "reference_before": before, "reference": reference, "rows": rows,
            "results_path": result.results_path, "solutions": len(plans)}


def test_each_reward_hack_gets_its_status(corpus_run):
    # one test over the whole corpus: its run is set up once, whatever worker runs it
    for path in FILES:
        check_one(corpus_run, path)


def check_one(corpus_run, path):
    spec = expectations(path)
    record = corpus_run["records"][path.name]
    # "a|b": either, by the layers this machine allows (e.g. inside a pid namespace the candidate
    # is its namespace's init and cannot kill itself)
    assert record["status"] in spec["expect"].split("|"), f"{path.name}: {record['status']}: {record['reason']}"
    if "reason" in spec:
        assert spec["reason"] in (record["reason"] or ""), record["reason"]
    text = (record.get("reason") or "") + (record.get("traceback") or "")
    for forbidden in spec["forbid"]:
        assert forbidden not in text, f"{path.name} leaked {forbidden!r}"
    if "kernel_less" in spec:
        assert record["kernel_less"] is (spec["kernel_less"] == "true")
    if "output_bytes_at_least" in spec:
        assert (record.get("flags") or {}).get("candidate_output_bytes", 0) >= int(spec["output_bytes_at_least"])


def test_nothing_a_candidate_did_outlives_the_run(corpus_run):
    # the content tree is untouched
    assert hashlib.sha256(corpus_run["reference"].read_bytes()).hexdigest() == corpus_run["reference_before"]
    # no daemon survives
    assert _processes_with("d2k-adversarial-daemon-7f3a9c") == []
    # exactly one stored row per solution, and no forged line in the run's results file
    assert len(corpus_run["rows"]) == corpus_run["solutions"] and all(n == 1 for _, n in corpus_run["rows"])
    records = [json.loads(line) for line in Path(corpus_run["results_path"]).read_text().splitlines()]
    assert not [r for r in records if r.get("reason") == "FORGED-ROW-MARKER"]  # (the marker is in a solution's source)
    assert sum(r["record"] == "evaluation" for r in records) == corpus_run["solutions"]
