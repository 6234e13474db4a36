"""Store round trip, skip-on-rerun, ingest of a results file, and schema migrations."""

import json
import re
from pathlib import Path

import pytest

from d2k.content import Benchmark
from d2k.errors import D2KError
from d2k.ingest import ingest
from d2k.solutions import Solution, resolve
from d2k.store import VIEWS_FILE, Store
from d2k.sweep import Plan, run_sweep


@pytest.fixture
def bench():
    return Benchmark.load(only=["rmsnorm"])


def _plans(bench):
    smoke = bench.select_workloads("rmsnorm", "smoke")
    return [Plan(resolve(bench, "rmsnorm", "expert"), smoke)]


def test_round_trip_and_skip_on_rerun(tmp_path, bench):
    store = Store(tmp_path / "a.duckdb")
    first = run_sweep(bench, store, _plans(bench), "interpreter", "test", {})
    assert len(first.records) == 2 and first.skipped == 0
    assert all(r["status"] == "passed" for r in first.records)
    _, rows = store.query("SELECT workload_id, status, backend, n_samples FROM evaluations ORDER BY workload_id")
    assert [r[1] for r in rows] == ["passed", "passed"] and {r[2] for r in rows} == {"interpreter"}
    _, env_rows = store.query("SELECT backend, torch, triton FROM environments")
    assert env_rows[0][0] == "interpreter" and env_rows[0][1] and env_rows[0][2]

    second = run_sweep(bench, store, _plans(bench), "interpreter", "test", {})
    assert second.records == [] and second.skipped == 2
    forced = run_sweep(bench, store, _plans(bench), "interpreter", "test", {}, force=True)
    assert len(forced.records) == 2
    _, count = store.query("SELECT count(*) FROM evaluations")
    _, latest = store.query("SELECT count(*) FROM v_latest_evaluations")
    assert count[0][0] == 4 and latest[0][0] == 2
    store.close()

    # the run's JSONL alone rebuilds the same evaluations in a fresh store
    fresh = Store(tmp_path / "b.duckdb")
    counts = ingest(fresh, bench, first.results_path)
    assert counts["evaluation"] == 2 and counts["environment"] == 1 and counts["solution"] == 1
    _, rows_b = fresh.query("SELECT workload_id, status, backend, n_samples FROM evaluations ORDER BY workload_id")
    assert rows_b == rows
    _, runs = fresh.query("SELECT status FROM runs")
    assert runs == [("ingested",)]


def test_content_ids_are_stable_in_the_store(tmp_path, bench):
    store = Store(tmp_path / "c.duckdb")
    store.sync_content(bench)
    store.sync_content(bench)  # idempotent
    _, tasks = store.query("SELECT task_id, category FROM tasks")
    _, items = store.query("SELECT count(*) FROM design_items WHERE task_id = 'rmsnorm'")
    _, wl = store.query("SELECT workload_id, flops, bytes FROM workloads WHERE workload_id = 'rmsnorm_h4096_t8192'")
    assert tasks == [("rmsnorm", "memory")]
    assert items[0][0] == len(bench.items("rmsnorm"))
    # bytes = x read + w read + y written, bf16
    assert wl[0][2] == 2 * (2 * 8192 * 4096 + 4096)


def test_migrations_recorded_and_newer_schema_refused(tmp_path):
    path = tmp_path / "m.duckdb"
    store = Store(path)
    version = store.schema_version()
    assert version == max(v for v, _ in Store.migrations())
    store.close()
    store = Store(path)  # reopening applies nothing twice
    assert store.schema_version() == version
    store.con.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    store.close()
    with pytest.raises(D2KError, match="newer than this d2k"):
        Store(path)


def test_ingest_rejects_truncated_file(tmp_path, bench):
    bad = tmp_path / "results.jsonl"
    bad.write_text('{"record": "environment", "env_id": "x"}\n{"record": "evalu')
    with pytest.raises(D2KError, match="not JSON"):
        ingest(Store(tmp_path / "d.duckdb"), bench, bad)


def test_ingest_calibration_json_once(tmp_path, bench):
    env = {"env_id": "gpu-env", "backend": "cuda", "gpu_name": "Test GPU"}
    cal = {"copy_bytes_per_s": 4.3e12, "bf16_flops_per_s": 7.6e14, "details": {"copy": [1, 2]}}
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"env": env, "calibration": cal}))
    store = Store(tmp_path / "d.duckdb")
    assert ingest(store, bench, path)["calibration"] == 1
    ingest(store, bench, path)  # the same file again: still one row
    rows = store.con.execute("SELECT env_id, copy_bytes_per_s FROM calibrations").fetchall()
    assert rows == [("gpu-env", 4.3e12)]
    path.write_text('{"env": {}}')
    with pytest.raises(D2KError, match="not a calibration.json"):
        ingest(store, bench, path)


def test_candidate_winners_query_compares_against_the_expert(tmp_path, bench):
    # interpreter rows of expert and naive, dressed up as GPU rows of the expert and a candidate
    store = Store(tmp_path / "w.duckdb")
    smoke = bench.select_workloads("rmsnorm", "smoke")
    plans = [Plan(resolve(bench, "rmsnorm", name), smoke) for name in ("expert", "naive")]
    run_sweep(bench, store, plans, "interpreter", "test", {})
    con = store.con
    con.execute("UPDATE evaluations SET backend = 'cuda'")
    con.execute("UPDATE workloads SET tag = 'bench'")
    con.execute("UPDATE solutions SET label = '/somewhere/cand.py' WHERE label = 'naive'")
    first, second = sorted(w.id for w in smoke)
    con.execute("UPDATE evaluations SET median_ms = 2.0 "
                "WHERE solution_id IN (SELECT solution_id FROM solutions WHERE label = 'expert')")
    cand = "solution_id IN (SELECT solution_id FROM solutions WHERE label = '/somewhere/cand.py')"
    con.execute(f"UPDATE evaluations SET median_ms = 1.0 WHERE {cand} AND workload_id = ?", [first])
    con.execute(f"UPDATE evaluations SET median_ms = 4.0 WHERE {cand} AND workload_id = ?", [second])
    from conftest import ROOT

    _, rows = store.query((ROOT / "analysis/queries/candidate_winners.sql").read_text())
    assert rows == [("rmsnorm", "cand.py", 2, 2, 1, 1.0, None, False, False)]  # gains 2x and 0.5x: geomean 1
    con.execute(f"UPDATE evaluations SET median_ms = 1.995 WHERE {cand}")  # faster everywhere, by 0.25 %
    _, rows = store.query((ROOT / "analysis/queries/candidate_winners.sql").read_text())
    assert rows[0][4:] == (2, 1.003, None, True, False)
    con.execute(f"UPDATE evaluations SET median_ms = 1.0 WHERE {cand}")
    _, rows = store.query((ROOT / "analysis/queries/candidate_winners.sql").read_text())
    assert rows[0][4:6] == (2, 2.0) and rows[0][-2:] == (True, True)
    store.close()


def test_a_candidate_promoted_to_expert_takes_the_expert_label(tmp_path, bench):
    # the same bytes timed first as a candidate path, then shipped as the task's expert
    store = Store(tmp_path / "p.duckdb")
    expert = resolve(bench, "rmsnorm", "expert")
    candidate = Solution(expert.solution_id, "rmsnorm", "benchmarks/candidates/rmsnorm/fast.py", "file",
                         tmp_path / "fast.py", expert.source)
    store.add_solution(candidate)
    store.add_solution(expert)
    assert store.query("SELECT label, path FROM solutions")[1] == [("expert", str(expert.path))]
    store.add_solution(candidate)  # seen again under its path: the shipped name stays
    assert store.query("SELECT label FROM solutions")[1] == [("expert",)]
    store.close()


def test_solution_versions_mark_the_newest_expert(tmp_path, bench):
    store = Store(tmp_path / "v.duckdb")
    old = resolve(bench, "rmsnorm", "expert")
    new = Solution("f" * 64, "rmsnorm", "expert", "file", old.path, old.source + "\n# faster\n")
    store.add_solution(old)
    store.add_solution(new)
    rows = store.query("SELECT solution_id, latest FROM v_solution_versions ORDER BY latest")[1]
    assert rows == [(old.solution_id, False), (new.solution_id, True)]
    store.close()


def test_a_gpu_timing_under_another_flush_is_not_skipped(tmp_path, bench):
    store = Store(tmp_path / "f.duckdb")
    run_sweep(bench, store, _plans(bench), "interpreter", "test", {})
    store.con.execute("UPDATE evaluations SET backend = 'cuda'")  # as GPU rows
    expert = resolve(bench, "rmsnorm", "expert")
    env_id = store.query("SELECT env_id FROM evaluations LIMIT 1")[1][0][0]
    all_ids = {w.id for w in bench.select_workloads("rmsnorm", "smoke")}
    assert store.stored_workloads(expert.solution_id, env_id) == all_ids
    # rows without a recorded mode were timed with the zeroing flush
    assert store.stored_workloads(expert.solution_id, env_id, "events/write") == all_ids
    assert store.stored_workloads(expert.solution_id, env_id, "events/read") == set()
    store.con.execute("""UPDATE evaluations SET timing = '{"l2_flush_mode": "read"}'""")
    assert store.stored_workloads(expert.solution_id, env_id, "events/read") == all_ids
    assert store.stored_workloads(expert.solution_id, env_id, "events/write") == set()
    # an evaluation without a time (failed before timing) stays done under any flush
    store.con.execute("UPDATE evaluations SET median_ms = NULL")
    assert store.stored_workloads(expert.solution_id, env_id, "events/write") == all_ids
    store.close()


def test_a_gpu_timing_in_the_other_mode_is_not_skipped(tmp_path, bench):
    """--timing span after an event-mode run (or the reverse) times again instead of reporting
    the other mode's figure as done."""
    store = Store(tmp_path / "m.duckdb")
    run_sweep(bench, store, _plans(bench), "interpreter", "test", {})
    expert = resolve(bench, "rmsnorm", "expert")
    env_id = store.query("SELECT env_id FROM evaluations LIMIT 1")[1][0][0]
    all_ids = {w.id for w in bench.select_workloads("rmsnorm", "smoke")}
    # the trusted side records what the job asked for
    assert store.query("SELECT DISTINCT json_extract_string(timing, '$.device_span_requested') FROM evaluations "
                       "WHERE median_ms IS NOT NULL")[1] == [("false",)]
    store.con.execute("UPDATE evaluations SET backend = 'cuda'")  # as GPU rows
    assert store.stored_workloads(expert.solution_id, env_id, "events/write") == all_ids
    assert store.stored_workloads(expert.solution_id, env_id, "span/write") == set()
    store.con.execute("""UPDATE evaluations SET timing = '{"device_span_requested": true, "l2_flush_mode": "read"}'""")
    assert store.stored_workloads(expert.solution_id, env_id, "span/read") == all_ids
    assert store.stored_workloads(expert.solution_id, env_id, "events/read") == set()
    # rows from before the request was recorded: a span, or the reason for none, marks span mode
    store.con.execute("""UPDATE evaluations SET timing = '{"span_skipped": "the call waits for the device"}'""")
    assert store.stored_workloads(expert.solution_id, env_id, "span/write") == all_ids
    store.con.execute("""UPDATE evaluations SET timing = '{"l2_flush_mode": "write"}'""")
    assert store.stored_workloads(expert.solution_id, env_id, "events/write") == all_ids
    assert store.stored_workloads(expert.solution_id, env_id, "span/write") == set()
    store.close()


def test_migration_7_gives_a_split_hybrid_run_its_model(tmp_path):
    path = tmp_path / "h.duckdb"
    store = Store(path)
    insert = ("INSERT INTO verdicts (verdict_id, solution_id, task_id, item_id, judge, judge_version, model, verdict, "
              "strength, created_at) VALUES (?, 's1', 'rmsnorm', ?, 'hybrid', '1', ?, ?, ?, now())")
    store.con.execute(insert, ["a", "L1.rsqrt_mul", None, "implemented", "strong"])  # kept from the static judge
    store.con.execute(insert, ["b", "L3.pdl", "openai/m", "missing", "llm"])
    store.con.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")  # as stores written before it
    store.close()
    store = Store(path)
    _, rows = store.query("SELECT item_id, model FROM v_item_verdicts ORDER BY item_id")
    store.close()
    assert rows == [("L1.rsqrt_mul", "openai/m"), ("L3.pdl", "openai/m")]


def test_the_metric_views_ship_with_the_package_and_a_missing_file_is_an_error(tmp_path):
    import d2k

    assert VIEWS_FILE == Path(d2k.__file__).resolve().parent / "sql" / "views.sql" and VIEWS_FILE.is_file()
    store = Store(":memory:")
    assert store.views_version and store.query("SELECT count(*) FROM v_latest_evaluations")[1] == [(0,)]
    store.close()
    with pytest.raises(D2KError, match="metric views file .* is missing"):
        Store(tmp_path / "s.duckdb", views=tmp_path / "nowhere.sql")


# -- the store owns every write ------------------------------------------------------------------
PACKAGE = Path(__file__).resolve().parent.parent / "d2k"
# the modules that write the store's rows; every other module calls their methods
STORE_MODULES = {"store.py", "store_writes.py"}
# statements outside the store modules that do not write the store, each with why
NOT_STORE_WRITES = {
    # the report shadows an analysis table computed for the page (not stored) by a TEMP table of its
    # own session: the store is not written (it may be open read-only)
    ("report.py", "temp.{table}"),
}
TARGET = r'"?[\w{}]+"?(?:\."?[\w{}]+"?)?'  # a table, maybe quoted or schema-qualified, or an f-string's {name}
WRITE = re.compile(rf"\b(?:INSERT\s+(?:OR\s+\w+\s+)?INTO\s+({TARGET})|UPDATE\s+({TARGET})\s+SET\b|DELETE\s+FROM\s+({TARGET}))",
                   re.IGNORECASE)


def _store_tables() -> set[str]:
    tables = {"meta"}
    for path in (PACKAGE / "sql").glob("[0-9][0-9][0-9]_*.sql"):
        tables |= {m.lower() for m in re.findall(r"(?i)CREATE\s+(?:OR\s+REPLACE\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)",
                                                 path.read_text())}
    return tables


def _writes(path: Path) -> list[tuple[int, str, str]]:
    """(line, statement, target) of each INSERT, UPDATE or DELETE against a store table, or against
    a table named at run time (an f-string's ``{...}``), in a module's source."""
    tables = _store_tables()
    text = path.read_text(encoding="utf-8")
    out = []
    for m in WRITE.finditer(text):
        target = next(g for g in m.groups() if g).replace('"', "")
        name = target.lower().removeprefix("main.")
        if "{" in target or name in tables:
            out.append((text.count("\n", 0, m.start()) + 1, " ".join(m.group(0).split()), target))
    return out


def test_only_the_store_modules_write_the_store():
    """Issue #20: the SQL that changes the store's tables lives in d2k/store.py and d2k/store_writes.py;
    any other module of d2k calls a Store method (add one to StoreWrites for a new kind of write)."""
    own = [w for name in STORE_MODULES for w in _writes(PACKAGE / name)]
    # the scan sees the store's own writes (else it would pass by finding nothing anywhere)
    assert {"attempts", "verdicts", "runs", "judge_metrics", "{table}"} <= {t for _, _, t in own}
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in STORE_MODULES:
            continue
        for line, statement, target in _writes(path):
            if (rel, target) not in NOT_STORE_WRITES:
                offenders.append(f"d2k/{rel}:{line}: {statement}")
    assert not offenders, ("the store owns every write: move these statements into a method of Store "
                           "(d2k/store_writes.py) and call it:\n  " + "\n  ".join(offenders))
