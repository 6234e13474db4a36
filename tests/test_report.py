"""The report (`d2k report`) and the headline metric views it shows (v_performance)."""

import csv
import datetime as dt
import subprocess

import pytest
from conftest import d2k_command

from d2k.content import Benchmark, find_root
from d2k.judge.pipeline import judge_solution, store_judgement
from d2k.report import SECTIONS, build, write
from d2k.solutions import resolve
from d2k.store import Store
from d2k.sweep import Plan, run_sweep

# one worker runs this module: its tests share one module-scoped run
pytestmark = pytest.mark.xdist_group("test_report")


@pytest.fixture(scope="module")
def gpu_like_store(tmp_path_factory):
    """rmsnorm's expert, naive and reference run on the interpreter, then dressed up as GPU rows
    with chosen times (reference 4 ms, naive 2 ms, expert 1 ms) and a calibration; both judged."""
    path = tmp_path_factory.mktemp("report") / "r.duckdb"
    bench = Benchmark.load(only=["rmsnorm"])
    store = Store(path)
    smoke = bench.select_workloads("rmsnorm", "smoke")
    solutions = {name: resolve(bench, "rmsnorm", name) for name in ("expert", "naive", "reference")}
    result = run_sweep(bench, store, [Plan(s, smoke) for s in solutions.values()], "interpreter", "test", {})
    # every row is dressed up below as a passed GPU figure: a row that did not pass would make the
    # report tests fail far from the cause, so say here which one and why
    assert [(r["workload_id"], r["status"], r["reason"]) for r in result.records if r["status"] != "passed"] == []
    con = store.con
    con.execute("UPDATE evaluations SET backend = 'cuda'")
    con.execute("UPDATE environments SET backend = 'cuda', gpu_name = 'Test GPU'")
    con.execute("UPDATE workloads SET tag = 'bench'")
    for name, ms in (("reference", 4.0), ("naive", 2.0), ("expert", 1.0)):
        con.execute("UPDATE evaluations SET median_ms = ? WHERE solution_id = ?", [ms, solutions[name].solution_id])
    env_id = con.execute("SELECT env_id FROM environments").fetchone()[0]
    con.execute("INSERT INTO calibrations (calibration_id, env_id, measured_at, copy_bytes_per_s, bf16_flops_per_s) "
                "VALUES ('c1', ?, ?, 4e12, 7e14)", [env_id, dt.datetime(2026, 1, 1)])
    for name in ("expert", "naive"):
        store_judgement(store, judge_solution(bench, solutions[name], "static", None, store, False))
    store.close()
    return path, solutions


def _scratch_copy(gpu_like_store, tmp_path):
    """A private copy of the module's store (path, open store, solutions) for a test that edits it."""
    path, solutions = gpu_like_store
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(path.read_bytes())
    return copy, Store(copy), solutions


def _sections(path):
    store = Store(path)
    try:
        return {r.section.name: r for r in build(store, find_root())}
    finally:
        store.close()


def test_empty_store_reports_every_section_as_empty(tmp_path):
    out = tmp_path / "rep"
    Store(tmp_path / "e.duckdb").close()
    proc = subprocess.run(d2k_command("report", "--db", str(tmp_path / "e.duckdb"), "--out", str(out)),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    page = (out / "index.html").read_text()
    for section in SECTIONS:
        assert f"id='{section.name}'" in page
    assert "No GPU evaluations in this store" in page and "<svg" not in page
    assert not list((out / "figures").iterdir())
    assert "0 figure(s)" in proc.stdout


def test_speed_sections_use_gpu_rows_with_speedup_over_the_reference(gpu_like_store):
    path, _ = gpu_like_store
    sections = _sections(path)
    speed = [dict(zip(sections["task_speed"].columns, r)) for r in sections["task_speed"].rows]
    by_name = {r["solution"]: r for r in speed}
    assert by_name["expert"]["geomean_speedup"] == 4.0 and by_name["naive"]["geomean_speedup"] == 2.0
    assert by_name["reference"]["geomean_speedup"] == 1.0
    assert all(r["latest"] for r in speed) and by_name["expert"]["gpu_name"] == "Test GPU"
    assert sections["task_speed"].figure.startswith("<svg")
    assert sections["workload_speed"].figure.startswith("<svg")
    # both solutions judged: the expert implements every item, the naive one fewer
    impl = {r[1]: r for r in sections["implementation"].rows}
    combined = sections["implementation"].columns.index("combined")
    assert impl["expert"][combined] == 100.0 and impl["naive"][combined] < 100.0
    assert sections["unimplemented"].rows, "naive leaves properties out"
    assert sections["performance"].rows == [] and sections["performance"].figure is None


def test_interpreter_rows_never_reach_the_speed_sections(tmp_path):
    bench = Benchmark.load(only=["rmsnorm"])
    store = Store(tmp_path / "i.duckdb")
    smoke = bench.select_workloads("rmsnorm", "smoke")[:1]
    run_sweep(bench, store, [Plan(resolve(bench, "rmsnorm", "expert"), smoke)], "interpreter", "test", {})
    results = {r.section.name: r for r in build(store, find_root())}
    store.close()
    assert results["task_speed"].rows == [] and results["workload_speed"].rows == []
    assert results["correctness"].rows and results["correctness"].rows[0][2] == "interpreter"


def test_report_files_match_the_page(gpu_like_store, tmp_path):
    path, _ = gpu_like_store
    store = Store(path)
    results = build(store, find_root())
    store.close()
    page = write(results, tmp_path / "rep", str(path))
    html_text = page.read_text()
    assert html_text.count("<figure>") == len(list((tmp_path / "rep" / "figures").glob("*.svg"))) >= 3
    with open(tmp_path / "rep" / "tables" / "task_speed.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["solution"] for r in rows} == {"expert", "naive", "reference"}
    # a second report from an empty store removes the figures the first one drew
    empty = Store(tmp_path / "e.duckdb")
    write(build(empty, find_root()), tmp_path / "rep", "e")
    empty.close()
    assert not list((tmp_path / "rep" / "figures").glob("*.svg"))


def test_performance_score_counts_an_incorrect_task_as_zero(gpu_like_store, tmp_path):
    copy, store, solutions = _scratch_copy(gpu_like_store, tmp_path)
    con = store.con
    con.execute("INSERT INTO experiments VALUES ('x1', 'exp', '{}', 'spec.toml', ?)", [dt.datetime(2026, 1, 1)])
    for attempt, condition, name in (("a1", "guided", "expert"), ("a2", "unguided", "naive")):
        con.execute("INSERT INTO attempts (attempt_id, experiment_id, model, task_id, condition, seed, status, "
                    "submission_id) VALUES (?, 'x1', 'm', 'rmsnorm', ?, 0, 'finished', ?)",
                    [attempt, condition, solutions[name].solution_id])
    con.execute("UPDATE evaluations SET status = 'failed' WHERE solution_id = ?", [solutions["naive"].solution_id])
    _, rows = store.query("SELECT condition, correctness, performance_score, geomean_speedup FROM v_performance ORDER BY 1")
    assert rows == [("guided", 1.0, 4.0, None), ("unguided", 0.0, 0.0, None)]
    # correct in both conditions: the geomean speedup is defined
    con.execute("UPDATE evaluations SET status = 'passed' WHERE solution_id = ?", [solutions["naive"].solution_id])
    _, rows = store.query("SELECT condition, performance_score, geomean_speedup FROM v_performance ORDER BY 1")
    assert rows == [("guided", 4.0, 4.0), ("unguided", 2.0, 2.0)]
    store.close()
    sections = _sections(copy)
    assert sections["performance"].figure and sections["paired"].figure


def test_unwritable_output_is_a_one_line_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    Store(tmp_path / "e.duckdb").close()
    proc = subprocess.run(d2k_command("report", "--db", str(tmp_path / "e.duckdb"), "--out", str(blocker / "rep")),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "cannot write the report" in proc.stderr
    assert "Traceback" not in proc.stderr
    # off a terminal the progress display is off: the one line is the first (it was a blank line)
    assert proc.stderr.splitlines()[0].startswith("error: cannot write the report"), proc.stderr


def test_design_graph_credits_each_item_over_the_judged_solutions(gpu_like_store):
    path, _ = gpu_like_store
    section = _sections(path)["design_graph"]
    rows = [dict(zip(section.columns, r)) for r in section.rows]
    bench = Benchmark.load(only=["rmsnorm"])
    assert sorted(r["item_id"] for r in rows) == sorted(i.id for i in bench.items("rmsnorm"))
    for r in rows:
        item = next(i for i in bench.items("rmsnorm") if i.id == r["item_id"])
        assert r["depends_on"] == ", ".join(item.depends_on)
        assert r["implemented"] + r["partial"] + r["missing"] == r["decided"] <= 2  # expert and naive
        if r["decided"]:
            assert r["credit"] == round((r["implemented"] + 0.5 * r["partial"]) / r["decided"], 2)
    # the expert implements every item; the naive kernel leaves some out (0.5) and half-does others
    assert all(r["decided"] == 2 and r["credit"] >= 0.5 for r in rows)
    assert {0.5, 0.75} <= {r["credit"] for r in rows}
    assert section.figure.startswith("<svg") and "rmsnorm" in section.figure


def test_trust_section_lists_what_the_trusted_side_could_not_vouch_for(gpu_like_store, tmp_path):
    copy, store, solutions = _scratch_copy(gpu_like_store, tmp_path)
    store.close()
    # honest rows: at most this machine's sandbox warnings
    assert {r[0] for r in _sections(copy)["trust"].rows} <= {"sandbox warning"}
    store = Store(copy)
    con = store.con
    con.execute("UPDATE evaluations SET kernel_less = true WHERE solution_id = ?", [solutions["reference"].solution_id])
    con.execute("UPDATE evaluations SET status = 'timing_suspect', reason = 'per-call times add up to more' "
                "WHERE solution_id = ?", [solutions["naive"].solution_id])
    con.execute("""UPDATE evaluations SET flags = '{"host_late": {"calls": 3, "of": 300, "worst_us": 61.5}}'
                   WHERE solution_id = ?""", [solutions["expert"].solution_id])
    con.execute("""UPDATE runs SET sandbox = '{"variants": [{"warnings": ["no namespaces here"]}, {"warnings": []}]}'""")
    # a passed reference that read a device value mid-call, and a passed expert with 14 % of its
    # span outside its kernels (gdn_chunk_prefill's expert at 1x32768 on session 25's H100)
    con.execute("""UPDATE evaluations SET timing = '{"waits_for_device": true}' WHERE solution_id = ?""",
                [solutions["reference"].solution_id])
    con.execute("UPDATE evaluations SET span_median_ms = 3.6363, kernel_sum_median_ms = 3.1402 WHERE solution_id = ?",
                [solutions["expert"].solution_id])
    store.close()
    rows = _sections(copy)["trust"].rows
    kinds = {r[0] for r in rows}
    assert kinds == {"kernel-less solution", "timing rejected", "calls issued late", "waits for the device",
                     "span outside its kernels", "sandbox warning"}
    waits = [r for r in rows if r[0] == "waits for the device"]
    assert waits and {r[3] for r in waits} == {"reference"}
    outside = next(r for r in rows if r[0] == "span outside its kernels")
    assert outside[3] == "expert" and outside[6] == "496 of 3636 µs of the device span (14 %)"
    late = next(r for r in rows if r[0] == "calls issued late")
    assert late[3] == "expert" and late[6] == "3 of 300 timed calls (worst 61.5 µs of host time)"
    assert any(r[0] == "sandbox warning" and r[6] == "no namespaces here" for r in rows)


def test_the_run_summary_names_which_per_call_figure_its_medians_are(gpu_like_store, capsys):
    from d2k.cli.evaluate import _summary

    path, solutions = gpu_like_store
    store = Store(path, read_only=True)
    try:
        columns, rows = store.query("SELECT env_id, backend, gpu_name FROM environments")
        env = dict(zip(columns, rows[0], strict=True))
        ids = sorted(s.solution_id for s in solutions.values())
        for device_span, words in ((False, "per-call event windows"), (True, "per-call device spans")):
            for per_workload in (False, True):
                _summary(store, env, ids, per_workload, device_span)
                out = " ".join(capsys.readouterr().out.split())
                assert words in out and "Test GPU" in out, out
    finally:
        store.close()


def test_a_speedup_compares_only_figures_timed_the_same_way(gpu_like_store, tmp_path):
    """A span-mode expert against an event-mode reference has no speedup (it would mix two clocks);
    once the reference is timed in span mode too, it has one again."""
    copy, store, solutions = _scratch_copy(gpu_like_store, tmp_path)
    expert, reference = solutions["expert"].solution_id, solutions["reference"].solution_id
    query = "SELECT DISTINCT speedup, timing_mode FROM v_workload_speedup WHERE solution_id = ?"
    try:
        assert store.query(query, [expert])[1] == [(4.0, "events/write")]
        span = """UPDATE evaluations SET timing = '{"device_span_requested": true, "l2_flush_mode": "read"}'
                  WHERE solution_id = ?"""
        store.con.execute(span, [expert])
        assert store.query(query, [expert])[1] == [(None, "span/read")]
        store.con.execute(span, [reference])
        assert store.query(query, [expert])[1] == [(4.0, "span/read")]
        # the analysts' baselines table says so too (naive is still an event-mode figure)
        columns, rows = store.query((find_root() / "analysis/queries/baselines_table.sql").read_text())
        assert rows and {r[columns.index("timing")] for r in rows} == {"events/write, span/read"}
    finally:
        store.close()
    # the report's speed tables say how each row was timed: the task table in a column, the
    # workload table in its note where not the default (a row of two modes shows both)
    sections = _sections(copy)
    task = sections["task_speed"]
    assert {r[task.columns.index("timing")] for r in task.rows} == {"span/read", "events/write"}
    workload = sections["workload_speed"]
    assert {r[workload.columns.index("note")] for r in workload.rows} == {"events/write, span/read"}
