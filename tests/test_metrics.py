"""The metric views (d2k/sql/views.sql) and what d2k analyze computes from them, on stores built
row by row so every number can be worked out by hand (docs/metrics.md carries the same example)."""

import datetime as dt
import math
import random

import pytest

from d2k.store import Store

T0 = dt.datetime(2026, 12, 2, 12, 0)


def _insert(con, table, **values):
    cols = ", ".join(values)
    con.execute(f"INSERT INTO {table} ({cols}) VALUES ({', '.join('?' * len(values))})", list(values.values()))


class Builder:
    """Rows of a small store: tasks t1 (workloads t1_a, t1_b) and t2 (t2_a), a GPU environment, the
    reference at 4 ms everywhere, a three-item rubric per task (L1.a <- L2.b <- L3.c)."""

    def __init__(self, path):
        self.store = Store(path)
        self.con = self.store.con
        self.n = 0
        _insert(self.con, "environments", env_id="gpu", backend="cuda", gpu_name="Test GPU")
        _insert(self.con, "experiments", experiment_id="x", name="exp", spec="{}", spec_path="spec.toml", created_at=T0)
        for task, workloads in (("t1", ("t1_a", "t1_b")), ("t2", ("t2_a",))):
            _insert(self.con, "tasks", task_id=task, peak="bf16")
            for w in workloads:
                _insert(self.con, "workloads", workload_id=w, task_id=task, tag="bench", flops=1e9, bytes=1e9)
            for item, level, deps in (("L1.a", 1, []), ("L2.b", 2, ["L1.a"]), ("L3.c", 3, ["L2.b"])):
                _insert(self.con, "design_items", task_id=task, item_id=item, level=level, title=f"item {item}",
                        depends_on=deps, weight=1.0)
            self.solution(f"ref_{task}", task, {w: 4.0 for w in workloads}, label="reference", kind="reference")

    def solution(self, solution_id, task, times: dict, label=None, kind="file", failed=(), env="gpu", backend="cuda"):
        _insert(self.con, "solutions", solution_id=solution_id, task_id=task, label=label or f"sub/{solution_id}",
                kind=kind, path="x.py", source="", created_at=T0)
        for workload, ms in times.items():
            self.n += 1
            _insert(self.con, "evaluations", eval_id=f"e{self.n}", run_id="r", solution_id=solution_id, task_id=task,
                    workload_id=workload, env_id=env, backend=backend,
                    status="failed" if workload in failed else "passed", median_ms=ms, created_at=T0)
        return solution_id

    def attempt(self, model, task, condition, submission=None, status="finished", seed=0, proposal=None):
        self.n += 1
        _insert(self.con, "attempts", attempt_id=f"a{self.n}", experiment_id="x", model=model, task_id=task,
                condition=condition, seed=seed, status=status, submission_id=submission, proposal_id=proposal,
                agent_status="submitted" if submission else None)

    def score(self, solution_id, task, combined, aware, judge="static", version="1", at=T0):
        _insert(self.con, "judge_scores", solution_id=solution_id, task_id=task, judge=judge, judge_version=version,
                status="ok", combined=combined, dependency_aware=aware, created_at=at)

    def verdicts(self, solution_id, task, verdicts: dict, judge="static", version="1", at=T0, proposal=False):
        for item, verdict in verdicts.items():
            self.n += 1
            key = {"proposal_id": solution_id} if proposal else {"solution_id": solution_id}
            _insert(self.con, "verdicts", verdict_id=f"v{self.n}", task_id=task, item_id=item, judge=judge,
                    judge_version=version, verdict=verdict, created_at=at, **key)

    def rows(self, sql, params=None):
        cols, rows = self.store.query(sql, params)
        return [dict(zip(cols, r)) for r in rows]


@pytest.fixture
def paired(tmp_path):
    """Two models, two tasks, both conditions; times chosen so the speedups are 4, 2 and 1.
    Model A is correct everywhere. Model B: guided t2 failed in the harness; unguided t1 fails one
    workload (its other workload still has a time, which must not count)."""
    b = Builder(tmp_path / "m.duckdb")
    plan = {  # (model, task, condition): ms per workload, or None for a harness failure
        ("A", "t1", "guided"): 1.0, ("A", "t2", "guided"): 2.0,
        ("A", "t1", "unguided"): 2.0, ("A", "t2", "unguided"): 4.0,
        ("B", "t1", "guided"): 1.0, ("B", "t2", "guided"): None,
        ("B", "t1", "unguided"): 0.5, ("B", "t2", "unguided"): 4.0,
    }
    impl = {"guided": (80.0, 60.0), "unguided": (40.0, 20.0)}
    for (model, task, condition), ms in plan.items():
        if ms is None:
            b.attempt(model, task, condition, status="failed")
            continue
        workloads = ("t1_a", "t1_b") if task == "t1" else ("t2_a",)
        failed = ("t1_b",) if (model, task, condition) == ("B", "t1", "unguided") else ()
        sub = b.solution(f"{model}_{task}_{condition}", task, {w: ms for w in workloads}, failed=failed)
        b.attempt(model, task, condition, submission=sub)
        b.score(sub, task, *impl[condition])
        # an older version of the static judge on the same code: must not double the attempt
        b.score(sub, task, 0.0, 0.0, version="0", at=T0 - dt.timedelta(days=1))
    return b


def test_headline_counts_failures_and_defines_the_paper_geomean(paired):
    rows = {(r["model"], r["condition"]): r for r in paired.rows("SELECT * FROM v_headline")}
    a, b = rows[("A", "guided")], rows[("B", "guided")]
    assert a["correctness"] == 1.0 and a["performance_score"] == 3.0          # (4 + 2) / 2
    assert a["geomean_speedup"] == pytest.approx(math.sqrt(8))                 # correct everywhere
    assert rows[("A", "unguided")]["geomean_speedup"] == pytest.approx(math.sqrt(2))
    # B: the harness failure is an incorrect task, not a missing one
    assert b["correctness"] == 0.5 and b["harness_failed"] == 1 and b["correctness_finished_only"] == 1.0
    assert b["performance_score"] == 2.0                                       # (4 + 0) / 2
    assert b["geomean_speedup"] is None and b["geomean_speedup_correct_tasks"] == pytest.approx(4.0)
    bu = rows[("B", "unguided")]
    # t1 failed a workload: incorrect, its other workload's 8x speedup counts nowhere
    assert bu["correctness"] == 0.5 and bu["performance_score"] == 0.5 and bu["geomean_speedup_correct_tasks"] == 1.0
    pooled = rows[("(all models)", "guided")]
    assert pooled["pooled"] and pooled["models"] == 2 and pooled["tasks"] == 2
    assert pooled["correctness"] == 0.75 and pooled["performance_score"] == 2.5
    assert pooled["geomean_speedup"] == pytest.approx(math.sqrt(8)) and pooled["models_in_geomean"] == 1
    # implementation: dependency-aware by default, the failed attempt scores 0
    assert a["implementation_score"] == 60.0 and a["implementation_score_plain"] == 80.0
    assert b["implementation_score"] == 30.0 and b["implementation_score_judged"] == 60.0
    assert a["implementation_judge"] == "static"
    # v_performance is the same without the pooled rows
    assert len(paired.rows("SELECT * FROM v_performance")) == 4


def test_attempts_one_row_each_and_no_speed_when_incorrect(paired):
    rows = paired.rows("SELECT * FROM v_attempts")
    assert len(rows) == 8
    by = {(r["model"], r["task_id"], r["condition"]): r for r in rows}
    wrong = by[("B", "t1", "unguided")]
    assert not wrong["correct"] and wrong["geomean_speedup"] is None and wrong["passed"] == 1
    assert by[("A", "t1", "guided")]["geomean_speedup"] == pytest.approx(4.0)
    failed = by[("B", "t2", "guided")]
    assert failed["harness_failed"] and not failed["correct"] and failed["implementation_score"] == 0.0
    paired_rows = {(r["model"], r["task_id"]): r for r in paired.rows("SELECT * FROM v_paired")}
    assert paired_rows[("B", "t1")]["unguided_speedup"] is None and paired_rows[("B", "t1")]["unguided_task_score"] == 0
    assert paired_rows[("B", "t2")]["guided_correct"] == 0.0 and paired_rows[("B", "t2")]["guided_harness_failed"] == 1


def test_a_failed_workload_voids_the_task_speedup(paired):
    rows = {r["solution_id"]: r for r in paired.rows("SELECT * FROM v_task_speedup")}
    wrong = rows["B_t1_unguided"]
    assert not wrong["correct"] and wrong["geomean_speedup"] is None
    assert wrong["geomean_speedup_passed"] == pytest.approx(8.0)  # the alternative, over passed workloads only
    assert rows["A_t1_guided"]["geomean_speedup"] == pytest.approx(4.0)


def test_a_reference_that_waited_for_the_device_is_marked_on_its_speedups(tmp_path):
    b = Builder(tmp_path / "w.duckdb")
    # the t1_a reference's latest evaluation was timed unprofiled: it waited for the device mid-call
    b.con.execute("UPDATE evaluations SET timing = '{\"waits_for_device\": true}' "
                  "WHERE solution_id = 'ref_t1' AND workload_id = 't1_a'")
    b.solution("fast", "t1", {"t1_a": 1.0, "t1_b": 2.0})
    rows = {r["workload_id"]: r for r in b.rows("SELECT * FROM v_workload_speedup WHERE solution_id = 'fast'")}
    assert rows["t1_a"]["reference_waits_for_device"] and not rows["t1_b"]["reference_waits_for_device"]
    assert rows["t1_a"]["speedup"] == pytest.approx(4.0)  # marked, not changed
    (task,) = b.rows("SELECT * FROM v_task_speedup WHERE solution_id = 'fast'")
    assert task["host_synced_reference_workloads"] == 1
    (ref,) = b.rows("SELECT waits_for_device FROM v_evaluations WHERE solution_id = 'ref_t1' AND workload_id = 't1_a'")
    assert ref["waits_for_device"] is True


def test_a_reference_issued_late_carries_its_late_fraction(tmp_path):
    b = Builder(tmp_path / "l.duckdb")
    # every timed call of the t1_a reference was issued after its hold ran out: the host's rate
    b.con.execute("UPDATE evaluations SET n_samples = 300, timing = '{\"late_calls\": 300}' "
                  "WHERE solution_id = 'ref_t1' AND workload_id = 't1_a'")
    b.con.execute("UPDATE evaluations SET n_samples = 300, timing = '{\"late_calls\": 30}' "
                  "WHERE solution_id = 'ref_t1' AND workload_id = 't1_b'")
    b.solution("fast", "t1", {"t1_a": 1.0, "t1_b": 2.0})
    rows = {r["workload_id"]: r for r in b.rows("SELECT * FROM v_workload_speedup WHERE solution_id = 'fast'")}
    assert rows["t1_a"]["reference_late_fraction"] == pytest.approx(1.0)
    assert rows["t1_b"]["reference_late_fraction"] == pytest.approx(0.1)
    assert rows["t1_a"]["speedup"] == pytest.approx(4.0)  # marked, not changed
    late = {r["workload_id"]: r["late_fraction"]
            for r in b.rows("SELECT workload_id, late_fraction FROM v_evaluations WHERE solution_id = 'ref_t1'")}
    assert late == {"t1_a": pytest.approx(1.0), "t1_b": pytest.approx(0.1)}


def test_a_task_with_an_eager_stand_in_divides_by_the_baseline(tmp_path):
    b = Builder(tmp_path / "s.duckdb")
    # t2's reference is a sequential definition: its task names a baseline as the eager figure
    b.con.execute("UPDATE tasks SET eager_stand_in = 'chunked' WHERE task_id = 't2'")
    b.solution("chunk_t2", "t2", {"t2_a": 2.0}, label="baseline:chunked", kind="baseline")
    b.solution("fast_t1", "t1", {"t1_a": 1.0, "t1_b": 1.0})
    b.solution("fast_t2", "t2", {"t2_a": 1.0})
    rows = {r["solution_id"] + "/" + r["workload_id"]: r for r in b.rows("SELECT * FROM v_workload_speedup")}
    assert rows["fast_t2/t2_a"]["speedup"] == pytest.approx(2.0)           # 2 ms stand-in, not the 4 ms reference
    assert rows["fast_t2/t2_a"]["reference_stand_in"] == "baseline:chunked"
    assert rows["fast_t1/t1_a"]["speedup"] == pytest.approx(4.0) and rows["fast_t1/t1_a"]["reference_stand_in"] is None
    tasks = {r["solution_id"]: r for r in b.rows("SELECT * FROM v_task_speedup")}
    assert tasks["fast_t2"]["stand_in_reference_workloads"] == 1 and tasks["fast_t1"]["stand_in_reference_workloads"] == 0


def test_speed_not_measured_leaves_performance_score_null(tmp_path):
    b = Builder(tmp_path / "i.duckdb")
    for condition in ("guided", "unguided"):
        sub = b.solution(f"s_{condition}", "t2", {"t2_a": 1.0}, env="cpu", backend="interpreter")
        b.attempt("A", "t2", condition, submission=sub)
    row = b.rows("SELECT * FROM v_headline WHERE NOT pooled AND condition = 'guided'")[0]
    assert row["correctness"] == 1.0 and row["performance_score"] is None and not row["speed_measured"]


def test_latest_verdicts_levels_and_prerequisite_gaps(paired):
    b = paired
    sub = "A_t1_guided"
    b.verdicts(sub, "t1", {"L1.a": "implemented", "L2.b": "missing", "L3.c": "missing"}, version="0",
               at=T0 - dt.timedelta(days=1))
    b.verdicts(sub, "t1", {"L1.a": "missing", "L2.b": "implemented", "L3.c": "partial"})
    verdicts = b.rows("SELECT item_id, verdict, judge_version FROM v_item_verdicts WHERE solution_id = ? ORDER BY 1", [sub])
    assert [(v["item_id"], v["verdict"], v["judge_version"]) for v in verdicts] == [
        ("L1.a", "missing", "1"), ("L2.b", "implemented", "1"), ("L3.c", "partial", "1")]
    credit = {r["item_id"]: (r["credit"], r["aware_credit"]) for r in b.rows(
        "SELECT * FROM v_item_credit WHERE solution_id = ?", [sub])}
    assert credit == {"L1.a": (0.0, 0.0), "L2.b": (1.0, 0.0), "L3.c": (0.5, 0.0)}
    levels = {r["level"]: (r["plain"], r["dependency_aware"]) for r in b.rows(
        "SELECT * FROM v_solution_level_scores WHERE solution_id = ?", [sub])}
    assert levels == {1: (0.0, 0.0), 2: (1.0, 0.0), 3: (0.5, 0.0)}
    gaps = b.rows("SELECT item_id, prerequisite FROM v_prerequisite_gaps WHERE solution_id = ?", [sub])
    assert gaps == [{"item_id": "L2.b", "prerequisite": "L1.a"}]
    summary = b.rows("SELECT * FROM v_prerequisite_gap_summary")
    assert summary[0]["submissions_with_gap"] == 1 and summary[0]["judged_submissions"] == 1
    missed = {r["item_id"]: r for r in b.rows("SELECT * FROM v_missed_items WHERE condition = 'guided'")}
    assert missed["L1.a"]["miss_rate"] == 1.0 and missed["L1.a"]["rank_in_level"] == 1
    per_level = b.rows("SELECT * FROM v_implementation_levels WHERE model = 'A' AND condition = 'guided' ORDER BY level")
    assert [(r["level"], r["plain"], r["dependency_aware"]) for r in per_level] == [(1, 0.0, 0.0), (2, 1.0, 0.0), (3, 0.5, 0.0)]


def test_an_undetermined_prerequisite_counts_one_and_stops_the_chain(paired):
    b = paired
    b.verdicts("A_t2_guided", "t2", {"L1.a": "missing", "L2.b": "undetermined", "L3.c": "implemented"})
    credit = {r["item_id"]: r["aware_credit"] for r in b.rows(
        "SELECT * FROM v_item_credit WHERE solution_id = 'A_t2_guided'")}
    assert credit == {"L1.a": 0.0, "L2.b": None, "L3.c": 1.0}


def test_sql_scores_match_the_judge_graph(tmp_path):
    from d2k.content import Benchmark
    from d2k.judge import graph

    bench = Benchmark.load(only=["rmsnorm", "flash_attention_prefill", "softmax_vocab"])
    store = Store(tmp_path / "g.duckdb")
    store.sync_content(bench)
    rng = random.Random(3)
    n = 0
    expected = {}
    for task in bench.tasks:
        items = bench.items(task)
        for k in range(12):
            solution_id = f"{task}-{k}"
            verdicts = {i.id: rng.choice(("implemented", "partial", "missing", "missing", "undetermined")) for i in items}
            for item_id, verdict in verdicts.items():
                n += 1
                _insert(store.con, "verdicts", verdict_id=f"v{n}", solution_id=solution_id, task_id=task,
                        item_id=item_id, judge="static", judge_version="1", verdict=verdict, created_at=T0)
            scores = graph.score(items, verdicts)
            expected[solution_id] = (scores.combined, scores.dependency_aware)
    _, rows = store.query("""SELECT solution_id, 100 * avg(plain), 100 * avg(dependency_aware)
                             FROM v_solution_level_scores GROUP BY ALL""")
    for solution_id, combined, aware in rows:
        want = expected[solution_id]
        assert combined == pytest.approx(want[0]) and aware == pytest.approx(want[1]), solution_id
    assert len(rows) == len(expected)
    store.close()


def test_design_vs_build(paired):
    b = paired
    sub = "A_t1_guided"
    b.con.execute("UPDATE attempts SET proposal_id = 'p1' WHERE submission_id = ?", [sub])
    b.verdicts("p1", "t1", {"L1.a": "covered", "L2.b": "missing", "L3.c": "covered"}, judge="llm", proposal=True)
    b.verdicts(sub, "t1", {"L1.a": "missing", "L2.b": "implemented", "L3.c": "partial"})
    outcome = {r["item_id"]: r["outcome"] for r in b.rows("SELECT * FROM v_design_vs_build")}
    assert outcome == {"L1.a": "designed, not built", "L2.b": "built, not designed", "L3.c": "designed and built"}
    summary = b.rows("SELECT sum(designed_not_built) AS dnb, sum(built_not_designed) AS bnd FROM v_design_build_summary")
    assert summary == [{"dnb": 1, "bnd": 1}]


def test_views_version_is_recorded(paired):
    from d2k.store import VIEWS_FILE, views_version

    version = views_version(VIEWS_FILE.read_text())
    assert paired.rows("SELECT value FROM meta WHERE key = 'views_version'") == [{"value": version}]
    assert paired.store.views_version == version


# -- d2k analyze ----------------------------------------------------------------------------------
def test_bootstrap_estimates_are_the_headline_and_intervals_contain_them(paired):
    from d2k.analysis import bootstrap

    cols, rows = bootstrap(paired.store, n_boot=400, views_version="vtest")
    records = [dict(zip(cols, r)) for r in rows]
    headline = {(r["model"], r["condition"]): r for r in paired.rows("SELECT * FROM v_headline")}
    for r in records:
        if r["condition"] == "guided - unguided":
            continue
        want = headline[(r["model"], r["condition"])][r["metric"]]
        if want is None:
            assert r["estimate"] is None
            continue
        assert r["estimate"] == pytest.approx(want), (r["model"], r["metric"])
        assert r["ci_low"] - 1e-9 <= r["estimate"] <= r["ci_high"] + 1e-9
        assert r["views_version"] == "vtest" and r["n_tasks"] == 2
    diff = next(r for r in records if r["model"] == "A" and r["metric"] == "performance_score"
                and r["condition"] == "guided - unguided")
    assert diff["estimate"] == pytest.approx(3.0 - 1.5)
    # two tasks, both better guided: of the 4 sign assignments, 2 are as extreme
    assert diff["p_value"] == pytest.approx(0.5)


def test_sign_flip_p_value_is_exact_for_small_samples():
    from d2k.analysis import sign_flip_p_value

    assert sign_flip_p_value([1.0, 1.0, 1.0]) == pytest.approx(2 / 8)
    assert sign_flip_p_value([1.0, -1.0]) == 1.0
    assert sign_flip_p_value([0.0, 0.0]) == 1.0
    assert sign_flip_p_value([float("nan")]) is None
    assert sign_flip_p_value([1.0] * 20) < 1e-3  # Monte Carlo beyond 16


def test_attribution_finds_the_item_that_carries_the_speed(tmp_path):
    from d2k.analysis import attribution

    b = Builder(tmp_path / "a.duckdb")
    rng = random.Random(1)
    for k in range(16):
        c = k % 2 == 0             # L3.c implemented: twice as fast
        a = rng.random() < 0.5     # L1.a: noise
        ms = (1.0 if c else 2.0) * (1 + 0.05 * rng.random())
        sid = b.solution(f"s{k}", "t1", {"t1_a": ms, "t1_b": ms})
        b.verdicts(sid, "t1", {"L1.a": "implemented" if a else "missing", "L2.b": "implemented",
                                "L3.c": "implemented" if c else "missing"})
    cols, rows = attribution(b.store, n_boot=200, views_version="vtest")
    items = {r["feature"]: r for r in (dict(zip(cols, x)) for x in rows) if r["scope"] == "item"}
    assert items["L3.c"]["factor"] > 1.5 and items["L3.c"]["ci_low"] > 1.2
    assert items["L1.a"]["ci_low"] < 1.0 < items["L1.a"]["ci_high"]
    assert items["L2.b"]["factor"] is None  # implemented by every solution: not identifiable
    assert items["L3.c"]["n_solutions"] == 16 and items["L3.c"]["gpu_name"] == "Test GPU"


def test_analyze_stores_rows_stamped_with_the_views_version(paired):
    from d2k.analysis import analyze, stored_or_computed

    counts = analyze(paired.store, n_boot=200)
    assert counts["bootstrap"] > 0
    version = paired.store.views_version
    assert paired.rows("SELECT DISTINCT views_version FROM analysis_bootstrap") == [{"views_version": version}]
    _, _, note = stored_or_computed(paired.store, "analysis_bootstrap")
    assert note.startswith("stored")
    paired.con.execute("UPDATE analysis_bootstrap SET views_version = 'old'")
    _, rows, note = stored_or_computed(paired.store, "analysis_bootstrap")
    assert rows and "computed for this report" in note and "other views" in note
