-- Paired experiments per task: guided against unguided (seeds averaged).
SELECT experiment, model, task_id,
       round(guided_correct, 2) AS guided_correct, round(unguided_correct, 2) AS unguided_correct,
       round(guided_speedup, 3) AS guided_speedup, round(unguided_speedup, 3) AS unguided_speedup,
       round(guided_impl_score, 1) AS guided_impl, round(unguided_impl_score, 1) AS unguided_impl,
       round(guided_design_coverage, 1) AS guided_coverage, round(unguided_design_coverage, 1) AS unguided_coverage
FROM v_paired
ORDER BY experiment, model, task_id;
