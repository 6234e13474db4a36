-- GPU only: per task and solution, geometric means over the bench workloads of the speedup over
-- the eager reference and of the SOL fraction. `version` is the start of the solution's sha256;
-- `latest` marks the newest version of each name (an expert replaced later keeps its old rows).
SELECT t.task_id, regexp_replace(t.solution, '.*/', '') AS solution, left(t.solution_id, 8) AS version,
       t.gpu_name, t.workloads, t.passed,
       round(t.geomean_speedup, 3) AS geomean_speedup, round(t.geomean_sol_fraction, 3) AS geomean_sol_fraction,
       s.latest
FROM v_task_speedup t
JOIN v_solution_versions s USING (solution_id)
ORDER BY t.task_id, t.geomean_speedup DESC NULLS LAST;
