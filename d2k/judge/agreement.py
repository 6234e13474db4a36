"""Agreement of a judge with gold labels: precision, recall, F1 and Cohen's kappa (scikit-learn).

Presence is the positive class (implemented or partial); precision, recall and F1 are computed on
presence; accuracy and kappa on the three verdicts (implemented / partial / missing). Rows the
judge left ``undetermined`` are excluded from the scores and counted apart (``n`` all rows,
``decided`` the rows scored). Kappa is undefined (None) when both sides use a single label, and
precision, recall and F1 when neither side has a present item.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from dataclasses import dataclass

from sklearn.metrics import accuracy_score, cohen_kappa_score, precision_recall_fscore_support

LABELS = ["implemented", "partial", "missing"]


@dataclass
class Row:
    task_id: str
    solution: str
    item_id: str
    level: int
    gold: str
    predicted: str


def _present(v: str) -> int:
    return 1 if v in ("implemented", "partial") else 0


def metrics(rows: list[Row]) -> dict:
    decided = [r for r in rows if r.predicted in LABELS]
    out = {"n": len(rows), "decided": len(decided), "accuracy": None, "precision": None, "recall": None, "f1": None, "kappa": None}
    if not decided:
        return out
    gold = [r.gold for r in decided]
    pred = [r.predicted for r in decided]
    out["accuracy"] = float(accuracy_score(gold, pred))
    gold_present = [_present(g) for g in gold]
    pred_present = [_present(x) for x in pred]
    if any(gold_present) or any(pred_present):  # with no positive on either side, P/R/F1 are undefined
        p, r, f, _ = precision_recall_fscore_support(gold_present, pred_present, average="binary", zero_division=0)
        out.update(precision=float(p), recall=float(r), f1=float(f))
    if len(set(gold) | set(pred)) > 1:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kappa = cohen_kappa_score(gold, pred, labels=LABELS)
        out["kappa"] = None if math.isnan(kappa) else float(kappa)
    return out


def by_scope(rows: list[Row]) -> list[dict]:
    """Metrics per item, per level, per task and overall."""
    groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for r in rows:
        groups[("item", f"{r.task_id}/{r.item_id}")].append(r)
        groups[("level", f"L{r.level}")].append(r)
        groups[("task", r.task_id)].append(r)
        groups[("all", "all")].append(r)
    order = {"item": 0, "level": 1, "task": 2, "all": 3}
    return [{"scope": scope, "key": key, **metrics(group)}
            for (scope, key), group in sorted(groups.items(), key=lambda kv: (order[kv[0][0]], kv[0][1]))]
