-- `d2k bench` on a GPU: per task and solution, geometric means over the bench workloads.
-- Parameters: 1. the environment (env_id) of the run, 2. the solutions it ran (a list of solution_id).
SELECT task_id, solution, workloads, passed, geomean_speedup, geomean_sol_fraction
FROM v_task_speedup
WHERE env_id = ? AND list_contains(?, solution_id)
ORDER BY task_id, solution
