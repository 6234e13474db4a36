-- The machines results come from, with their measured ceilings (`d2k calibrate`).
SELECT e.env_id, e.backend, e.gpu_name, e.torch, e.triton, e.sm_count,
       round(c.copy_bytes_per_s / 1e12, 3) AS copy_tb_per_s,
       round(c.bf16_flops_per_s / 1e12, 1) AS bf16_tflop_per_s,
       (SELECT count(*) FROM evaluations v WHERE v.env_id = e.env_id) AS evaluations
FROM environments e
LEFT JOIN v_calibration c USING (env_id)
ORDER BY e.first_seen;
