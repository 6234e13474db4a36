-- Trusted execution (issue 12) and fault recovery (issue 13):
-- who owns a running run (so a run whose process died is marked interrupted, not left running),
-- the sandbox layers a run had, and per evaluation the second timing column, the device-span
-- figures, the kernel-less flag and the trusted side's flags (e.g. why a time is suspect).
ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
ALTER TABLE runs ADD COLUMN owner_host TEXT;
ALTER TABLE runs ADD COLUMN sandbox JSON;
ALTER TABLE evaluations ADD COLUMN event_median_ms DOUBLE;
ALTER TABLE evaluations ADD COLUMN span_median_ms DOUBLE;
ALTER TABLE evaluations ADD COLUMN kernel_sum_median_ms DOUBLE;
ALTER TABLE evaluations ADD COLUMN kernels_per_call DOUBLE;
ALTER TABLE evaluations ADD COLUMN kernel_less BOOLEAN;
ALTER TABLE evaluations ADD COLUMN flags JSON;
