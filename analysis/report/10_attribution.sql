-- Which implemented design items go with speed (d2k analyze, table analysis_attribution): over
-- every solution with a GPU task speedup and the judge's verdicts, the speed factor that goes with
-- implementing a level fully (all tasks, with a fixed effect per task) or an item (within its
-- task), from a ridge regression of ln speedup on credit, with a 95 % bootstrap interval over the
-- solutions. An association, not a cause: solutions differ in more than their items. Items every
-- solution shares cannot be told apart and are not listed, nor a task with fewer than five timed
-- and judged solutions (the expert and the naive kernel alone cannot separate their items).
SELECT gpu_name, judge, scope, coalesce(task_id, '(all tasks)') AS task_id, feature,
       printf('%.2fx', factor) || coalesce(chr(10) || printf('[%.2f, %.2f]', ci_low, ci_high), '') AS speed_factor,
       round(implemented_share, 2) AS mean_credit, n_solutions AS solutions, round(r2, 2) AS r2
FROM analysis_attribution
WHERE factor IS NOT NULL
ORDER BY gpu_name, scope = 'level' DESC, task_id, abs(ln(factor)) DESC, feature;
