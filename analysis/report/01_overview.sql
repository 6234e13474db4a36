-- What the store holds.
SELECT
    (SELECT count(*) FROM tasks) AS tasks,
    (SELECT count(*) FROM workloads) AS workloads,
    (SELECT count(*) FROM design_items) AS design_items,
    (SELECT count(*) FROM solutions) AS solutions,
    (SELECT count(*) FROM evaluations WHERE backend = 'cuda') AS gpu_evaluations,
    (SELECT count(*) FROM evaluations WHERE backend <> 'cuda') AS interpreter_evaluations,
    (SELECT count(*) FROM environments) AS environments,
    (SELECT count(*) FROM verdicts) AS judge_verdicts,
    (SELECT count(*) FROM experiments) AS experiments,
    (SELECT count(*) FROM attempts) AS attempts;
