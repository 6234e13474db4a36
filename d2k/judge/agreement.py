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
    part: str = "dev"          # dev | test | wild (judges/splits.toml)
    strength: str = ""         # the judge's strength for this verdict (static: strong | weak)


def _present(v: str) -> int:
    return 1 if v in ("implemented", "partial") else 0


def metrics(rows: list[Row]) -> dict:
    decided = [r for r in rows if r.predicted in LABELS]
    out = {"n": len(rows), "decided": len(decided),
           "accuracy": None, "precision": None, "recall": None, "f1": None, "kappa": None}
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


def bootstrap(rows: list[Row], n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """Percentile intervals of kappa, F1 and accuracy over ``n_boot`` resamples of the solutions
    (the unit that was labelled: one solution's items are resampled together).

    A resample's metrics depend only on its summed confusion matrix, so each solution's 3x3 matrix
    is counted once and every resample is a weighted sum of them (the same figures as ``metrics``
    on the drawn rows, computed for all resamples at once)."""
    import numpy as np

    index = {label: i for i, label in enumerate(LABELS)}
    by_solution: dict[tuple[str, str], np.ndarray] = defaultdict(lambda: np.zeros(9))
    for r in rows:
        matrix = by_solution[(r.task_id, r.solution)]
        if r.predicted in index and r.gold in index:
            matrix[index[r.gold] * 3 + index[r.predicted]] += 1
    keys = sorted(by_solution)
    out = {k: None for k in ("kappa", "f1", "accuracy")}
    if not keys or n_boot <= 0:
        return out
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(keys), size=(n_boot, len(keys)))
    weights = np.stack([np.bincount(d, minlength=len(keys)) for d in draws])
    cm = (weights @ np.stack([by_solution[k] for k in keys])).reshape(n_boot, 3, 3)  # [boot, gold, predicted]
    n = cm.sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = np.trace(cm, axis1=1, axis2=2) / n
        expected = (cm.sum(axis=2) * cm.sum(axis=1)).sum(axis=1) / n**2
        labels_used = ((cm.sum(axis=2) + cm.sum(axis=1)) > 0).sum(axis=1)
        kappa = np.where(labels_used > 1, (observed - expected) / (1 - expected), np.nan)
        tp, fp, fn = cm[:, :2, :2].sum(axis=(1, 2)), cm[:, 2, :2].sum(axis=1), cm[:, :2, 2].sum(axis=1)
        f1 = np.where(tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), np.nan)
    lo_q, hi_q = (1 - level) / 2, 1 - (1 - level) / 2
    for name, values in (("kappa", kappa), ("f1", f1), ("accuracy", np.where(n > 0, observed, np.nan))):
        values = np.sort(values[np.isfinite(values)])
        if len(values):
            out[name] = (float(values[int(lo_q * (len(values) - 1))]), float(values[int(round(hi_q * (len(values) - 1)))]))
    return out


def strength_precision(rows: list[Row]) -> list[dict]:
    """How often the judge is right (its verdict equals the gold one), per strength and per
    strength x verdict: the calibration of "strong" and "weak" (decided rows only)."""
    groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for r in rows:
        if r.predicted not in LABELS:
            continue
        groups[(r.strength or "-", "all")].append(r)
        groups[(r.strength or "-", r.predicted)].append(r)
    out = []
    for (strength, verdict), group in sorted(groups.items()):
        right = sum(r.predicted == r.gold for r in group)
        out.append({"strength": strength, "verdict": verdict, "n": len(group), "right": right,
                    "precision": right / len(group)})
    return out
