-- Schema version 3: design proposals (prose) and their coverage scores.
CREATE TABLE proposals (
    proposal_id TEXT PRIMARY KEY, task_id TEXT, label TEXT, path TEXT, text TEXT, created_at TIMESTAMP
);
CREATE TABLE proposal_scores (
    proposal_id TEXT, task_id TEXT, judge TEXT, judge_version TEXT, model TEXT, prompt_hash TEXT,
    l1 DOUBLE, l2 DOUBLE, l3 DOUBLE, combined DOUBLE, coverage DOUBLE, created_at TIMESTAMP,
    PRIMARY KEY (proposal_id, judge, judge_version, model)
);
