-- GPU only: every bench workload with the newest version of each shipped solution: median time in
-- µs (eager PyTorch, torch.compile, naive, expert), the expert's speedup over eager and its SOL
-- fraction, and the fastest of the four. note: 'synced' when the eager reference waited for
-- the device mid-call (timed without the profiler; its time, and so the speedup, is partly the
-- host's); a baseline's name when the eager figure is that baseline's (the task's reference is a
-- sequential definition; task.toml performance.eager_stand_in); how the row's figures were timed
-- where that is not the default event window with the zeroing flush ('span/read'; two modes in
-- one row: its times are not comparable). The figure shows every workload's
-- SOL fraction.
SELECT w.task_id, replace(w.workload_id, w.task_id || '_', '') AS workload, w.gpu_name,
       round(1e3 * max(w.reference_ms), 2) AS eager_us,
       round(1e3 * max(w.median_ms) FILTER (WHERE w.solution = 'compiled' AND w.status = 'passed'), 2) AS compiled_us,
       round(1e3 * max(w.median_ms) FILTER (WHERE w.solution = 'naive' AND w.status = 'passed'), 2) AS naive_us,
       round(1e3 * max(w.median_ms) FILTER (WHERE w.solution = 'expert' AND w.status = 'passed'), 2) AS expert_us,
       round(max(w.speedup) FILTER (WHERE w.solution = 'expert'), 2) AS expert_speedup,
       round(max(w.sol_fraction) FILTER (WHERE w.solution = 'expert'), 3) AS expert_sol,
       nullif(concat_ws('; ', CASE WHEN bool_or(w.reference_waits_for_device) THEN 'synced' END,
                        any_value(w.reference_stand_in),
                        nullif(string_agg(DISTINCT w.timing_mode, ', ' ORDER BY w.timing_mode), 'events/write')),
              '') AS note,
       arg_min(w.solution, w.median_ms) FILTER (WHERE w.status = 'passed') AS fastest
FROM v_workload_speedup w
JOIN v_solution_versions s USING (solution_id)
WHERE w.tag = 'bench' AND s.latest AND w.solution IN ('reference', 'compiled', 'naive', 'expert')
GROUP BY ALL
ORDER BY w.task_id, workload, w.gpu_name;
