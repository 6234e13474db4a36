-- The paper's headline table (view v_headline), per model and pooled over the models
-- ("(all models)": the mean over model-task pairs), guided and unguided. Correctness: the share of
-- tasks whose submission passed every workload, a harness failure counting as incorrect
-- (failed = attempts that failed in the harness). Performance Score: the mean over tasks of the
-- speedup over eager PyTorch if correct, else 0 (blank: speed not measured, e.g. interpreter runs).
-- Geomean speedup: over the models correct on every task in both conditions (the paper's
-- definition; blank for any other model). Implementation: the dependency-aware implementation
-- score (0-100) of the judge named, an attempt without a scored submission counting 0. Under each
-- number, its 95 % bootstrap interval over tasks (d2k analyze). docs/metrics.md gives the formulas
-- and the alternatives (columns of v_headline).
WITH ci AS (
    SELECT experiment, model, condition, metric, ci_low, ci_high FROM analysis_bootstrap
), h AS (
    SELECT h.*,
           c1.ci_low AS c_lo, c1.ci_high AS c_hi, c2.ci_low AS p_lo, c2.ci_high AS p_hi,
           c3.ci_low AS g_lo, c3.ci_high AS g_hi, c4.ci_low AS i_lo, c4.ci_high AS i_hi
    FROM v_headline h
    LEFT JOIN ci c1 ON c1.experiment = h.experiment AND c1.model = h.model AND c1.condition = h.condition AND c1.metric = 'correctness'
    LEFT JOIN ci c2 ON c2.experiment = h.experiment AND c2.model = h.model AND c2.condition = h.condition AND c2.metric = 'performance_score'
    LEFT JOIN ci c3 ON c3.experiment = h.experiment AND c3.model = h.model AND c3.condition = h.condition AND c3.metric = 'geomean_speedup'
    LEFT JOIN ci c4 ON c4.experiment = h.experiment AND c4.model = h.model AND c4.condition = h.condition AND c4.metric = 'implementation_score'
)
SELECT experiment, model, condition, tasks, attempts, harness_failed AS failed,
       printf('%.1f %%', 100 * correctness) || coalesce(chr(10) || printf('[%.1f, %.1f]', 100 * c_lo, 100 * c_hi), '') AS correctness,
       printf('%.2f', performance_score) || coalesce(chr(10) || printf('[%.2f, %.2f]', p_lo, p_hi), '') AS performance_score,
       printf('%.2fx', geomean_speedup) || coalesce(chr(10) || printf('[%.2f, %.2f]', g_lo, g_hi), '') AS geomean_speedup,
       printf('%.1f', implementation_score) || coalesce(chr(10) || printf('[%.1f, %.1f]', i_lo, i_hi), '') AS implementation,
       implementation_judge AS judge
FROM h
ORDER BY experiment, pooled DESC, model, condition;
