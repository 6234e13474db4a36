-- Per bench workload on the GPU: eager reference, torch.compile(reference), naive and expert —
-- median latency (µs), speedup over eager and SOL fraction. Fill it with
--   d2k bench --solution expert --solution naive --solution reference --solution compiled
-- then: d2k sql @analysis/queries/baselines_table.sql
-- Each solution name's newest version only (see v_solution_versions).
SELECT task_id, workload_id, gpu_name,
       round(1e3 * max(reference_ms), 2) AS eager_us,   -- the reference's, or the task's eager stand-in's
       any_value(reference_stand_in) AS eager_stand_in,
       round(1e3 * max(median_ms) FILTER (WHERE solution = 'compiled'), 2) AS compiled_us,
       round(1e3 * max(median_ms) FILTER (WHERE solution = 'naive'), 2) AS naive_us,
       round(1e3 * max(median_ms) FILTER (WHERE solution = 'expert'), 2) AS expert_us,
       round(max(speedup) FILTER (WHERE solution = 'compiled'), 2) AS compiled_speedup,
       round(max(speedup) FILTER (WHERE solution = 'naive'), 2) AS naive_speedup,
       round(max(speedup) FILTER (WHERE solution = 'expert'), 2) AS expert_speedup,
       round(max(sol_fraction) FILTER (WHERE solution = 'expert'), 3) AS expert_sol_fraction,
       arg_min(solution, median_ms) FILTER (WHERE status = 'passed'
           AND solution IN ('reference', 'compiled', 'naive', 'expert')) AS fastest,
       -- how the row's figures were timed (events/write by default, span/read with --timing span);
       -- two modes in one row: its times are not comparable across its columns
       string_agg(DISTINCT timing_mode, ', ' ORDER BY timing_mode) AS timing
FROM v_workload_speedup
WHERE tag = 'bench' AND solution IN ('reference', 'compiled', 'naive', 'expert')
  AND solution_id IN (SELECT solution_id FROM v_solution_versions WHERE latest)
GROUP BY ALL
ORDER BY task_id, workload_id;
