"""The bootstrap intervals of judge agreement: computed from per-solution confusion matrices, they
must equal the row-wise metrics (scikit-learn) on the same resamples."""

import random
from collections import defaultdict

import numpy as np
import pytest

from d2k.judge import agreement


def _rows(seed: int) -> list[agreement.Row]:
    rng = random.Random(seed)
    rows = []
    for s in range(30):
        for i in range(rng.randint(2, 9)):
            gold = rng.choice(agreement.LABELS)
            predicted = gold if rng.random() < 0.7 else rng.choice(agreement.LABELS + ["undetermined"])
            rows.append(agreement.Row("task", f"s{s}", f"L1.i{i}", 1, gold, predicted))
    return rows


def test_bootstrap_equals_row_wise_metrics_on_the_same_resamples():
    rows = _rows(1)
    n_boot, seed = 150, 7
    got = agreement.bootstrap(rows, n_boot, seed=seed)
    by_solution = defaultdict(list)
    for r in rows:
        by_solution[(r.task_id, r.solution)].append(r)
    keys = sorted(by_solution)
    draws = np.random.default_rng(seed).integers(0, len(keys), size=(n_boot, len(keys)))
    samples = defaultdict(list)
    for draw in draws:
        m = agreement.metrics([r for j in draw for r in by_solution[keys[j]]])
        for name in ("kappa", "f1", "accuracy"):
            if m[name] is not None:
                samples[name].append(m[name])
    for name, values in samples.items():
        values.sort()
        expected = (values[int(0.025 * (len(values) - 1))], values[int(round(0.975 * (len(values) - 1)))])
        assert got[name] == pytest.approx(expected, abs=1e-12), name


def test_single_label_resamples_have_no_kappa_and_no_rows_no_interval():
    rows = [agreement.Row("t", f"s{i}", "L1.a", 1, "missing", "missing") for i in range(5)]
    out = agreement.bootstrap(rows, 50)
    assert out["kappa"] is None and out["f1"] is None and out["accuracy"] == (1.0, 1.0)
    assert agreement.bootstrap([], 50) == {"kappa": None, "f1": None, "accuracy": None}
