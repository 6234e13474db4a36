-- `d2k eval`, `d2k bench --per-workload` on a GPU: each workload's time and speedup.
-- Parameters: 1. the environment (env_id) of the run, 2. the solutions it ran (a list of solution_id).
SELECT task_id, workload_id, solution, status, median_ms, iqr_ms, reference_ms, speedup, sol_fraction
FROM v_workload_speedup
WHERE env_id = ? AND list_contains(?, solution_id)
ORDER BY task_id, workload_id, solution
