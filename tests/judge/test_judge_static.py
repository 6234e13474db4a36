"""Signals, the static judge, the dependency-graph scores, and the judge CLI."""

import json
import subprocess

import pytest
from conftest import d2k_command
from test_judge_facts import TRITON

from d2k.content import Benchmark
from d2k.judge import graph, signals
from d2k.judge.facts import extract
from d2k.judge.static import judge
from d2k.schema import DesignItem


def item(item_id, deps=(), sigs=(), partial=(), partial_when=""):
    return DesignItem(id=item_id, level=int(item_id[1]), title=item_id, guidance="g" * 10, criterion="c" * 10,
                      depends_on=list(deps), signals=list(sigs), partial=list(partial),
                      partial_when=partial_when or ("a weaker form" if partial else ""))


def test_signal_check_rejects_unknown_kinds_and_fields():
    assert signals.check({"kind": "call", "name": "tl.dot"}) == []
    assert "unknown signal kind 'calls'" in signals.check({"kind": "calls", "name": "x"}, "s")[0]
    assert "needs `name`" in signals.check({"kind": "call"}, "s")[0]
    assert "unknown field `nmae`" in signals.check({"kind": "call", "name": "x", "nmae": 1}, "s")[0]
    nested = signals.check({"kind": "any", "of": [{"kind": "bogus"}]}, "s")
    assert nested and "s.of.0" in nested[0]


def test_signal_kinds_come_from_the_registry():
    assert {"call", "value", "cuda", "all", "any", "not"} <= set(signals.KINDS)
    assert all(kind.run.__doc__ for kind in signals.KINDS.values())   # the docs' "holds when"
    assert "cuda feature must be one of" in signals.check({"kind": "cuda", "feature": "tma"}, "s")[0]
    assert signals.check({"kind": "cuda", "feature": "shuffle"}) == []


def test_docs_table_of_signal_kinds_is_generated():
    text = signals.DOCS.read_text(encoding="utf-8")
    assert signals.kinds_markdown() in text
    assert signals.with_kinds_table(text) == text, "regenerate it: python -m d2k.judge.signals --docs"


def test_validate_rejects_an_unknown_signal_kind(content_copy):
    from d2k.validate import validate

    path = content_copy / "design_rubrics/rmsnorm.toml"
    path.write_text(path.read_text().replace('kind = "call", name = "rsqrt"', 'kind = "cal", name = "rsqrt"', 1))
    problems = [str(p) for p in validate(content_copy)[0]]
    assert any("design_rubrics/rmsnorm.toml: items.L1.rsqrt_mul.signals.0" in p and "unknown signal kind 'cal'" in p
               for p in problems), problems


def test_verdicts_from_signals():
    facts = extract(TRITON, "t.py")
    items = [
        item("L1.tiled", sigs=[{"kind": "loop", "contains_call": "dot"}]),
        item("L1.split", sigs=[{"kind": "constexpr", "pattern": "SPLIT"}, {"kind": "call", "name": "atomic_add"}]),
        item("L2.ws", ["L1.tiled"], sigs=[{"kind": "keyword", "name": "warp_specialize"}],
             partial=[{"kind": "keyword", "name": "num_stages", "where": "config"}]),
        item("L3.none", ["L2.ws"], sigs=[{"kind": "call", "name": "make_tensor_descriptor"}]),
        item("L3.semantic"),
        item("L3.tuned", sigs=[{"kind": "autotune", "key_contains": ["M", "N"], "min_configs": 2}]),
    ]
    got = {v.item_id: v for v in judge(facts, items)}
    assert got["L1.tiled"].verdict == "implemented" and got["L1.tiled"].evidence[0]["line"] == 12
    # one of two signals holding is not a partial: the item defines none, so it is binary
    assert got["L1.split"].verdict == "missing" and "binary" not in got["L1.split"].reason
    assert got["L2.ws"].verdict == "partial"
    assert got["L3.none"].verdict == "missing"
    assert got["L3.semantic"].verdict == "undetermined"
    assert got["L3.tuned"].verdict == "implemented"



def test_a_backtracking_pattern_is_undetermined_not_a_hang():
    import time

    # (a|aa)+$ backtracks exponentially on a long run of a's that is not at the end of a line
    facts = extract(TRITON + "\n" + "a" * 60 + "b = 1\n", "t.py")
    bad = item("L1.bad", sigs=[{"kind": "pattern", "regex": r"(a|aa)+$", "scope": "file"}])
    good = item("L1.good", sigs=[{"kind": "pattern", "regex": r"tl\.dot", "scope": "file"}])
    start = time.monotonic()
    got = {v.item_id: v for v in judge(facts, [bad, good])}
    assert time.monotonic() - start < signals.PATTERN_TIMEOUT_S + 5
    assert got["L1.bad"].verdict == "undetermined" and "took over" in got["L1.bad"].reason
    assert got["L1.good"].verdict == "implemented"


def test_scores_levels_dependency_aware_and_flags():
    items = [item("L1.a"), item("L1.b"), item("L2.c", ["L1.a"]), item("L3.d", ["L2.c"]), item("L3.e")]
    verdicts = {"L1.a": "missing", "L1.b": "implemented", "L2.c": "implemented", "L3.d": "partial", "L3.e": "undetermined"}
    s = graph.score(items, verdicts)
    assert s.levels == {1: 0.5, 2: 1.0, 3: 0.5}
    assert s.combined == pytest.approx(100 * (0.5 + 1.0 + 0.5) / 3)
    # L2.c stands on a missing L1.a: its dependency-aware credit is 0, and so is L3.d's
    assert s.dependency_aware == pytest.approx(100 * (0.5 + 0.0 + 0.0) / 3)
    assert s.coverage == pytest.approx(4 / 5)
    assert s.flags == [{"item": "L2.c", "missing_prerequisite": "L1.a"}]


def test_shipped_experts_score_above_their_naive_counterparts():
    bench = Benchmark.load()
    for task_id in bench.tasks:
        items = bench.items(task_id)
        scores = {}
        for name in ("expert", "naive"):
            facts = extract((bench.task_dir(task_id) / f"{name}.py").read_text(), f"{name}.py")
            scores[name] = graph.score(items, {v.item_id: v.verdict for v in judge(facts, items)}).combined
        assert scores["expert"] > scores["naive"], (task_id, scores)


def d2k(*args):
    return subprocess.run(d2k_command(*args), capture_output=True, text=True, timeout=300)


def test_judge_cli_stores_verdicts_and_scores(tmp_path):
    out = d2k("judge", "code", "expert", "--task", "rmsnorm", "--json")
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert payload["status"] == "ok" and len(payload["verdicts"]) == 7
    stored = d2k("sql", "SELECT count(*) AS n FROM v_item_verdicts WHERE task_id = 'rmsnorm' AND judge = 'static'",
                 "--format", "json")
    assert json.loads(stored.stdout) == [{"n": 7}]
    again = d2k("judge", "expert", "--task", "rmsnorm", "--json")  # re-judging replaces, never duplicates
    assert again.returncode == 0
    stored = d2k("sql", "SELECT count(*) AS n FROM verdicts", "--format", "json")
    assert json.loads(stored.stdout) == [{"n": 7}]
    score = d2k("sql", "SELECT combined FROM v_judge_scores WHERE solution = 'expert'", "--format", "json")
    assert json.loads(score.stdout)[0]["combined"] == pytest.approx(payload["scores"]["combined"])


@pytest.mark.parametrize(
    "content, status",
    [("def run(x)\n  return x\n", "unparseable"), ("", "empty")],
)
def test_judge_cli_bad_files_report_a_status(tmp_path, content, status):
    path = tmp_path / "bad.py"
    path.write_text(content)
    out = d2k("judge", "code", str(path), "--task", "rmsnorm", "--json")
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert payload["status"] == status and payload["scores"] is None
    assert {v["verdict"] for v in payload["verdicts"]} == {"undetermined"}


def test_judge_cli_a_kernel_less_solution_scores_zero(tmp_path):
    path = tmp_path / "torch_only.py"
    path.write_text("import torch\ndef run(x, w, eps):\n    return x\n")
    out = d2k("judge", "code", str(path), "--task", "rmsnorm", "--json")
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert payload["status"] == "no_kernel"
    assert {v["verdict"] for v in payload["verdicts"]} == {"missing"}
    assert payload["scores"]["combined"] == 0 and payload["scores"]["coverage"] == 1


def test_judge_cli_binary_and_huge_files(tmp_path):
    junk = tmp_path / "junk.py"
    junk.write_bytes(bytes(range(256)) * 10)
    out = d2k("judge", "code", str(junk), "--task", "rmsnorm")
    assert out.returncode == 2 and "not a UTF-8 text file" in out.stderr and "Traceback" not in out.stderr
    huge = tmp_path / "huge.py"
    huge.write_text("# padding\n" * 1_100_000)
    out = d2k("judge", "code", str(huge), "--task", "rmsnorm", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["status"] == "too_large"


def test_judge_all_judges_every_stored_solution(tmp_path):
    for name in ("expert", "naive"):
        assert d2k("judge", "code", name, "--task", "bf16_gemm").returncode == 0
    out = d2k("judge", "code", "--all")
    assert out.returncode == 0, out.stderr
    assert "judged 2 stored solution(s): 2 ok" in out.stdout
    old = d2k("judge", "--all")  # the spelling before `code`
    assert old.returncode == 0 and "judged 2 stored solution(s): 2 ok" in old.stdout, old.stderr
    bare = d2k("judge")
    assert bare.returncode == 2 and "d2k judge needs a command (code, proposal, optimize, eval)" in bare.stderr


def test_a_hybrid_run_keeps_every_item_in_the_views(tmp_path):
    """A hybrid run mixes verdicts the static judge kept (no model of their own) with the LLM's:
    the views read one run per judge, so every verdict of the run is stored under its model."""
    from d2k.judge.pipeline import store_verdicts
    from d2k.judge.static import Verdict
    from d2k.store import Store

    store = Store(tmp_path / "h.duckdb")
    verdicts = [Verdict("L1.rsqrt_mul", 1, "implemented", "strong"),
                Verdict("L3.pdl", 3, "missing", "llm", model="openai/m", prompt_hash="p")]
    store_verdicts(store, verdicts, "rmsnorm", "hybrid", "1", solution_id="s1", run_model="openai/m")
    _, rows = store.query("SELECT item_id, model, verdict FROM v_item_verdicts ORDER BY item_id")
    store.close()
    assert rows == [("L1.rsqrt_mul", "openai/m", "implemented"), ("L3.pdl", "openai/m", "missing")]
