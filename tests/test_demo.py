"""`d2k demo` (a demo store from a scripted paired experiment through the real pipeline) and
`d2k export` (tables and views as Parquet or CSV)."""

import json
import subprocess
import time

import duckdb
import pytest
from conftest import d2k_command

# one worker runs this module: its tests share one module-scoped run
pytestmark = pytest.mark.xdist_group("test_demo")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "d2k-demo"
    start = time.perf_counter()
    proc = subprocess.run(d2k_command("demo", "--out", str(out)), capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-2000:]
    return out, proc, seconds


def _rows(path, sql):
    con = duckdb.connect(str(path), read_only=True)
    try:
        cur = con.execute(sql)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]
    finally:
        con.close()


def test_demo_runs_the_pipeline_and_is_flagged_everywhere(demo):
    out, proc, seconds = demo
    store = out / "demo.duckdb"
    assert "demo store:" in proc.stdout and "demo report:" in proc.stdout
    meta = _rows(store, "SELECT value FROM meta WHERE key = 'demo'")
    assert "d2k demo" in json.loads(meta[0]["value"])["command"]
    attempts = _rows(store, "SELECT model, task_id, condition, status, agent_status, submission_id FROM attempts ORDER BY ALL")
    assert len(attempts) == 8 and sum(a["status"] == "failed" for a in attempts) == 1
    assert all(a["agent_status"] == "submitted" for a in attempts if a["status"] == "finished")
    # the judges ran: static and hybrid on the code, the proposal judge on DESIGN.md
    judges = {r["judge"]: r["n"] for r in _rows(store, "SELECT judge, count(*) AS n FROM verdicts "
                                                       "WHERE solution_id IS NOT NULL GROUP BY 1")}
    assert judges.get("static") and judges.get("hybrid")
    assert _rows(store, "SELECT count(*) AS n FROM verdicts WHERE proposal_id IS NOT NULL")[0]["n"] > 0
    assert _rows(store, "SELECT count(*) AS n FROM evaluations WHERE backend = 'interpreter'")[0]["n"] >= 12
    assert _rows(store, "SELECT count(*) AS n FROM analysis_bootstrap")[0]["n"] > 0
    page = (out / "report" / "index.html").read_text()
    assert "DEMO STORE" in page and "D2K-Bench report (DEMO)" in page
    print(f"d2k demo: {seconds:.1f} s wall")


def test_demo_headline_counts_the_injected_harness_failure(demo, monkeypatch):
    out, _, _ = demo
    monkeypatch.setenv("D2K_DB", str(out / "demo.duckdb"))
    proc = subprocess.run(d2k_command("sql", "SELECT * FROM v_headline ORDER BY model, condition", "--format", "json"),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = {(r["model"], r["condition"]): r for r in json.loads(proc.stdout)}
    assert all(r["demo"] for r in rows.values())
    hasty = rows[("demo-hasty", "unguided")]
    assert hasty["harness_failed"] == 1 and hasty["correctness"] == 0.0   # a wrong rmsnorm and the failure
    assert rows[("demo-diligent", "guided")]["correctness"] == 1.0
    assert rows[("demo-diligent", "guided")]["implementation_judge"] == "hybrid"
    assert rows[("demo-diligent", "guided")]["implementation_score"] > rows[("demo-diligent", "unguided")]["implementation_score"]
    assert rows[("(all models)", "guided")]["performance_score"] is None  # the interpreter measures no speed


def test_demo_unguided_builds_what_it_never_designed(demo, monkeypatch):
    out, _, _ = demo
    monkeypatch.setenv("D2K_DB", str(out / "demo.duckdb"))
    design = json.loads(subprocess.run(d2k_command("sql", "SELECT sum(built_not_designed) AS b FROM v_design_build_summary "
                                                   "WHERE condition = 'unguided'", "--format", "json"),
                                       capture_output=True, text=True, timeout=120).stdout)
    assert design[0]["b"] > 0  # unguided: expert-like code the generic design never named


def test_demo_never_replaces_a_store_that_is_not_a_demo(tmp_path):
    from d2k.store import Store

    real = tmp_path / "real.duckdb"
    Store(real).close()
    proc = subprocess.run(d2k_command("demo", "--out", str(tmp_path / "o"), "--db", str(real)),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "is not a demo store" in proc.stderr


def test_export_parquet_and_csv(demo, tmp_path):
    out, _, _ = demo
    store = out / "demo.duckdb"
    proc = subprocess.run(d2k_command("export", "--db", str(store), "--out", str(tmp_path / "pq")),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    files = {p.stem for p in (tmp_path / "pq").glob("*.parquet")}
    assert {"attempts", "evaluations", "verdicts", "meta", "v_headline", "v_attempts", "v_item_credit"} <= files
    con = duckdb.connect()
    rows = con.execute(f"SELECT count(*) FROM '{tmp_path / 'pq' / 'v_attempts.parquet'}'").fetchone()[0]
    assert rows == 8
    proc = subprocess.run(d2k_command("export", "--db", str(store), "--out", str(tmp_path / "csv"), "--format", "csv",
                                      "--only", "v_headline,meta"), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "csv").iterdir()) == ["meta.csv", "v_headline.csv"]
    assert (tmp_path / "csv" / "v_headline.csv").read_text().splitlines()[0].startswith("experiment,")
    bad = subprocess.run(d2k_command("export", "--db", str(store), "--only", "nope", "--out", str(tmp_path / "x")),
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "no table or view named nope" in bad.stderr
    bad = subprocess.run(d2k_command("export", "--db", str(store), "--format", "xlsx"), capture_output=True, text=True)
    assert bad.returncode == 2 and "parquet or csv" in bad.stderr
