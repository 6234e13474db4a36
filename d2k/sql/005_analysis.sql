-- Schema version 5: what `d2k analyze` computes from the views in Python (bootstrap confidence
-- intervals over tasks, the paired test of the guidance effect, the attribution of speedup to
-- implemented design items), each row stamped with the version of analysis/views.sql it was
-- computed from (views_version, as in meta).
CREATE TABLE analysis_bootstrap (
    experiment TEXT, model TEXT, pooled BOOLEAN, metric TEXT,
    condition TEXT,                  -- guided | unguided | guided - unguided
    estimate DOUBLE, ci_low DOUBLE, ci_high DOUBLE,
    p_value DOUBLE,                  -- the paired test, on the difference rows only
    n_tasks INTEGER, n_boot INTEGER, confidence DOUBLE, method TEXT, seed INTEGER,
    views_version TEXT, computed_at TIMESTAMP
);
CREATE TABLE analysis_attribution (
    scope TEXT,                      -- item (one task's items) | level (levels over all tasks)
    gpu_name TEXT, judge TEXT, task_id TEXT, feature TEXT, level INTEGER,
    coefficient DOUBLE,              -- change of ln(speedup) per unit of credit
    factor DOUBLE, ci_low DOUBLE, ci_high DOUBLE,   -- exp(coefficient) and its bootstrap interval
    implemented_share DOUBLE,        -- mean credit of the feature over the solutions
    n_solutions INTEGER, r2 DOUBLE, n_boot INTEGER, method TEXT, seed INTEGER,
    views_version TEXT, computed_at TIMESTAMP
);
