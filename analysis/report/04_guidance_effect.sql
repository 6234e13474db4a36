-- The guidance effect on each headline number: guided minus unguided, its 95 % bootstrap interval
-- over tasks (one resample for both conditions, so the difference is paired) and the p-value of a
-- paired sign-flip permutation test over tasks (how often a difference at least this large arises
-- if the guidance changed nothing; exact up to 16 tasks). For the geometric means the test is on
-- the per-task difference of ln speedup. From d2k analyze (table analysis_bootstrap).
SELECT experiment, model,
       CASE metric WHEN 'correctness' THEN 'correctness (share of tasks)'
                   WHEN 'performance_score' THEN 'Performance Score'
                   WHEN 'geomean_speedup' THEN 'geomean speedup (paper: models correct everywhere)'
                   WHEN 'geomean_speedup_correct_tasks' THEN 'geomean speedup (alternative: correct tasks)'
                   WHEN 'implementation_score' THEN 'implementation score (dependency-aware)'
                   WHEN 'implementation_score_plain' THEN 'implementation score (plain level mean)'
                   ELSE metric END AS metric,
       round(estimate, 3) AS difference, round(ci_low, 3) AS ci_low, round(ci_high, 3) AS ci_high,
       round(p_value, 4) AS p_value, n_tasks AS tasks
FROM analysis_bootstrap
WHERE condition = 'guided - unguided' AND estimate IS NOT NULL
ORDER BY experiment, pooled DESC, model,
         list_position(['correctness', 'performance_score', 'geomean_speedup', 'geomean_speedup_correct_tasks',
                        'implementation_score', 'implementation_score_plain'], analysis_bootstrap.metric);
