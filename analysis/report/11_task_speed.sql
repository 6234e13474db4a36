-- GPU only: per task and machine, the newest version of each shipped solution (expert, naive,
-- compiled = torch.compile of the reference, reference = eager PyTorch) and, in one row, every
-- other solution (candidates, agent submissions: the median over them, their count in the name):
-- the geometric-mean speedup over the eager reference across the bench workloads (defined only
-- when every workload passed and was timed) and the geometric-mean SOL fraction. version: the
-- start of the solution's sha256; timing: how its figures were timed ('events/write' by default,
-- 'span/read' with --timing span; each speedup is against the reference timed the same way).
WITH t AS (
    SELECT t.*, v.latest, v.label FROM v_task_speedup t JOIN v_solution_versions v USING (solution_id)
), main AS (
    SELECT task_id, solution, left(solution_id, 8) AS version, gpu_name, workloads, passed,
           round(geomean_speedup, 3) AS geomean_speedup, round(geomean_sol_fraction, 3) AS geomean_sol_fraction,
           timing_modes AS timing, latest
    FROM t WHERE label IN ('expert', 'naive', 'compiled', 'reference') AND latest
), others AS (
    SELECT task_id, 'others: median of ' || count(*) AS solution, NULL AS version, gpu_name,
           sum(workloads)::BIGINT AS workloads, sum(passed)::BIGINT AS passed,
           round(median(geomean_speedup), 3) AS geomean_speedup,
           round(median(geomean_sol_fraction), 3) AS geomean_sol_fraction,
           string_agg(DISTINCT timing_modes, ', ' ORDER BY timing_modes) AS timing, NULL::BOOLEAN AS latest
    FROM t WHERE NOT (label IN ('expert', 'naive', 'compiled', 'reference') AND latest)
    GROUP BY task_id, gpu_name
)
SELECT * FROM (SELECT * FROM main UNION ALL SELECT * FROM others)
ORDER BY task_id, gpu_name, latest IS NULL, geomean_speedup DESC NULLS LAST;
