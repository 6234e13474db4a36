-- `d2k eval`, `d2k bench` under the CPU Triton interpreter: correctness only (its timings are not
-- kernel speed), the failed workloads named.
-- Parameters: 1. the environment (env_id) of the run, 2. the solutions it ran (a list of solution_id).
SELECT task_id, solution, count(*) AS workloads,
       count(*) FILTER (WHERE status = 'passed') AS passed,
       string_agg(CASE WHEN status <> 'passed' THEN workload_id || ': ' || status END, '; ') AS failures,
       round(sum(seconds), 1) AS wall_s
FROM v_evaluations
WHERE env_id = ? AND list_contains(?, solution_id)
GROUP BY ALL
ORDER BY task_id, solution
