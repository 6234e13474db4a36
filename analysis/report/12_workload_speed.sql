-- GPU only: every bench workload, each solution's median time, speedup over the eager reference
-- and SOL fraction (`version` and `latest` as in the table above).
SELECT w.task_id, replace(w.workload_id, w.task_id || '_', '') AS workload,
       regexp_replace(w.solution, '.*/', '') AS solution, left(w.solution_id, 8) AS version, w.gpu_name, w.status,
       round(1e3 * w.median_ms, 2) AS median_us, round(w.speedup, 3) AS speedup,
       round(w.sol_fraction, 3) AS sol_fraction,
       s.latest
FROM v_workload_speedup w
JOIN v_solution_versions s USING (solution_id)
WHERE w.tag = 'bench'
ORDER BY w.task_id, workload, w.median_ms;
