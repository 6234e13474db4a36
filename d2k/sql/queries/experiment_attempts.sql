-- `d2k experiment run`: the experiment's attempts after the run, one row each.
-- Parameters: 1. the experiment's name.
SELECT model, task_id, condition, status, agent_status, turns, passed || '/' || workloads AS passed,
       round(geomean_speedup, 3) AS speedup, round(implementation_score, 1) AS impl_score,
       round(design_coverage, 1) AS design_cov
FROM v_attempts
WHERE experiment = ?
ORDER BY ALL
