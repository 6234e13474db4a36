-- Schema version 4: paired agent experiments.
CREATE TABLE experiments (
    experiment_id TEXT PRIMARY KEY, name TEXT, spec JSON, spec_path TEXT, created_at TIMESTAMP
);
CREATE TABLE attempts (
    attempt_id TEXT PRIMARY KEY, experiment_id TEXT, model TEXT, model_id TEXT, task_id TEXT,
    condition TEXT, seed INTEGER, status TEXT, detail TEXT, agent_status TEXT,
    submission_id TEXT, submission_choice TEXT, proposal_id TEXT, workspace TEXT,
    turns INTEGER, prompt_tokens BIGINT, completion_tokens BIGINT, harness_s DOUBLE,
    started_at TIMESTAMP, finished_at TIMESTAMP, worker TEXT
);
CREATE TABLE turns (
    attempt_id TEXT, turn INTEGER, content_blob TEXT, tool_calls JSON, tool_results_blob TEXT,
    prompt_tokens INTEGER, completion_tokens INTEGER, latency_s DOUBLE, harness_s DOUBLE, note TEXT,
    PRIMARY KEY (attempt_id, turn)
);
CREATE TABLE blobs (blob_id TEXT PRIMARY KEY, path TEXT, bytes BIGINT);
