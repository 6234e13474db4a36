-- the figure of the workload section: each shipped solution's SOL fraction per bench workload
SELECT w.*, s.latest
FROM v_workload_speedup w JOIN v_solution_versions s USING (solution_id)
WHERE w.tag = 'bench' AND s.latest AND w.solution IN ('reference', 'compiled', 'naive', 'expert');
