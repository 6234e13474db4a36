-- Schema version 2: judge verdicts, judge scores and judge agreement metrics.
CREATE TABLE verdicts (
    verdict_id TEXT PRIMARY KEY, solution_id TEXT, proposal_id TEXT, task_id TEXT, item_id TEXT,
    judge TEXT, judge_version TEXT, model TEXT, prompt_hash TEXT,
    verdict TEXT, strength TEXT, confidence DOUBLE, reason TEXT, evidence JSON, usage JSON,
    created_at TIMESTAMP
);
CREATE TABLE judge_scores (
    solution_id TEXT, task_id TEXT, judge TEXT, judge_version TEXT, status TEXT, detail TEXT,
    l1 DOUBLE, l2 DOUBLE, l3 DOUBLE, combined DOUBLE, dependency_aware DOUBLE, coverage DOUBLE,
    flags JSON, created_at TIMESTAMP,
    PRIMARY KEY (solution_id, judge, judge_version)
);
CREATE TABLE judge_metrics (
    judge TEXT, judge_version TEXT, gold TEXT, scope TEXT, key TEXT,
    n INTEGER, decided INTEGER, accuracy DOUBLE, precision DOUBLE, recall DOUBLE, f1 DOUBLE, kappa DOUBLE,
    created_at TIMESTAMP
);
