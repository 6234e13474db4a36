"""``d2k judge eval`` for code: agreement per part (dev / wild_dev / test / wild), with bootstrap intervals,
the precision of each strength, and the calibration the hybrid judge reads.

Dev is in-sample for the static judge (its signals were tuned on those files); test and wild are
frozen and out of sample (``judges/splits.toml``). Metrics are stored per part in
``judge_metrics`` with ``gold`` = ``implementation/<part>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from d2k.judge import agreement

PART_NOTES = {"dev": "in-sample: the static signals were tuned on these files",
              "test": "frozen, labelled blind: out of sample",
              "wild": "public expert kernels, labelled blind: out of sample",
              "wild_dev": "public kernels of other projects, labelled blind; signals may be tuned on them: in-sample"}


@dataclass
class PartResult:
    part: str
    rows: list[agreement.Row]
    scopes: list[dict]
    overall: dict
    interval: dict
    strengths: list[dict] = field(default_factory=list)

    @property
    def solutions(self) -> int:
        return len({(r.task_id, r.solution) for r in self.rows})


def by_part(rows: list[agreement.Row], n_boot: int = 1000, seed: int = 0) -> list[PartResult]:
    out = []
    from d2k.judge.splits import PARTS

    for part in PARTS:
        chosen = [r for r in rows if r.part == part]
        if not chosen:
            continue
        scopes = agreement.by_scope(chosen)
        overall = next(s for s in scopes if s["scope"] == "all")
        out.append(PartResult(part, chosen, scopes, overall, agreement.bootstrap(chosen, n_boot, seed),
                              agreement.strength_precision(chosen)))
    return out


def _ci(value, interval) -> str:
    if value is None:
        return "-"
    if not interval:
        return f"{value:.3f}"
    return f"{value:.3f} [{interval[0]:.3f}, {interval[1]:.3f}]"


def summary_table(results: list[PartResult]) -> tuple[tuple, list[list[str]]]:
    cols = ("part", "solutions", "rows", "decided", "accuracy", "F1 (presence) [95% CI]", "kappa (3 classes) [95% CI]", "note")
    rows = []
    for r in results:
        o = r.overall
        rows.append([r.part, str(r.solutions), str(o["n"]), str(o["decided"]), _ci(o["accuracy"], None),
                     _ci(o["f1"], r.interval.get("f1")), _ci(o["kappa"], r.interval.get("kappa")), PART_NOTES[r.part]])
    return cols, rows


def strength_table(results: list[PartResult]) -> tuple[tuple, list[list[str]]]:
    cols = ("part", "strength", "verdict", "n", "right", "precision")
    rows = []
    for r in results:
        for s in r.strengths:
            rows.append([r.part, s["strength"], s["verdict"], str(s["n"]), str(s["right"]), f"{s['precision']:.3f}"])
    return cols, rows
