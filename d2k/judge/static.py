"""The static judge: a verdict per design item from the rubric's signals alone.

Deterministic, offline and fast; the default judge. Only code reachable from the task's entry
point counts (``facts.py``/``program.py``). An item's signals are properties of that reachable
code; an ``all`` group must hold inside one unit (an entry kernel with its jit helpers /
__device__ functions, its launches and autotune configs), so evidence from one kernel never
completes a group about another (``across = true`` lets a group span kernels on purpose). For
each item:
  implemented   every signal in ``signals`` holds;
  partial       the item defines a partial (``partial_when`` or "Partial: ..." in its criterion)
                and one of its ``partial`` signals holds; an item that defines no partial is
                binary: implemented or missing, never partial;
  missing       otherwise; and every item of a solution whose own kernels never run (no kernel
                in the file, or none reachable from the entry point: status no_kernel/dead_code);
  undetermined  the item has no signals (no reliable static evidence), the file could not be
                analysed (its status says why: unparseable, empty, not_text, too_large),
                or a pattern signal ran past its time limit on this file.
Evidence is (kernel, line, snippet) of the signals that decided. ``strength`` is ``weak`` when the
decision rests only on text patterns or negations, ``strong`` otherwise; how often each strength
is right on the gold sets is measured by ``d2k judge eval`` (``calibration.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from d2k.judge import signals as sig
from d2k.judge.facts import SolutionFacts
from d2k.schema import DesignItem

NAME = "static"
VERSION = "3"


@dataclass
class Verdict:
    item_id: str
    level: int
    verdict: str
    strength: str = "none"             # strong | weak | none
    reason: str = ""
    evidence: list[dict] = field(default_factory=list)
    # set by the LLM and hybrid judges
    confidence: float | None = None
    usage: dict | None = None
    model: str | None = None
    prompt_hash: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def judge_error(item: DesignItem, attempts: int, error: str | None, model: str | None, prompt_hash: str | None) -> Verdict:
    """The verdict stored when an LLM judge could not decide an item (left out of scores)."""
    return Verdict(item.id, item.level, "judge_error", "none",
                   f"the LLM judge failed after {attempts} attempt(s): {error}", model=model, prompt_hash=prompt_hash)


NOT_RUN = ("no_kernel", "dead_code")   # nothing of the solution's own runs on the GPU: every item missing


def judge_item(item: DesignItem, facts: SolutionFacts) -> Verdict:
    if facts.status in NOT_RUN:
        return Verdict(item.id, item.level, "missing", "strong", f"{facts.status}: {facts.detail}")
    if facts.status != "ok":
        return Verdict(item.id, item.level, "undetermined", reason=f"{facts.status}: {facts.detail}")
    if not item.signals and not item.partial:
        return Verdict(item.id, item.level, "undetermined", reason="no reliable static signal for this item")
    partial_allowed = item.partial_defined and bool(item.partial)
    whole = sig.pooled(facts)   # the reachable code; an `all` group is checked kernel by kernel inside
    try:
        results = [sig.evaluate(s, facts, whole) for s in item.signals]
        if results and all(r.holds for r in results):
            evidence = [e.as_dict() for r in results for e in r.evidence][:12]
            strength = "weak" if all(r.weak for r in results) else "strong"
            return Verdict(item.id, item.level, "implemented", strength,
                           f"all {len(results)} signal(s) hold{_where(evidence)}", evidence)
        if partial_allowed:
            holding = [r for r in (sig.evaluate(s, facts, whole) for s in item.partial) if r.holds]
            if holding:
                evidence = [e.as_dict() for r in holding for e in r.evidence][:12]
                strength = "weak" if all(r.weak for r in holding) else "strong"
                return Verdict(item.id, item.level, "partial", strength,
                               f"a partial signal holds{_where(evidence)} (the item's partial: {_short(item)})", evidence)
    except sig.SignalTimeout as exc:
        return Verdict(item.id, item.level, "undetermined", reason=f"a signal could not be evaluated on this file: {exc}")
    strength = "weak" if results and all(r.weak for r in results) else "strong"
    held = sum(r.holds for r in results)
    reason = (f"{held} of {len(results)} signal(s) hold" +
              ("" if item.partial_defined or not item.partial else "; binary item: no partial"))
    return Verdict(item.id, item.level, "missing", strength, reason)


def _where(evidence: list[dict]) -> str:
    kernels = sorted({e["kernel"] for e in evidence if e.get("kernel") and not e["kernel"].startswith("<")})
    return f" (in {', '.join(kernels[:4])})" if kernels else ""


def _short(item: DesignItem) -> str:
    text = item.partial_when.strip()
    if not text:
        import re

        m = re.search(r"(?i)\bpartial(\s+credit)?\s*:\s*([^.]*(\.[^.\s][^.]*)*\.?)", item.criterion)
        text = m.group(2) if m else "defined by the criterion"
    return text[:120]


def judge(facts: SolutionFacts, items: list[DesignItem]) -> list[Verdict]:
    return [judge_item(item, facts) for item in items]
