-- The machines results come from: the GPU (or the CPU interpreter), its versions and the ceilings
-- d2k calibrate measured there, how many evaluations it holds, when they were measured (first and
-- last day) and their source (the results file of the run: an ingested file names where it came
-- from, e.g. analysis/data/h200/).
WITH ev AS (
    SELECT env_id, count(*) AS evaluations, min(created_at) AS first, max(created_at) AS last
    FROM evaluations GROUP BY ALL
), src AS (
    SELECT env_id, string_agg(DISTINCT coalesce(results_path, command), '; ' ORDER BY coalesce(results_path, command)) AS sources
    FROM runs GROUP BY ALL
)
SELECT coalesce(e.gpu_name, 'CPU (Triton interpreter)') AS machine,
       concat_ws(', ', 'driver ' || e.driver, 'torch ' || e.torch, 'triton ' || e.triton) AS versions,
       round(c.copy_bytes_per_s / 1e12, 3) AS copy_tb_per_s,
       round(c.bf16_flops_per_s / 1e12, 1) AS bf16_tflop_per_s,
       coalesce(ev.evaluations, 0) AS evaluations,
       CASE WHEN strftime(ev.first, '%Y-%m-%d') = strftime(ev.last, '%Y-%m-%d') THEN strftime(ev.first, '%Y-%m-%d')
            ELSE strftime(ev.first, '%Y-%m-%d') || ' to ' || strftime(ev.last, '%Y-%m-%d') END AS measured,
       src.sources
FROM environments e
LEFT JOIN v_calibration c USING (env_id)
LEFT JOIN ev USING (env_id)
LEFT JOIN src USING (env_id)
ORDER BY e.backend = 'cuda' DESC, ev.first;
