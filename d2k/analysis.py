"""What the SQL views cannot say well: uncertainty and attribution, computed in Python from them.

- ``bootstrap``: 95 % percentile intervals for every headline number of ``v_headline`` (per model
  and pooled, each condition, and the guided - unguided difference), resampling the experiment's
  tasks with replacement; the same resample serves every model and both conditions, so the
  difference is paired. Beside each difference, a paired sign-flip permutation test over tasks
  (exact up to 16 tasks, Monte Carlo beyond): the p-value of "the guidance changes nothing".
- ``attribution``: which implemented design items go with speed. For every solution with a GPU
  task speedup (correct on every bench workload, timed against the reference) and a judge's
  verdicts: per task, a ridge regression (scikit-learn) of ln(speedup) on the items' credit; over
  all tasks, ln(speedup) on the three levels' dependency-aware credit with a fixed effect per
  task. Each coefficient is reported as a speed factor (exp) with a bootstrap interval over the
  solutions (the same ridge in closed form, solved for every resample at once). This is
  association, not causation: solutions differ in more than their items.

``d2k analyze`` stores both in ``analysis_bootstrap`` and ``analysis_attribution``, each row with
the version of the views it was computed from (``views_version``, as in ``meta``). numpy and
scikit-learn are imported when a function runs, never at import, so ``d2k sql`` stays quick.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

METRICS = ("correctness", "performance_score", "geomean_speedup", "geomean_speedup_correct_tasks",
           "implementation_score", "implementation_score_plain")
CONDITIONS = ("guided", "unguided")
DIFFERENCE = "guided - unguided"
POOLED = "(all models)"

BOOTSTRAP_COLUMNS = ("experiment", "model", "pooled", "metric", "condition", "estimate", "ci_low", "ci_high",
                     "p_value", "n_tasks", "n_boot", "confidence", "method", "seed", "views_version", "computed_at")
ATTRIBUTION_COLUMNS = ("scope", "gpu_name", "judge", "task_id", "feature", "level", "coefficient", "factor", "ci_low",
                       "ci_high", "implemented_share", "n_solutions", "r2", "n_boot", "method", "seed",
                       "views_version", "computed_at")


def _now():
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


# ---------------------------------------------------------------------------------------------
# Bootstrap over tasks and the paired test
# ---------------------------------------------------------------------------------------------
OUTCOME_SQL = """
SELECT experiment, model, task_id, condition, correct_rate, task_score, speedup_when_correct,
       implementation_score, implementation_score_plain
FROM v_task_outcomes
WHERE condition IN ('guided', 'unguided')
ORDER BY experiment, model, task_id, condition
"""


@dataclass
class _Experiment:
    name: str
    models: list[str]
    tasks: list[str]
    values: dict          # field -> array (model, condition, task), NaN where absent


def _experiments(cols, rows) -> list[_Experiment]:
    import numpy as np

    fields = ("correct_rate", "task_score", "speedup_when_correct", "implementation_score", "implementation_score_plain")
    by_exp: dict[str, list[dict]] = {}
    for row in rows:
        record = dict(zip(cols, row))
        by_exp.setdefault(record["experiment"], []).append(record)
    out = []
    for name, records in sorted(by_exp.items()):
        models = sorted({r["model"] for r in records})
        tasks = sorted({r["task_id"] for r in records})
        values = {f: np.full((len(models), 2, len(tasks)), np.nan) for f in fields}
        present = np.zeros((len(models), 2, len(tasks)), dtype=bool)
        for r in records:
            m, c, t = models.index(r["model"]), CONDITIONS.index(r["condition"]), tasks.index(r["task_id"])
            present[m, c, t] = True
            for f in fields:
                if r[f] is not None:
                    values[f][m, c, t] = float(r[f])
        values["present"] = present
        out.append(_Experiment(name, models, tasks, values))
    return out


def _nanmean(x, axis):
    """Mean over ``axis`` ignoring NaN; NaN where every value is NaN (no warning)."""
    import numpy as np

    n = np.sum(~np.isnan(x), axis=axis)
    s = np.nansum(x, axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, s / np.maximum(n, 1), np.nan)


def _metrics(exp: _Experiment, model_mask, idx):
    """Every metric for the models in ``model_mask`` on the task resamples ``idx`` (B, T):
    a dict metric -> array (B, 2 conditions)."""
    import numpy as np

    v = exp.values
    B = idx.shape[0]
    sel = np.flatnonzero(model_mask)

    def take(field):  # (B, M, C, T)
        return np.transpose(v[field][sel][:, :, idx], (2, 0, 1, 3))

    present = take("present")
    correct = take("correct_rate")
    out = {}
    def flat(a):  # (B, C, M*T)
        return a.transpose(0, 2, 1, 3).reshape(B, 2, -1)

    out["correctness"] = _nanmean(flat(correct), axis=2)
    score = take("task_score")
    # NULL when a present (model, task) has no task score: speed not measured somewhere
    unmeasured = np.any(flat(present & np.isnan(score)), axis=2)
    out["performance_score"] = np.where(unmeasured, np.nan, _nanmean(flat(score), axis=2))
    logs = np.log(take("speedup_when_correct"))
    # models correct on every task of the resample in both conditions (absent tasks are neutral)
    both_present = present[:, :, 0, :] & present[:, :, 1, :]
    neither = ~present[:, :, 0, :] & ~present[:, :, 1, :]
    ok = (both_present & (correct[:, :, 0, :] == 1) & (correct[:, :, 1, :] == 1)) | neither
    always = np.all(ok, axis=2) & np.any(both_present, axis=2)  # (B, M)
    paper = np.where(always[:, :, None, None], logs, np.nan)
    with np.errstate(invalid="ignore"):
        out["geomean_speedup"] = np.exp(_nanmean(flat(paper), axis=2))
        out["geomean_speedup_correct_tasks"] = np.exp(_nanmean(flat(logs), axis=2))
    out["implementation_score"] = _nanmean(flat(take("implementation_score")), axis=2)
    out["implementation_score_plain"] = _nanmean(flat(take("implementation_score_plain")), axis=2)
    return out


def _per_task_differences(exp: _Experiment, model_mask, metric: str):
    """Per task: the guided - unguided difference of the metric's per-task term, averaged over the
    models in the mask (NaN where no model has both). For the geometric means, of ln speedup."""
    import numpy as np

    v = exp.values
    sel = np.flatnonzero(model_mask)
    correct = v["correct_rate"][sel]
    if metric == "correctness":
        term = correct
    elif metric == "performance_score":
        term = v["task_score"][sel]
    elif metric in ("geomean_speedup", "geomean_speedup_correct_tasks"):
        term = np.log(v["speedup_when_correct"][sel])
        if metric == "geomean_speedup":
            present = v["present"][sel]
            ok = (present[:, 0] & present[:, 1] & (correct[:, 0] == 1) & (correct[:, 1] == 1)) | \
                 (~present[:, 0] & ~present[:, 1])
            always = np.all(ok, axis=1) & np.any(present[:, 0] & present[:, 1], axis=1)
            term = np.where(always[:, None, None], term, np.nan)
    else:
        term = v[metric][sel]
    diff = term[:, 0, :] - term[:, 1, :]           # (M, T)
    return _nanmean(diff, axis=0)                   # (T,)


def sign_flip_p_value(d, n_random: int = 20000, seed: int = 0) -> float | None:
    """Two-sided p-value of a paired sign-flip permutation test on the differences ``d`` (NaN
    dropped): the share of sign assignments whose mean is at least as far from 0 as the observed
    one. Exact for up to 16 differences; otherwise ``n_random`` random assignments (+1 smoothed)."""
    import numpy as np

    d = np.asarray(d, dtype=float)
    d = d[~np.isnan(d)]
    if d.size == 0:
        return None
    observed = abs(d.mean())
    if np.all(d == 0):
        return 1.0
    tolerance = 1e-12 * max(1.0, observed)
    if d.size <= 16:
        signs = ((np.arange(2 ** d.size)[:, None] >> np.arange(d.size)) & 1) * 2 - 1
        means = np.abs(signs @ d) / d.size
        return float(np.mean(means >= observed - tolerance))
    rng = np.random.default_rng(seed)
    signs = rng.choice((-1.0, 1.0), size=(n_random, d.size))
    means = np.abs(signs @ d) / d.size
    return float((np.sum(means >= observed - tolerance) + 1) / (n_random + 1))


def bootstrap(store, n_boot: int = 2000, seed: int = 0, confidence: float = 0.95,
              views_version: str | None = None) -> tuple[tuple, list[tuple]]:
    """Bootstrap intervals and paired tests for every experiment in the store; rows in the order
    of ``BOOTSTRAP_COLUMNS``."""
    import numpy as np

    cols, rows = store.query(OUTCOME_SQL)
    rng = np.random.default_rng(seed)
    lo_q, hi_q = 100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2
    now = _now()
    out = []
    for exp in _experiments(cols, rows):
        T = len(exp.tasks)
        idx = rng.integers(0, T, size=(n_boot, T))
        full = np.arange(T)[None, :]
        scopes = [(m, False, np.array([k == i for k in range(len(exp.models))])) for i, m in enumerate(exp.models)]
        scopes.append((POOLED, True, np.ones(len(exp.models), dtype=bool)))
        for model, pooled, mask in scopes:
            point = _metrics(exp, mask, full)
            boot = _metrics(exp, mask, idx)
            n_tasks = int(np.sum(np.any(exp.values["present"][mask], axis=(0, 1))))
            for metric in METRICS:
                estimate = point[metric][0]
                draws = boot[metric]
                series = [(CONDITIONS[0], estimate[0], draws[:, 0]), (CONDITIONS[1], estimate[1], draws[:, 1]),
                          (DIFFERENCE, estimate[0] - estimate[1], draws[:, 0] - draws[:, 1])]
                for condition, value, sample in series:
                    sample = sample[~np.isnan(sample)]
                    if math.isnan(value):
                        low = high = None
                    else:
                        low, high = (float(x) for x in np.percentile(sample, [lo_q, hi_q])) if sample.size else (None, None)
                    p = None
                    if condition == DIFFERENCE and not math.isnan(value):
                        p = sign_flip_p_value(_per_task_differences(exp, mask, metric), seed=seed)
                    out.append((exp.name, model, pooled, metric, condition, None if math.isnan(value) else float(value),
                                low, high, p, n_tasks, int(sample.size), confidence,
                                "percentile bootstrap over tasks; paired sign-flip test", seed, views_version, now))
    return BOOTSTRAP_COLUMNS, out


# ---------------------------------------------------------------------------------------------
# Attribution of speedup to implemented items
# ---------------------------------------------------------------------------------------------
SPEED_SQL = """
SELECT t.gpu_name, t.task_id, t.solution_id, avg(ln(t.geomean_speedup)) AS log_speedup
FROM v_task_speedup t
JOIN solutions s USING (solution_id)
WHERE t.geomean_speedup > 0 AND s.kind = 'file'
GROUP BY ALL
"""
ITEMS_SQL = """
SELECT solution_id, task_id, item_id, level, credit, aware_credit
FROM v_item_credit WHERE judge = ? AND solution_id IN (
    SELECT solution_id FROM v_task_speedup WHERE geomean_speedup > 0)
"""


def _fit(X, y, alpha: float):
    from sklearn.linear_model import Ridge

    model = Ridge(alpha=alpha)
    model.fit(X, y)
    return model


def ridge_coefficients(X, y, alpha: float):
    """The coefficients scikit-learn's ``Ridge(alpha)`` (with intercept) finds, for a batch of
    problems at once: X (B, n, p), y (B, n) -> (B, p). The closed form on centred data,
    (Xc'Xc + alpha I)^-1 Xc'yc, solved for every bootstrap resample in one call."""
    import numpy as np

    Xc = X - X.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    Xt = np.swapaxes(Xc, 1, 2)
    A = Xt @ Xc + alpha * np.eye(X.shape[2])[None]
    b = Xt @ yc[..., None]
    return np.linalg.solve(A, b)[..., 0]


MIN_SOLUTIONS = 5   # per task for the items (and more than its differing items); twice that for the levels


def attribution(store, judge: str = "static", n_boot: int = 300, seed: int = 0, alpha: float = 1.0,
                confidence: float = 0.95, views_version: str | None = None) -> tuple[tuple, list[tuple]]:
    """Per task (items) and over all tasks (levels), per GPU; rows in the order of
    ``ATTRIBUTION_COLUMNS``."""
    import numpy as np

    _, speed_rows = store.query(SPEED_SQL)
    if not speed_rows:
        return ATTRIBUTION_COLUMNS, []
    _, item_rows = store.query(ITEMS_SQL, [judge])
    credit: dict[str, dict[str, float | None]] = {}
    aware: dict[str, dict[int, list[float]]] = {}
    levels_of: dict[tuple[str, str], int] = {}
    for solution_id, task_id, item_id, level, c, a in item_rows:
        credit.setdefault(solution_id, {})[item_id] = c
        levels_of[(task_id, item_id)] = level
        if a is not None and level is not None:
            aware.setdefault(solution_id, {}).setdefault(level, []).append(a)
    level_mean = {s: {level: sum(v) / len(v) for level, v in levels.items()} for s, levels in aware.items()}
    rng = np.random.default_rng(seed)
    lo_q, hi_q = 100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2
    now = _now()
    out = []
    by_gpu: dict[str, list[tuple]] = {}
    for gpu, task_id, solution_id, y in speed_rows:
        if solution_id in credit:
            by_gpu.setdefault(gpu or "?", []).append((task_id, solution_id, y))

    def interval(samples):
        samples = np.asarray(samples)
        samples = samples[~np.isnan(samples)]
        if samples.size == 0:
            return None, None
        low, high = np.percentile(samples, [lo_q, hi_q])
        return float(math.exp(low)), float(math.exp(high))

    for gpu, records in sorted(by_gpu.items()):
        # per task: ln(speedup) on the items' credit
        tasks = sorted({t for t, _, _ in records})
        for task_id in tasks:
            rows = [(s, y) for t, s, y in records if t == task_id]
            items = sorted({i for s, _ in rows for i, c in credit[s].items() if c is not None})
            varying = {i for i in items if len({credit[s].get(i) for s, _ in rows}) > 1}
            if len(rows) < max(MIN_SOLUTIONS, len(varying) + 2) or not varying:
                continue  # too few solutions to tell the items apart (e.g. only the expert and the naive one)
            X = np.array([[credit[s].get(i) if credit[s].get(i) is not None else np.nan for i in items] for s, _ in rows])
            col_mean = np.nanmean(X, axis=0)
            X = np.where(np.isnan(X), col_mean, X)  # an undecided item takes the others' mean credit
            y = np.array([y for _, y in rows])
            model = _fit(X, y, alpha)
            r2 = float(model.score(X, y)) if np.var(y) > 0 else None
            pick = rng.integers(0, len(rows), (n_boot, len(rows)))
            draws = ridge_coefficients(X[pick], y[pick], alpha)
            for j, item in enumerate(items):
                varying = bool(np.ptp(X[:, j]) > 0)
                low, high = interval(draws[:, j]) if varying else (None, None)
                out.append(("item", gpu, judge, task_id, item, levels_of.get((task_id, item)),
                            float(model.coef_[j]) if varying else None,
                            float(math.exp(model.coef_[j])) if varying else None, low, high,
                            float(X[:, j].mean()), len(rows), r2, n_boot,
                            f"ridge (alpha={alpha}) of ln speedup on item credit; bootstrap over solutions",
                            seed, views_version, now))
        # all tasks: ln(speedup) on the levels' dependency-aware credit with a fixed effect per task,
        # taken out by centring both sides within each task (the coefficients of a regression with
        # one dummy per task); the bootstrap resamples the centred solutions
        rows = [(t, s, y) for t, s, y in records if all(level_mean.get(s, {}).get(level) is not None for level in (1, 2, 3))]
        if len(rows) < 2 * MIN_SOLUTIONS:
            continue
        X_levels = np.array([[level_mean[s][level] for level in (1, 2, 3)] for _, s, _ in rows])
        y = np.array([y for _, _, y in rows])
        task_index = {t: k for k, t in enumerate(sorted({t for t, _, _ in rows}))}
        group = np.array([task_index[t] for t, _, _ in rows])
        counts = np.bincount(group, minlength=len(task_index)).astype(float)
        X = X_levels - (np.stack([np.bincount(group, X_levels[:, j], len(task_index)) for j in range(3)], 1)
                        / counts[:, None])[group]
        yw = y - (np.bincount(group, y, len(task_index)) / counts)[group]
        model = _fit(X, yw, alpha * 0.1)
        r2 = float(model.score(X, yw)) if np.var(yw) > 0 else None
        pick = rng.integers(0, len(rows), (n_boot, len(rows)))
        draws = ridge_coefficients(X[pick], yw[pick], alpha * 0.1)
        for j, level in enumerate((1, 2, 3)):
            varying = bool(np.ptp(X[:, j]) > 1e-12)
            low, high = interval(draws[:, j]) if varying else (None, None)
            out.append(("level", gpu, judge, None, f"L{level}", level,
                        float(model.coef_[j]) if varying else None,
                        float(math.exp(model.coef_[j])) if varying else None, low, high,
                        float(X_levels[:, j].mean()), len(rows), r2, n_boot,
                        f"ridge (alpha={alpha * 0.1:g}) of ln speedup on level credit (dependency-aware), "
                        "within tasks (task fixed effects); bootstrap over solutions", seed, views_version, now))
    return ATTRIBUTION_COLUMNS, out


# ---------------------------------------------------------------------------------------------
# Stored results
# ---------------------------------------------------------------------------------------------
def current_views_version(store) -> str | None:
    if getattr(store, "views_version", None):
        return store.views_version
    try:
        _, rows = store.query("SELECT value FROM meta WHERE key = 'views_version'")
    except Exception:
        return None
    return rows[0][0] if rows else None


def analyze(store, n_boot: int = 2000, seed: int = 0, judge: str = "static") -> dict:
    """Compute and store the bootstrap, the paired tests and the attribution; returns row counts."""
    version = current_views_version(store)
    cols, rows = bootstrap(store, n_boot=n_boot, seed=seed, views_version=version)
    store.replace_analysis_table("analysis_bootstrap", cols, rows)
    acols, arows = attribution(store, judge=judge, n_boot=max(100, n_boot // 10), seed=seed, views_version=version)
    store.replace_analysis_table("analysis_attribution", acols, arows)
    return {"bootstrap": len(rows), "attribution": len(arows), "views_version": version}


def stored_or_computed(store, table: str) -> tuple[list[str], list[tuple], str]:
    """The table's rows when they were computed from the views in force, else rows computed now
    (not stored); with a note saying which."""
    version = current_views_version(store)
    cols, rows = store.query(f"SELECT * FROM {table}")
    if rows and all(dict(zip(cols, r))["views_version"] == version for r in rows):
        return cols, rows, f"stored by d2k analyze (views version {version})"
    if table == "analysis_bootstrap":
        cols, rows = bootstrap(store, views_version=version)
    else:
        cols, rows = attribution(store, views_version=version)
    note = "computed for this report, not stored (d2k analyze stores it)"
    if rows_stored := store.query(f"SELECT count(*) FROM {table}")[1][0][0]:
        note += f"; the {rows_stored} stored row(s) were computed from other views"
    return list(cols), rows, note
