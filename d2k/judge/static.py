"""The static judge: a verdict per design item from the rubric's signals alone.

Deterministic, offline and fast; the default judge. For each item:
  implemented   every signal in ``signals`` holds;
  partial       some of ``signals`` hold, or one of ``partial`` holds;
  missing       none holds;
  undetermined  the item has no signals (no reliable static evidence), the file could not be
                analysed (its status says why: unparseable, no_kernel, empty, not_text, too_large),
                or a pattern signal ran past its time limit on this file.
Evidence is (kernel, line, snippet) of every holding signal. ``strength`` is ``weak`` when the
decision rests only on text patterns or negations, ``strong`` otherwise.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from d2k.judge import signals as sig
from d2k.judge.facts import SolutionFacts
from d2k.schema import DesignItem

NAME = "static"
VERSION = "1"
VERDICTS = ("implemented", "partial", "missing", "undetermined", "judge_error")


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


def judge_item(item: DesignItem, facts: SolutionFacts) -> Verdict:
    if facts.status != "ok":
        return Verdict(item.id, item.level, "undetermined", reason=f"{facts.status}: {facts.detail}")
    if not item.signals and not item.partial:
        return Verdict(item.id, item.level, "undetermined", reason="no reliable static signal for this item")
    try:
        results = [sig.evaluate(s, facts) for s in item.signals]
        partial_results = [sig.evaluate(s, facts) for s in item.partial]
    except sig.SignalTimeout as exc:
        return Verdict(item.id, item.level, "undetermined", reason=f"a signal could not be evaluated on this file: {exc}")
    holding = [r for r in results if r.holds]
    evidence = [e.as_dict() for r in [*holding, *(r for r in partial_results if r.holds)] for e in r.evidence][:12]
    if results and len(holding) == len(results):
        verdict = "implemented"
        reason = f"all {len(results)} signal(s) hold"
        decisive = holding
    elif holding or any(r.holds for r in partial_results):
        verdict = "partial"
        reason = f"{len(holding)} of {len(results)} signal(s) hold" + (", a partial signal holds" if any(r.holds for r in partial_results) else "")
        decisive = holding + [r for r in partial_results if r.holds]
    else:
        verdict = "missing"
        reason = f"none of {len(results) + len(partial_results)} signal(s) holds"
        decisive = results + partial_results
    strength = "weak" if decisive and all(r.weak for r in decisive) else "strong"
    return Verdict(item.id, item.level, verdict, strength, reason, evidence)


def judge(facts: SolutionFacts, items: list[DesignItem]) -> list[Verdict]:
    return [judge_item(item, facts) for item in items]
