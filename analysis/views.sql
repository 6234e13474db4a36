-- The metric definitions of D2K-Bench, applied to the store on every open.
-- Speed metrics use GPU evaluations only (backend = 'cuda'); interpreter timings never enter them.

-- The latest evaluation of each solution on each workload in each environment.
CREATE OR REPLACE VIEW v_latest_evaluations AS
SELECT * EXCLUDE (rn) FROM (
    SELECT e.*, row_number() OVER (
        PARTITION BY solution_id, workload_id, env_id ORDER BY created_at DESC, eval_id) AS rn
    FROM evaluations e)
WHERE rn = 1;

-- The latest calibration of each environment.
CREATE OR REPLACE VIEW v_calibration AS
SELECT * EXCLUDE (rn) FROM (
    SELECT c.*, row_number() OVER (PARTITION BY env_id ORDER BY measured_at DESC) AS rn
    FROM calibrations c)
WHERE rn = 1;

-- Every solution with whether it is the newest version of its name in its task (an expert
-- replaced by faster code keeps its old rows under the same name; tables of "the expert" want
-- the newest).
CREATE OR REPLACE VIEW v_solution_versions AS
SELECT solution_id, task_id, label, kind, created_at,
       row_number() OVER (PARTITION BY task_id, label ORDER BY created_at DESC, solution_id) = 1 AS latest
FROM solutions;

-- Every latest evaluation with its workload's work, its speed-of-light time and SOL fraction.
-- SOL time = max(flops / compute peak, bytes / copy bandwidth), peaks from `d2k calibrate`.
CREATE OR REPLACE VIEW v_evaluations AS
SELECT
    e.eval_id, e.run_id, e.task_id, e.workload_id, w.tag, e.solution_id, s.label AS solution,
    e.env_id, e.backend, env.gpu_name, e.status, e.reason,
    e.median_ms, e.iqr_ms, e.n_samples, e.timing_method, e.seconds, w.flops, w.bytes,
    try_cast(e.timing->>'$.host_issue_ms' AS DOUBLE) AS host_issue_ms,
    -- the host needs as long to issue the call as the GPU to run it: launch overhead, not the
    -- kernel, bounds this solution's speed (the median is then less stable)
    try_cast(e.timing->>'$.host_issue_ms' AS DOUBLE) >= e.median_ms AS host_bound,
    CASE WHEN e.backend = 'cuda' AND e.median_ms > 0 THEN w.bytes / (e.median_ms * 1e-3) END AS achieved_bytes_per_s,
    CASE WHEN e.backend = 'cuda' AND e.median_ms > 0 THEN w.flops / (e.median_ms * 1e-3) END AS achieved_flops_per_s,
    CASE WHEN e.backend = 'cuda' AND c.env_id IS NOT NULL THEN 1e3 * greatest(
        coalesce(w.bytes / c.copy_bytes_per_s, 0),
        coalesce(w.flops / CASE t.peak WHEN 'fp8' THEN c.fp8_flops_per_s
                                       WHEN 'fp32' THEN c.fp32_flops_per_s
                                       ELSE c.bf16_flops_per_s END, 0)) END AS sol_ms,
    e.created_at
FROM v_latest_evaluations e
JOIN workloads w USING (workload_id)
JOIN tasks t ON t.task_id = e.task_id
LEFT JOIN solutions s USING (solution_id)
LEFT JOIN environments env USING (env_id)
LEFT JOIN v_calibration c ON c.env_id = e.env_id;

-- Per workload: each solution's GPU time against the reference's in the same environment.
CREATE OR REPLACE VIEW v_workload_speedup AS
SELECT
    e.task_id, e.workload_id, e.tag, e.solution, e.solution_id, e.env_id, e.gpu_name, e.status,
    e.median_ms, e.iqr_ms, r.median_ms AS reference_ms,
    CASE WHEN e.status = 'passed' AND r.median_ms > 0 AND e.median_ms > 0 THEN r.median_ms / e.median_ms END AS speedup,
    e.sol_ms,
    CASE WHEN e.status = 'passed' AND e.median_ms > 0 THEN e.sol_ms / e.median_ms END AS sol_fraction,
    e.achieved_bytes_per_s, e.achieved_flops_per_s
FROM v_evaluations e
LEFT JOIN (SELECT workload_id, env_id, median_ms FROM v_evaluations
           WHERE solution = 'reference' AND status = 'passed') r
    ON r.workload_id = e.workload_id AND r.env_id = e.env_id
WHERE e.backend = 'cuda';

-- Per task: geometric-mean speedup and SOL fraction over the bench workloads; a solution is
-- correct on a task when it passed every bench workload.
CREATE OR REPLACE VIEW v_task_speedup AS
SELECT
    task_id, solution, solution_id, env_id, gpu_name,
    count(*) AS workloads,
    count(*) FILTER (WHERE status = 'passed') AS passed,
    count(*) FILTER (WHERE status = 'passed') = count(*) AS correct,
    exp(avg(ln(speedup))) AS geomean_speedup,
    exp(avg(ln(sol_fraction))) AS geomean_sol_fraction
FROM v_workload_speedup
WHERE tag = 'bench'
GROUP BY ALL;

-- Correctness of every latest evaluation on any backend (the interpreter included).
CREATE OR REPLACE VIEW v_correctness AS
SELECT task_id, solution, backend, env_id,
       count(*) AS workloads,
       count(*) FILTER (WHERE status = 'passed') AS passed,
       list(workload_id || ': ' || status || coalesce(' (' || reason || ')', '')) FILTER (WHERE status <> 'passed') AS failures
FROM v_evaluations
GROUP BY ALL;

-- The latest verdict of each judge on each design item of each solution, with the item's level.
CREATE OR REPLACE VIEW v_item_verdicts AS
SELECT v.task_id, v.solution_id, s.label AS solution, v.item_id, d.level, d.title, v.judge, v.judge_version,
       v.verdict, v.strength, v.reason, v.evidence, v.created_at
FROM verdicts v
LEFT JOIN solutions s USING (solution_id)
LEFT JOIN design_items d ON d.task_id = v.task_id AND d.item_id = v.item_id
WHERE v.solution_id IS NOT NULL;

-- Implementation scores with the solution's label.
CREATE OR REPLACE VIEW v_judge_scores AS
SELECT j.*, s.label AS solution FROM judge_scores j LEFT JOIN solutions s USING (solution_id);

-- One row per agent attempt: its submission's correctness and speed, implementation score and
-- design coverage. Speed comes from GPU evaluations only.
CREATE OR REPLACE VIEW v_attempts AS
WITH ev AS (
    SELECT solution_id, env_id, count(*) AS workloads, count(*) FILTER (WHERE status = 'passed') AS passed,
           exp(avg(ln(speedup))) AS geomean_speedup
    FROM v_workload_speedup GROUP BY ALL
), any_ev AS (
    SELECT solution_id, count(*) AS workloads, count(*) FILTER (WHERE status = 'passed') AS passed
    FROM v_latest_evaluations GROUP BY ALL
)
SELECT e.name AS experiment, a.attempt_id, a.model, a.task_id, a.condition, a.seed, a.status, a.agent_status,
       a.submission_choice, a.turns, a.prompt_tokens, a.completion_tokens,
       coalesce(ae.workloads, 0) AS workloads, coalesce(ae.passed, 0) AS passed,
       coalesce(ae.workloads > 0 AND ae.passed = ae.workloads, false) AS correct,
       ev.geomean_speedup,
       js.combined AS implementation_score, js.dependency_aware AS implementation_score_dep,
       ps.combined AS design_coverage
FROM attempts a
JOIN experiments e USING (experiment_id)
LEFT JOIN any_ev ae ON ae.solution_id = a.submission_id
LEFT JOIN ev ON ev.solution_id = a.submission_id
LEFT JOIN judge_scores js ON js.solution_id = a.submission_id AND js.judge = 'static'
LEFT JOIN proposal_scores ps ON ps.proposal_id = a.proposal_id;

-- The paired table: per model and task, guided against unguided.
CREATE OR REPLACE VIEW v_paired AS
SELECT experiment, model, task_id,
       avg(CASE WHEN condition = 'guided' THEN correct::INT END) AS guided_correct,
       avg(CASE WHEN condition = 'unguided' THEN correct::INT END) AS unguided_correct,
       avg(CASE WHEN condition = 'guided' THEN geomean_speedup END) AS guided_speedup,
       avg(CASE WHEN condition = 'unguided' THEN geomean_speedup END) AS unguided_speedup,
       avg(CASE WHEN condition = 'guided' THEN implementation_score END) AS guided_impl_score,
       avg(CASE WHEN condition = 'unguided' THEN implementation_score END) AS unguided_impl_score,
       avg(CASE WHEN condition = 'guided' THEN design_coverage END) AS guided_design_coverage,
       avg(CASE WHEN condition = 'unguided' THEN design_coverage END) AS unguided_design_coverage
FROM v_attempts WHERE status = 'finished'
GROUP BY ALL;

-- Per model, task and condition: the attempts' correctness and speed (seeds averaged).
-- task_score is the task's contribution to the Performance Score: its speedup, 0 when incorrect.
CREATE OR REPLACE VIEW v_task_outcomes AS
SELECT experiment, model, task_id, condition,
       count(*) AS attempts,
       avg(correct::INT) AS correct_rate,
       avg(CASE WHEN correct THEN coalesce(geomean_speedup, 0) ELSE 0 END) AS task_score,
       exp(avg(ln(geomean_speedup)) FILTER (WHERE correct AND geomean_speedup > 0)) AS speedup_when_correct,
       avg(implementation_score) AS implementation_score,
       avg(design_coverage) AS design_coverage
FROM v_attempts WHERE status = 'finished'
GROUP BY ALL;

-- Per model and condition, the headline metrics of D2K-Bench:
--   correctness        share of tasks whose submission is correct on every workload;
--   performance_score  mean over tasks of the task speedup, an incorrect submission counting 0;
--   geomean_speedup    geometric mean of task speedups, only for a model correct on all of the
--                      experiment's tasks in both conditions (NULL otherwise);
--   speed_measured     whether any speedup came from the GPU (interpreter runs give none).
CREATE OR REPLACE VIEW v_performance AS
WITH always_correct AS (
    SELECT experiment, model
    FROM v_task_outcomes
    GROUP BY ALL
    HAVING count(DISTINCT condition) = 2 AND min(correct_rate) = 1
)
SELECT o.experiment, o.model, o.condition,
       count(*) AS tasks,
       avg(o.correct_rate) AS correctness,
       avg(o.task_score) AS performance_score,
       CASE WHEN a.model IS NOT NULL THEN exp(avg(ln(o.speedup_when_correct))) END AS geomean_speedup,
       count(o.speedup_when_correct) > 0 AS speed_measured,
       avg(o.implementation_score) AS implementation_score,
       avg(o.design_coverage) AS design_coverage
FROM v_task_outcomes o
LEFT JOIN always_correct a ON a.experiment = o.experiment AND a.model = o.model
GROUP BY o.experiment, o.model, o.condition, a.model;
