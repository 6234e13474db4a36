"""Grading a design written in prose (an agent's DESIGN.md, any text) against a task's rubric.

Each item gets covered / partial / missing with the proposal's sentences quoted; a quote that is
not found verbatim in the text is marked so. Coverage scores use the implementation score's
definitions (covered counts as implemented): per level and combined, 0–100.
"""

from __future__ import annotations

import re

from d2k.judge import graph, llm
from d2k.judge.static import Verdict, judge_error
from d2k.schema import DesignItem, Task

MAX_DESIGN_CHARS = 40_000
AS_IMPLEMENTATION = {"covered": "implemented", "partial": "partial", "missing": "missing"}


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def judge_proposal(task: Task, items: list[DesignItem], text: str, runner: llm.CallPool, program,
                   program_hash: str, cached: dict[str, Verdict] | None = None) -> list[Verdict]:
    design = text if len(text) <= MAX_DESIGN_CHARS else text[:MAX_DESIGN_CHARS] + "\n... (truncated)"
    normal_design = _normal(design)
    final: dict[str, Verdict] = dict(cached or {})
    calls = [
        llm.Call(item.id, {
            "task_description": task.description.strip(),
            "item": item.describe(),
            "design": design,
        })
        for item in items if item.id not in final
    ]
    by_id = {i.id: i for i in items}
    for outcome in runner.many(program, calls):
        item = by_id[outcome.key]
        if outcome.prediction is None:
            final[item.id] = judge_error(item, outcome.attempts, outcome.error, runner.model, program_hash)
            continue
        p = outcome.prediction
        quotes = [str(q) for q in (p.get("quotes") or [])]
        evidence = [{"quote": q, "verbatim": _normal(q) in normal_design} for q in quotes]
        try:
            confidence = float(p.get("confidence"))
        except (TypeError, ValueError):
            confidence = None
        final[item.id] = Verdict(item.id, item.level, str(p.get("verdict")), "llm", str(p.get("rationale", "")).strip(),
                                 evidence, confidence=confidence, usage=outcome.usage, model=runner.model,
                                 prompt_hash=program_hash)
    return [final[i.id] for i in items]


def coverage_scores(items: list[DesignItem], verdicts: list[Verdict]) -> graph.Scores:
    return graph.score(items, {v.item_id: AS_IMPLEMENTATION.get(v.verdict, "undetermined") for v in verdicts})
