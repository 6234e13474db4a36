-- d2k store, schema version 1. Ids are stable: task_id, workload_id, item ids from the content;
-- solution_id = sha256 of the source; env_id = hash of the environment's identity fields.
CREATE TABLE tasks (
    task_id TEXT PRIMARY KEY, catalog TEXT, title TEXT, category TEXT, description TEXT,
    entry_point TEXT, signature JSON, tolerance JSON, flops_formula TEXT, bytes_formula TEXT,
    peak TEXT, content_hash TEXT, updated_at TIMESTAMP
);
CREATE TABLE workloads (
    workload_id TEXT PRIMARY KEY, task_id TEXT, tag TEXT, axes JSON, dtypes JSON, params JSON,
    seed BIGINT, note TEXT, flops DOUBLE, bytes DOUBLE
);
CREATE TABLE design_items (
    task_id TEXT, item_id TEXT, level INTEGER, title TEXT, guidance TEXT, criterion TEXT,
    depends_on TEXT[], related TEXT[], weight DOUBLE, signal_hint TEXT, signals JSON,
    PRIMARY KEY (task_id, item_id)
);
CREATE TABLE solutions (
    solution_id TEXT PRIMARY KEY, task_id TEXT, label TEXT, kind TEXT, path TEXT, source TEXT,
    created_at TIMESTAMP
);
CREATE TABLE environments (
    env_id TEXT PRIMARY KEY, backend TEXT, gpu_name TEXT, compute_capability TEXT, driver TEXT,
    cuda TEXT, torch TEXT, triton TEXT, sm_count INTEGER, l2_bytes BIGINT, info JSON,
    first_seen TIMESTAMP
);
CREATE TABLE calibrations (
    calibration_id TEXT PRIMARY KEY, env_id TEXT, measured_at TIMESTAMP,
    copy_bytes_per_s DOUBLE, bf16_flops_per_s DOUBLE, fp8_flops_per_s DOUBLE, fp32_flops_per_s DOUBLE,
    clocks JSON, details JSON
);
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY, command TEXT, args JSON, env_id TEXT, backend TEXT,
    started_at TIMESTAMP, finished_at TIMESTAMP, status TEXT, clocks JSON, results_path TEXT
);
CREATE TABLE evaluations (
    eval_id TEXT PRIMARY KEY, run_id TEXT, solution_id TEXT, task_id TEXT, workload_id TEXT,
    env_id TEXT, backend TEXT, status TEXT, reason TEXT,
    median_ms DOUBLE, q1_ms DOUBLE, q3_ms DOUBLE, iqr_ms DOUBLE, mean_ms DOUBLE, std_ms DOUBLE,
    min_ms DOUBLE, max_ms DOUBLE, n_samples INTEGER, timing_method TEXT, samples_ms DOUBLE[],
    correctness JSON, timing JSON, traceback TEXT, seconds DOUBLE, created_at TIMESTAMP
);
