"""LLM and hybrid judging of a solution's code, item by item in dependency order.

- ``llm``: every item goes to the LLM judge with the task description, the item, the verdicts of
  its prerequisites, the static verdict and the code excerpts the static evidence points at (with
  line numbers; the kernels and their launches when there is no evidence).
- ``hybrid``: the static verdict stands where its strength (x verdict) was measured right at least
  95% of the time on the frozen gold parts (``judges/static_calibration.json``); the LLM decides
  every other item, and those the static judge left undetermined. The static verdict is kept in
  the reason beside the LLM's.
Items run in topological generations of the dependency DAG, each generation concurrently.
"""

from __future__ import annotations

import networkx as nx

from d2k.judge import graph, llm
from d2k.judge.facts import SolutionFacts, without_prose
from d2k.judge.static import Verdict, judge_error
from d2k.schema import DesignItem, Task

MAX_EXCERPT_LINES = 400
CONTEXT = 4


def numbered(lines: list[str], ranges: list[tuple[int, int]]) -> str:
    """Line-numbered excerpts of ``lines`` (1-based inclusive ranges, merged), '...' between gaps."""
    merged: list[list[int]] = []
    for a, b in sorted((max(1, a), min(len(lines), b)) for a, b in ranges):
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    out, budget = [], MAX_EXCERPT_LINES
    for a, b in merged:
        if budget <= 0:
            out.append("... (excerpt truncated)")
            break
        b = min(b, a + budget - 1)
        out.extend(f"{n:5d}| {lines[n - 1]}" for n in range(a, b + 1))
        budget -= b - a + 1
        out.append("...")
    return "\n".join(out)


def excerpt(facts: SolutionFacts, static_verdict: Verdict, prose_free: list[str] | None = None) -> str:
    """The code the LLM judge sees for one item, comments and docstrings blanked (``without_prose``;
    ``prose_free``: those lines, computed once per file by the caller)."""
    lines = prose_free if prose_free is not None else without_prose(facts.text, facts.path).splitlines()
    cited = [e["line"] for e in static_verdict.evidence if isinstance(e.get("line"), int) and e["line"] > 0]
    if cited:
        ranges = [(n - CONTEXT, n + CONTEXT) for n in cited]
    else:
        ranges = [(k.line - 3, k.end_line) for k in facts.kernels]
        ranges += [(c.line - 2, c.line + 2) for c in facts.launches]
        if not ranges:
            ranges = [(1, len(lines))]
    return numbered(lines, ranges)


def describe_static(v: Verdict, prose_free: list[str] | None = None) -> str:
    """The static verdict for the LLM's prompt; with ``prose_free`` (the file's lines, comments and
    docstrings blanked) each evidence line is quoted from it, not from the stored snippet, which
    keeps a trailing comment."""
    if v.verdict == "undetermined":
        return f"undetermined ({v.reason})"

    def quote(e: dict) -> str:
        n = e.get("line")
        if prose_free is not None and isinstance(n, int) and 0 < n <= len(prose_free):
            return prose_free[n - 1].strip()[:160]
        return e["snippet"]

    where = "; ".join(f"line {e['line']}: {quote(e)}" for e in v.evidence[:4])
    return f"{v.verdict} ({v.strength} evidence: {v.reason}){' — ' + where if where else ''}"


def needs_llm(v: Verdict, mode: str, calibration: dict | None = None) -> bool:
    """``llm``: always. ``hybrid``: unless the static verdict's strength (x verdict) was measured
    right at least 95% of the time on the frozen gold parts (``calibration.py``); without a
    calibration, weak and undetermined verdicts go to the LLM."""
    from d2k.judge import calibration as calibration_mod

    if mode == "llm" or v.verdict == "undetermined":
        return True
    return not calibration_mod.keep_static(calibration, v.strength, v.verdict)


def judge_code(task: Task, items: list[DesignItem], facts: SolutionFacts, static_verdicts: list[Verdict],
               runner: llm.CallPool, program, program_hash: str, mode: str,
               cached: dict[str, Verdict] | None = None, calibration: dict | None = None) -> list[Verdict]:
    """Verdicts of the ``llm`` or ``hybrid`` judge; ``cached`` verdicts (by item id) are reused."""
    by_id = {i.id: i for i in items}
    static_by_id = {v.item_id: v for v in static_verdicts}
    final: dict[str, Verdict] = {}
    dag = graph.build(items)
    lines = facts.text.splitlines()
    prose_free = without_prose(facts.text, facts.path).splitlines()
    for generation in nx.topological_generations(dag):
        calls = []
        for item_id in generation:
            item, sv = by_id[item_id], static_by_id[item_id]
            if facts.status != "ok":
                final[item_id] = sv
                continue
            if not needs_llm(sv, mode, calibration):
                final[item_id] = sv
                continue
            if cached and item_id in cached:
                final[item_id] = cached[item_id]
                continue
            prereq = "; ".join(f"{d}: {final[d].verdict}" for d in item.depends_on if d in final) or "none"
            calls.append(llm.Call(item_id, {
                "task_description": task.description.strip(),
                "item": item.describe(),
                "prerequisites": prereq,
                "static_verdict": describe_static(sv, prose_free),
                "code": excerpt(facts, sv, prose_free),
            }))
        for outcome in runner.many(program, calls):
            item = by_id[outcome.key]
            sv = static_by_id[outcome.key]
            if outcome.prediction is None:
                final[item.id] = judge_error(item, outcome.attempts, outcome.error, runner.model, program_hash)
                continue
            p = outcome.prediction
            cited = [n for n in (p.get("cited_lines") or []) if isinstance(n, int)]
            evidence = [{"kernel": "", "line": n, "snippet": lines[n - 1].strip()[:160]} for n in cited if 0 < n <= len(lines)]
            reason = str(p.get("rationale", "")).strip()
            if mode == "hybrid":
                reason += f" [static: {sv.verdict}, {sv.strength}]"
            final[item.id] = Verdict(item.id, item.level, str(p.get("verdict")), "llm", reason, evidence,
                                     confidence=_float(p.get("confidence")), usage=outcome.usage,
                                     model=runner.model, prompt_hash=program_hash)
    return [final[i.id] for i in items]


def _float(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
