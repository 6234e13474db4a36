"""The reward-hack corpus (tests/adversarial/cpu/*.py) on the CPU interpreter: each file's docstring
states the status it must get (``expect:``), a fragment of the reason (``reason:``), text that must
never come back in the reason or traceback (``forbid:``) and whether it is flagged kernel-less.
Besides the per-file status, nothing a candidate did may survive the run: no forged row, no daemon,
no change to the content tree, no write anywhere outside its private /tmp (decoy results files are
planted next to the package and next to the checkout for forge_results.py to find)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import uuid
from pathlib import Path

import pytest

import d2k
from d2k.content import Benchmark, find_root
from d2k.execution import sandbox
from d2k.supervisor import Limits
from d2k.solutions import resolve
from d2k.store import Store
from d2k.sweep import Plan, run_sweep

# one worker runs this module: its tests share one module-scoped run. The attacks are real (they
# rewrite the reference, forge results files, leave daemons): without the mount namespace nothing
# would stop them damaging this checkout, so the corpus does not run where unshare is refused.
pytestmark = [pytest.mark.xdist_group("test_corpus_cpu"),
              pytest.mark.skipif(not sandbox.namespaces_available(),
                                 reason="unshare --mount --net --pid is refused here: the corpus's attacks would "
                                        "really write this checkout")]

CORPUS = Path(__file__).parent / "cpu"
# an honest torch rmsnorm in the corpus: files that must gain nothing are timed against it (a route
# that came back would pass with a forged figure, and a status alone would not notice)
CONTROL = "kernel_less.py"
FILES = sorted(CORPUS.glob("*.py"))
SECRET = "sk-d2k-test-leak"
# the folder the sandbox puts on the candidate's PYTHONPATH (the checkout d2k is imported from)
PACKAGE_PARENT = Path(d2k.__file__).resolve().parents[1]
DECOY = b'{"record": "evaluation", "status": "failed", "reason": "decoy planted by test_corpus_cpu"}\n'


def expectations(path: Path) -> dict:
    doc = path.read_text().split('"""')[1]
    spec: dict = {"forbid": []}
    for line in doc.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "forbid":
            spec["forbid"].append(value)
        elif key in ("expect", "reason", "kernel_less", "output_bytes_at_least", "median_at_least_of_control"):
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


def _forgeries(top: Path) -> tuple[dict, set]:
    """Forged rows per results file under ``top`` (earlier, unprotected runs may hold some) and the
    forged files there."""
    rows, files = {}, set()
    for folder, _, names in os.walk(top):
        if "results.jsonl" in names:
            path = Path(folder) / "results.jsonl"
            try:
                rows[path] = path.read_bytes().count(b"FORGED-ROW-MARKER")
            except OSError:
                pass
        if "FORGED-FILE-MARKER" in names:
            files.add(Path(folder) / "FORGED-FILE-MARKER")
    return rows, files


def _plant_decoys() -> list[Path]:
    """A results file outside /tmp where the candidate can see it: next to d2k's package (inside
    the checkout, which is bound read-only) and, where this user may create one, next to the
    checkout (covered by nothing but the read-only filesystem)."""
    name = f".d2k-decoy-{uuid.uuid4().hex[:12]}"
    decoys = []
    for parent in (PACKAGE_PARENT, PACKAGE_PARENT.parent):
        try:
            (parent / name).mkdir()
        except OSError:
            continue
        decoys.append(parent / name)
        (parent / name / "results.jsonl").write_bytes(DECOY)
    return decoys


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory):
    decoys = _plant_decoys()
    try:
        yield _corpus_run(tmp_path_factory, decoys)
    finally:
        for decoy in decoys:
            shutil.rmtree(decoy, ignore_errors=True)


def _corpus_run(tmp_path_factory, decoys: list[Path]) -> dict:
    tmp = tmp_path_factory.mktemp("corpus")
    forged_before = _forgeries(PACKAGE_PARENT)
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
    decoys_after = {d: (d / "results.jsonl").read_bytes() for d in decoys}
    dropped = {d: sorted(p.name for p in d.iterdir()) for d in decoys}
    return {"records": records, "reference_before": before, "reference": reference, "rows": rows,
            "results_path": result.results_path, "solutions": len(plans), "decoys": decoys_after,
            "decoy_files": dropped, "forged_before": forged_before, "forged_after": _forgeries(PACKAGE_PARENT)}


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
    # the flags hold the end of what the candidate printed: a secret it found must not be there either
    text = (record.get("reason") or "") + (record.get("traceback") or "") + json.dumps(record.get("flags") or {})
    for forbidden in spec["forbid"]:
        assert forbidden not in text, f"{path.name} leaked {forbidden!r}"
    if "kernel_less" in spec:
        assert record["kernel_less"] is (spec["kernel_less"] == "true")
    if "median_at_least_of_control" in spec:
        # against the control's fastest call: a loaded machine only slows calls (once the control's
        # median was 4.2 ms against its usual 0.06 beside a parallel run), a forged figure is fast
        control = min(corpus_run["records"][CONTROL]["samples_ms"] or [0.0])
        assert record["median_ms"] and control, (record["median_ms"], control)
        ratio = record["median_ms"] / control
        assert ratio >= float(spec["median_at_least_of_control"]), \
            f"{path.name}: median {record['median_ms']:.4f} ms is {ratio:.2f}x the honest control's fastest call, " \
            f"{control:.4f} ms"
    if "output_bytes_at_least" in spec:
        assert (record.get("flags") or {}).get("candidate_output_bytes", 0) >= int(spec["output_bytes_at_least"])
        assert record["flags"].get("candidate_output_tail"), "the end of what it printed is kept"


def test_a_file_that_must_gain_nothing_fails_with_a_forged_median():
    """The median bound can fail: signal_valid_signals_rewrite's figure when its route was open
    (11 us against the control's 55 us, session 20) is refused; its honest figure is not."""
    path = CORPUS / "signal_valid_signals_rewrite.py"
    record = {"status": "passed", "reason": None, "median_ms": 0.011}
    run = {"records": {path.name: record, CONTROL: {"median_ms": 0.06, "samples_ms": [0.055, 0.06, 0.07, 0.4]}}}
    with pytest.raises(AssertionError, match="0.20x the honest control"):
        check_one(run, path)
    record["median_ms"] = 0.05
    check_one(run, path)


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


def test_no_results_file_outside_the_run_was_touched(corpus_run):
    """forge_results.py appends to every results.jsonl it finds, on its import path first: a capless
    uid 0 owns every root-owned file, so only the read-only filesystem stops it (earlier it wrote
    the tracked analysis data and earlier runs' results)."""
    assert corpus_run["decoys"], "no decoy could be planted"
    for decoy, content in corpus_run["decoys"].items():
        assert content == DECOY, f"{decoy}/results.jsonl was changed"
        assert corpus_run["decoy_files"][decoy] == ["results.jsonl"], f"{decoy}: a file was created"
    rows_before, files_before = corpus_run["forged_before"]
    rows_after, files_after = corpus_run["forged_after"]
    assert not files_after - files_before, "FORGED-FILE-MARKER created"
    grown = [str(p) for p, n in rows_after.items() if n > rows_before.get(p, 0)]
    assert not grown, f"forged rows appended to {grown}"
    for entry in {PACKAGE_PARENT, *map(Path, filter(None, sys.path))}:  # what the candidate's import path holds
        assert not (entry / "FORGED-FILE-MARKER").exists(), f"FORGED-FILE-MARKER created in {entry}"
