"""Judge solutions and gold sets, and store what the judges decided."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass

from d2k.content import Benchmark
from d2k.errors import D2KError
from d2k.judge import agreement, facts as facts_mod, gold as gold_mod, graph, static
from d2k.judge.static import Verdict
from d2k.solutions import Solution

JUDGES = ("static",)


@dataclass
class Judgement:
    task_id: str
    solution_id: str
    status: str
    detail: str
    verdicts: list[Verdict]
    scores: graph.Scores | None
    judge: str = static.NAME
    judge_version: str = static.VERSION


def judge_source(bench: Benchmark, task_id: str, source: bytes | str, path: str, solution_id: str,
                 judge: str = "static") -> Judgement:
    if judge not in JUDGES:
        raise D2KError(f"--judge must be one of {', '.join(JUDGES)}, not {judge!r}")
    items = bench.items(task_id)
    if not items:
        raise D2KError(f"task {task_id} has no design rubric items")
    facts = facts_mod.extract(source, path)
    verdicts = static.judge(facts, items)
    scores = graph.score(items, {v.item_id: v.verdict for v in verdicts}) if facts.status == "ok" else None
    return Judgement(task_id, solution_id, facts.status, facts.detail, verdicts, scores)


def store_judgement(store, judgement: Judgement) -> None:
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    con = store.con
    con.execute("DELETE FROM verdicts WHERE solution_id = ? AND judge = ? AND judge_version = ?",
                [judgement.solution_id, judgement.judge, judgement.judge_version])
    rows = [[uuid.uuid4().hex, judgement.solution_id, None, judgement.task_id, v.item_id, judgement.judge,
             judgement.judge_version, None, None, v.verdict, v.strength, None, v.reason,
             _json(v.evidence), None, now] for v in judgement.verdicts]
    if rows:
        con.executemany("INSERT INTO verdicts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    s = judgement.scores.as_dict() if judgement.scores else {}
    con.execute(
        "INSERT OR REPLACE INTO judge_scores VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [judgement.solution_id, judgement.task_id, judgement.judge, judgement.judge_version, judgement.status,
         judgement.detail, s.get("l1"), s.get("l2"), s.get("l3"), s.get("combined"), s.get("dependency_aware"),
         s.get("coverage"), _json(s.get("flags", [])), now],
    )


def _json(value) -> str:
    import json

    return json.dumps(value, default=str)


def judge_solution(bench: Benchmark, solution: Solution, judge: str = "static") -> Judgement:
    return judge_source(bench, solution.task_id, solution.source, str(solution.path), solution.solution_id, judge)


def gold_rows(bench: Benchmark, judge: str = "static") -> tuple[list[agreement.Row], list[Judgement]]:
    """Judge every gold solution; one row per (solution, item) with gold and predicted verdicts."""
    item_ids = {t: {i.id for i in bench.items(t)} for t in bench.tasks}
    sets = gold_mod.load(bench.root, list(bench.tasks), item_ids)
    if not sets:
        raise D2KError(f"no gold set found under {gold_mod.gold_dir(bench.root)}")
    rows, judgements = [], []
    for gold_set in sets:
        levels = {i.id: i.level for i in bench.items(gold_set.task_id)}
        for solution in gold_set.solutions:
            path = gold_set.path_of(solution)
            source = path.read_bytes()
            from d2k.solutions import sha256

            result = judge_source(bench, gold_set.task_id, source, str(path), sha256(source.decode("utf-8", "replace")), judge)
            judgements.append(result)
            predicted = {v.item_id: v.verdict for v in result.verdicts}
            for label in solution.labels:
                rows.append(agreement.Row(gold_set.task_id, solution.name, label.item, levels[label.item],
                                          label.verdict, predicted.get(label.item, "undetermined")))
    return rows, judgements


def store_metrics(store, judge: str, version: str, gold: str, results: list[dict]) -> None:
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    store.con.execute("DELETE FROM judge_metrics WHERE judge = ? AND judge_version = ? AND gold = ?", [judge, version, gold])
    store.con.executemany(
        "INSERT INTO judge_metrics VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [[judge, version, gold, r["scope"], r["key"], r["n"], r["decided"], r["accuracy"], r["precision"],
          r["recall"], r["f1"], r["kappa"], now] for r in results],
    )
