-- Paired experiments: the headline metrics per model and condition (see v_performance).
SELECT experiment, model, condition, tasks, round(correctness, 3) AS correctness,
       round(performance_score, 3) AS performance_score, round(geomean_speedup, 3) AS geomean_speedup,
       speed_measured, round(implementation_score, 1) AS implementation_score,
       round(design_coverage, 1) AS design_coverage
FROM v_performance
ORDER BY experiment, model, condition;
