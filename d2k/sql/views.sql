-- The metric definitions of D2K-Bench, applied to the store on every open. docs/metrics.md states
-- every headline formula with a worked example; the sha256 of this file is the views' version
-- (meta key views_version, and a column of every table `d2k analyze` computes from these views).
-- Speed metrics use GPU evaluations only (backend = 'cuda'); interpreter timings never enter them.

-- The order of "latest": newer created_at first, ties (the same microsecond) broken by the row's id.
-- A number, so arg_max over it is cheap on a million evaluations.
CREATE OR REPLACE MACRO recency(created_at, id) AS coalesce(epoch_us(created_at), 0) * 1000 + hash(id) % 1000;

-- How a GPU evaluation was timed: 'span' or 'events' (`d2k eval --timing`), then the L2 flush,
-- e.g. 'span/read', 'events/write'; NULL off the GPU. A speedup compares a solution only with a
-- reference timed the same way. The job's request is recorded on the trusted side
-- (timing.device_span_requested); older rows count as span rows where they hold a span or say why
-- they have none, and rows without a flush mode were timed with the zeroing flush (write).
CREATE OR REPLACE MACRO timing_mode(backend, timing) AS
    CASE WHEN backend = 'cuda' THEN
        (CASE WHEN coalesce(try_cast(timing->>'$.device_span_requested' AS BOOLEAN),
                            json_exists(timing, '$.span_samples_ms') OR json_exists(timing, '$.span_skipped')
                            OR json_exists(timing, '$.span_error'), false)
              THEN 'span' ELSE 'events' END) || '/' || coalesce(timing->>'$.l2_flush_mode', 'write')
    END;

-- ============================================================================================
-- Evaluations, speed and correctness of solutions
-- ============================================================================================

-- The latest evaluation of each solution on each workload in each environment (by recency). An
-- aggregate, not a window: it is the base of every speed view.
CREATE OR REPLACE VIEW v_latest_evaluations AS
SELECT e.* FROM evaluations e
SEMI JOIN (SELECT arg_max(eval_id, recency(created_at, eval_id)) AS eval_id
           FROM evaluations GROUP BY solution_id, workload_id, env_id) l ON l.eval_id = e.eval_id;

-- The latest calibration of each environment.
CREATE OR REPLACE VIEW v_calibration AS
SELECT * FROM calibrations
QUALIFY row_number() OVER (PARTITION BY env_id ORDER BY measured_at DESC) = 1;

-- Every solution with whether it is the newest version of its name in its task (an expert
-- replaced by faster code keeps its old rows under the same name; tables of "the expert" want
-- the newest).
CREATE OR REPLACE VIEW v_solution_versions AS
SELECT solution_id, task_id, label, kind, created_at,
       row_number() OVER (PARTITION BY task_id, label ORDER BY created_at DESC, solution_id) = 1 AS latest
FROM solutions;

-- The speed-of-light time of each workload in each calibrated environment: max(flops / compute peak,
-- bytes / copy bandwidth) with the peaks `d2k calibrate` measured there (the task's peak: bf16, fp8
-- or fp32).
CREATE OR REPLACE VIEW v_sol AS
SELECT w.workload_id, c.env_id,
       1e3 * greatest(coalesce(w.bytes / c.copy_bytes_per_s, 0),
                      coalesce(w.flops / CASE t.peak WHEN 'fp8' THEN c.fp8_flops_per_s
                                                     WHEN 'fp32' THEN c.fp32_flops_per_s
                                                     ELSE c.bf16_flops_per_s END, 0)) AS sol_ms
FROM workloads w
JOIN tasks t ON t.task_id = w.task_id
CROSS JOIN v_calibration c;

-- Every latest evaluation (as v_latest_evaluations, computed for the columns used here) with its
-- workload's work, its speed-of-light time and SOL fraction.
-- SOL time = max(flops / compute peak, bytes / copy bandwidth), peaks from `d2k calibrate`.
CREATE OR REPLACE VIEW v_evaluations AS
SELECT
    e.eval_id, e.run_id, e.task_id, e.workload_id, w.tag, e.solution_id, s.label AS solution,
    e.env_id, e.backend, env.gpu_name, e.status, e.reason,
    e.median_ms, e.iqr_ms, e.n_samples, e.timing_method, e.timing_mode, e.seconds, w.flops, w.bytes,
    -- timing v2: with the device span recorded, median_ms is the span and event_median_ms the
    -- event window beside it; kernel_less: the solution launched no kernel of its own (SECURITY.md)
    e.event_median_ms, e.span_median_ms, e.kernel_sum_median_ms, e.kernels_per_call, e.kernel_less, e.flags,
    e.host_issue_ms,
    -- the host needs as long to issue the call as the GPU to run it: launch overhead, not the
    -- kernel, bounds this solution's speed (the median is then less stable)
    e.host_issue_ms >= e.median_ms AS host_bound,
    -- the call waited for the device mid-call (a device-to-host copy), or the profiler slowed its host
    -- side (timing.profiler_slowed): timed without the profiler, its time is partly the host's
    -- (benchmarks/studies/2026-12-04-host-sync)
    e.waits_for_device,
    -- the SM clock (median of nvidia-smi's 100 ms samples) while the evaluation ran: nobody fixes the
    -- clocks, so a latency-bound kernel's time follows it (d2k/execution/gpu_clocks.py)
    e.sm_clock_mhz,
    -- the share of timed calls the host issued later than their device-side hold: the window then
    -- holds idle device time, so near 1 the figure is the host's issue rate, not the GPU's
    -- (moe_align_block_size's references on the H200: benchmarks/studies/2026-12-04-host-sync, section 6)
    CASE WHEN e.backend = 'cuda' AND e.n_samples > 0 THEN least(e.late_calls / e.n_samples, 1.0) END AS late_fraction,
    CASE WHEN e.backend = 'cuda' AND e.median_ms > 0 THEN w.bytes / (e.median_ms * 1e-3) END AS achieved_bytes_per_s,
    CASE WHEN e.backend = 'cuda' AND e.median_ms > 0 THEN w.flops / (e.median_ms * 1e-3) END AS achieved_flops_per_s,
    CASE WHEN e.backend = 'cuda' THEN sol.sol_ms END AS sol_ms,
    e.created_at
FROM (
    SELECT solution_id, workload_id, env_id, backend,
           arg_max(eval_id, k) AS eval_id, arg_max(run_id, k) AS run_id, arg_max(task_id, k) AS task_id,
           arg_max(status, k) AS status, arg_max(reason, k) AS reason,
           arg_max(median_ms, k) AS median_ms, arg_max(iqr_ms, k) AS iqr_ms, arg_max(n_samples, k) AS n_samples,
           arg_max(timing_method, k) AS timing_method, arg_max(timing_mode(backend, timing), k) AS timing_mode,
           arg_max(seconds, k) AS seconds,
           arg_max(try_cast(timing->>'$.host_issue_ms' AS DOUBLE), k) AS host_issue_ms,
           arg_max(try_cast(timing->>'$.waits_for_device' AS BOOLEAN), k) AS waits_for_device,
           arg_max(try_cast(timing->>'$.late_calls' AS DOUBLE), k) AS late_calls,
           arg_max(try_cast(timing->>'$.gpu_clocks.sm_mhz_median' AS DOUBLE), k) AS sm_clock_mhz,
           arg_max(event_median_ms, k) AS event_median_ms, arg_max(span_median_ms, k) AS span_median_ms,
           arg_max(kernel_sum_median_ms, k) AS kernel_sum_median_ms, arg_max(kernels_per_call, k) AS kernels_per_call,
           arg_max(kernel_less, k) AS kernel_less, arg_max(flags, k) AS flags, max(created_at) AS created_at
    FROM (SELECT *, recency(created_at, eval_id) AS k FROM evaluations)
    GROUP BY solution_id, workload_id, env_id, backend
) e
JOIN workloads w USING (workload_id)
LEFT JOIN solutions s USING (solution_id)
LEFT JOIN environments env USING (env_id)
LEFT JOIN v_sol sol ON sol.workload_id = e.workload_id AND sol.env_id = e.env_id;

-- The eager figure's latest GPU time per workload, environment and timing mode, where it passed: the reference's,
-- or, for a task that names an eager stand-in (task.toml performance.eager_stand_in: its reference is a
-- sequential definition), that baseline's; stand_in is then its label.
CREATE OR REPLACE VIEW v_reference_times AS
SELECT workload_id, env_id, timing_mode, median_ms, waits_for_device, late_fraction, stand_in FROM (
    SELECT e.workload_id, e.env_id, timing_mode(e.backend, e.timing) AS timing_mode,
           arg_max(e.median_ms, recency(e.created_at, e.eval_id)) AS median_ms,
           arg_max(e.status, recency(e.created_at, e.eval_id)) AS status,
           arg_max(try_cast(e.timing->>'$.waits_for_device' AS BOOLEAN), recency(e.created_at, e.eval_id))
               AS waits_for_device,
           arg_max(least(try_cast(e.timing->>'$.late_calls' AS DOUBLE) / nullif(e.n_samples, 0), 1.0),
                   recency(e.created_at, e.eval_id)) AS late_fraction,
           any_value(CASE WHEN r.label <> 'reference' THEN r.label END) AS stand_in
    FROM evaluations e
    JOIN solutions r ON r.solution_id = e.solution_id
    LEFT JOIN tasks t ON t.task_id = r.task_id   -- a task no longer in the content keeps its reference
    WHERE e.backend = 'cuda' AND e.flags->>'$.gpu_shared_by' IS NULL
      AND r.label = coalesce('baseline:' || t.eager_stand_in, 'reference')
    GROUP BY e.workload_id, e.env_id, timing_mode(e.backend, e.timing))
WHERE status = 'passed';

-- Per workload: each solution's GPU time against the reference's in the same environment. The
-- speedup exists only for a passed evaluation with both times; a failed workload has none (the
-- task-level views below then give the task no speedup at all, never one over the rest).
CREATE OR REPLACE VIEW v_workload_speedup AS
SELECT
    e.task_id, e.workload_id, e.tag, e.solution, e.solution_id, e.env_id, e.gpu_name, e.status,
    e.median_ms, e.iqr_ms, r.median_ms AS reference_ms,
    -- the reference waited for the device mid-call: the speedup measures the host as much as the
    -- GPU and moved 25-40 % between runs on the H200 (never pool it silently with the others)
    coalesce(r.waits_for_device, false) AS reference_waits_for_device,
    -- the share of the reference's timed calls issued late (v_evaluations.late_fraction): near 1,
    -- its time is the host's issue rate and the speedup partly the host's
    r.late_fraction AS reference_late_fraction,
    -- the eager figure is a named baseline's, not the reference's (its label; NULL for the reference)
    r.stand_in AS reference_stand_in,
    -- a time taken while other solutions shared the GPU (D2K_GPU_SHARE) is no kernel speed
    CASE WHEN e.status = 'passed' AND r.median_ms > 0 AND e.median_ms > 0 AND e.flags->>'$.gpu_shared_by' IS NULL
         THEN r.median_ms / e.median_ms END AS speedup,
    e.sol_ms,
    CASE WHEN e.status = 'passed' AND e.median_ms > 0 AND e.flags->>'$.gpu_shared_by' IS NULL
         THEN e.sol_ms / e.median_ms END AS sol_fraction,
    e.achieved_bytes_per_s, e.achieved_flops_per_s, e.created_at,
    -- how both figures were timed (the reference is joined only where it was timed the same way)
    e.timing_mode
FROM v_evaluations e
LEFT JOIN v_reference_times r ON r.workload_id = e.workload_id AND r.env_id = e.env_id AND r.timing_mode = e.timing_mode
WHERE e.backend = 'cuda';

-- Per task: a solution is correct on a task when it passed every bench workload. Its speedup is the
-- geometric mean over the bench workloads, defined only when every one passed and was timed
-- against the reference (geomean_speedup_passed is the alternative over the passed workloads
-- alone, shown beside it, never used by a headline metric).
CREATE OR REPLACE VIEW v_task_speedup AS
SELECT
    task_id, solution, solution_id, env_id, gpu_name,
    count(*) AS workloads,
    count(*) FILTER (WHERE status = 'passed') AS passed,
    count(*) FILTER (WHERE status = 'passed') = count(*) AS correct,
    count(speedup) AS timed,
    count(*) FILTER (WHERE reference_waits_for_device) AS host_synced_reference_workloads,
    count(*) FILTER (WHERE reference_stand_in IS NOT NULL) AS stand_in_reference_workloads,
    CASE WHEN count(speedup) = count(*) THEN exp(avg(ln(speedup))) END AS geomean_speedup,
    exp(avg(ln(speedup))) AS geomean_speedup_passed,
    CASE WHEN count(sol_fraction) = count(*) THEN exp(avg(ln(sol_fraction))) END AS geomean_sol_fraction,
    min(created_at) AS first_measured, max(created_at) AS last_measured,
    -- how the workloads' figures were timed (v_workload_speedup.timing_mode); two modes: a mixed row
    string_agg(DISTINCT timing_mode, ', ' ORDER BY timing_mode) AS timing_modes
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

-- ============================================================================================
-- Judges: verdicts, item credit, level scores over the dependency graph
-- ============================================================================================

-- The latest verdict of each judge on each design item of each solution, with the item's level:
-- one row per (solution, judge, item), from the judge's newest run on that solution (a newer
-- judge version or model replaces the older verdicts here; the verdicts table keeps them all).
-- credit: implemented 1, partial 0.5, missing 0; undetermined and judge_error have none.
CREATE OR REPLACE VIEW v_item_verdicts AS
WITH runs AS (     -- the newest run (judge version and model) of each judge on each solution
    SELECT solution_id, judge,
           arg_max(struct_pack(v := judge_version, m := model), struct_pack(t := judged_at, v := judge_version)) AS run
    FROM (SELECT solution_id, judge, judge_version, model, max(created_at) AS judged_at
          FROM verdicts WHERE solution_id IS NOT NULL
          GROUP BY solution_id, judge, judge_version, model)
    GROUP BY solution_id, judge
), latest AS (     -- that run's verdict on each item
    SELECT v.solution_id, v.judge, v.item_id,
           arg_max(v.verdict_id, recency(v.created_at, v.verdict_id)) AS verdict_id
    FROM verdicts v
    JOIN runs r ON r.solution_id = v.solution_id AND r.judge = v.judge AND r.run.v = v.judge_version
               AND r.run.m IS NOT DISTINCT FROM v.model
    GROUP BY v.solution_id, v.judge, v.item_id
)
SELECT v.task_id, v.solution_id, s.label AS solution, v.item_id, d.level, d.title, d.weight, v.judge, v.judge_version,
       v.model, v.verdict,
       CAST(CASE v.verdict WHEN 'implemented' THEN 1 WHEN 'partial' THEN 0.5 WHEN 'missing' THEN 0 END AS DOUBLE) AS credit,
       v.strength, v.reason, v.evidence, v.created_at
FROM verdicts v
SEMI JOIN latest l ON l.verdict_id = v.verdict_id
LEFT JOIN solutions s ON s.solution_id = v.solution_id
LEFT JOIN design_items d ON d.task_id = v.task_id AND d.item_id = v.item_id;

-- The latest verdict of the proposal judge on each item of each design proposal (DESIGN.md).
CREATE OR REPLACE VIEW v_proposal_verdicts AS
SELECT v.task_id, v.proposal_id, v.item_id, d.level, d.title, v.judge, v.judge_version, v.model, v.verdict,
       v.reason, v.evidence, v.created_at
FROM verdicts v
LEFT JOIN design_items d ON d.task_id = v.task_id AND d.item_id = v.item_id
WHERE v.proposal_id IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY v.proposal_id, v.item_id ORDER BY v.created_at DESC, v.verdict_id) = 1;

-- Implementation scores (d2k/judge/graph.py) with the solution's label: the latest of each judge
-- per solution (one row per solution and judge).
CREATE OR REPLACE VIEW v_judge_scores AS
SELECT j.*, s.label AS solution
FROM judge_scores j LEFT JOIN solutions s USING (solution_id)
QUALIFY row_number() OVER (PARTITION BY j.solution_id, j.judge ORDER BY j.created_at DESC, j.judge_version DESC) = 1;

-- Each item's dependency-aware credit: its credit times the smallest product of credits along any
-- chain of prerequisites below it (a chain stops at a prerequisite without a decided verdict, which
-- counts 1: no evidence against it). The same rule as d2k/judge/graph.py, in SQL, so it can be
-- taken per level. Written once, as a table macro: item_credit(false) for every judged solution,
-- item_credit(true) for the submissions of experiment attempts alone (the walk then starts small).
CREATE OR REPLACE MACRO item_credit(submissions_only) AS TABLE
WITH RECURSIVE
edges AS (SELECT task_id, item_id, unnest(depends_on) AS prereq FROM design_items),
judged AS (
    SELECT * FROM v_item_verdicts
    WHERE NOT submissions_only OR solution_id IN (SELECT submission_id FROM attempts)
),
decided AS (SELECT hash(solution_id, judge) AS sid, item_id, task_id, credit FROM judged WHERE credit IS NOT NULL),
walk(sid, task_id, item_id, node, factor) AS (
    SELECT sid, task_id, item_id, item_id, 1.0::DOUBLE FROM decided
    UNION ALL
    SELECT w.sid, w.task_id, w.item_id, e.prereq, w.factor * p.credit
    FROM walk w
    JOIN edges e ON e.task_id = w.task_id AND e.item_id = w.node
    JOIN decided p ON p.sid = w.sid AND p.item_id = e.prereq
),
weakest AS (SELECT sid, item_id, min(factor) AS factor FROM walk GROUP BY ALL)
SELECT v.task_id, v.solution_id, v.solution, v.judge, v.item_id, v.level, v.title, v.weight, v.verdict, v.credit,
       v.credit * w.factor AS aware_credit
FROM judged v
LEFT JOIN weakest w ON w.sid = hash(v.solution_id, v.judge) AND w.item_id = v.item_id;

CREATE OR REPLACE VIEW v_item_credit AS SELECT * FROM item_credit(false);

-- Per solution, judge and level: the weighted mean credit of the level's decided items (plain) and
-- the same with dependency-aware credit. combined / dependency_aware of judge_scores are the mean of
-- the levels present × 100.
CREATE OR REPLACE MACRO level_scores(submissions_only) AS TABLE
SELECT task_id, solution_id, judge, level,
       count(*) AS items,
       count(credit) AS decided,
       sum(weight * credit) / sum(weight) FILTER (WHERE credit IS NOT NULL) AS plain,
       sum(weight * aware_credit) / sum(weight) FILTER (WHERE aware_credit IS NOT NULL) AS dependency_aware
FROM item_credit(submissions_only)
WHERE level IS NOT NULL
GROUP BY ALL;

CREATE OR REPLACE VIEW v_solution_level_scores AS SELECT * FROM level_scores(false);

-- Items a solution implements (or partly) while one of their prerequisites is missing: one row per
-- (solution, judge, item, missing prerequisite), from the latest verdicts.
CREATE OR REPLACE VIEW v_prerequisite_gaps AS
WITH edges AS (SELECT task_id, item_id, unnest(depends_on) AS prereq FROM design_items)
SELECT v.task_id, v.solution_id, v.solution, v.judge, v.level, v.item_id, v.verdict,
       p.level AS prerequisite_level, p.item_id AS prerequisite
FROM v_item_verdicts v
JOIN edges e ON e.task_id = v.task_id AND e.item_id = v.item_id
JOIN v_item_verdicts p ON p.solution_id = v.solution_id AND p.judge = v.judge AND p.item_id = e.prereq
WHERE v.verdict IN ('implemented', 'partial') AND p.verdict = 'missing';

-- ============================================================================================
-- Paired experiments
-- ============================================================================================

-- The judge whose scores an experiment's headline uses: hybrid where it scored every submission of
-- the experiment, else llm where it did, else static (run after every attempt).
CREATE OR REPLACE VIEW v_experiment_judge AS
WITH subs AS (
    SELECT DISTINCT experiment_id, submission_id FROM attempts WHERE submission_id IS NOT NULL
), n AS (
    SELECT experiment_id, count(*) AS submissions FROM subs GROUP BY ALL
), cover AS (
    SELECT s.experiment_id, j.judge, count(DISTINCT s.submission_id) AS judged
    FROM subs s JOIN judge_scores j ON j.solution_id = s.submission_id
    GROUP BY ALL
)
SELECT x.experiment_id, x.name AS experiment,
       coalesce(arg_min(c.judge, CASE c.judge WHEN 'hybrid' THEN 0 WHEN 'llm' THEN 1 ELSE 2 END)
                    FILTER (WHERE c.judged = n.submissions), 'static') AS judge
FROM experiments x
LEFT JOIN n USING (experiment_id)
LEFT JOIN cover c USING (experiment_id)
GROUP BY ALL;

-- Each attempt with its experiment's name and judge, nothing measured: the base of the views that
-- read only verdicts (they need no evaluation).
CREATE OR REPLACE VIEW v_attempt_submissions AS
SELECT x.name AS experiment, a.attempt_id, a.model, a.task_id, a.condition, a.seed, a.status,
       a.submission_id, a.proposal_id, ej.judge AS implementation_judge
FROM attempts a
JOIN experiments x USING (experiment_id)
JOIN v_experiment_judge ej USING (experiment_id);

-- One row per agent attempt, harness failures included (status 'failed': the attempt never
-- returned a submission; it counts as incorrect, with implementation score 0).
--   correct          finished, and the submission passed every stored evaluation of its code (its
--                    sha256: any run, any backend);
--   geomean_speedup  the submission's task speedup on the GPU (v_task_speedup: every bench workload
--                    passed and timed; the GPU environment that timed the most of them), only when
--                    the attempt is correct: an incorrect attempt has no speedup;
--   implementation_score        dependency-aware score (0-100) of the experiment's judge
--                               (v_experiment_judge); 0 for a done attempt without a score (no
--                               submission, or code the judge could not analyse: no kernel);
--   implementation_score_plain  the level-mean score of the same judge, same rule;
--   implementation_score_judged the dependency-aware score of judged submissions only (no 0s).
CREATE OR REPLACE VIEW v_attempts AS
WITH subs AS (
    SELECT DISTINCT submission_id AS solution_id FROM attempts WHERE submission_id IS NOT NULL
), sub_eval AS (   -- the latest evaluation of each submission per workload and environment
    SELECT e.solution_id, e.workload_id, e.env_id,
           arg_max(e.backend, recency(e.created_at, e.eval_id)) AS backend,
           arg_max(e.status, recency(e.created_at, e.eval_id)) AS status,
           arg_max(e.median_ms, recency(e.created_at, e.eval_id)) AS median_ms,
           arg_max(timing_mode(e.backend, e.timing), recency(e.created_at, e.eval_id)) AS timing_mode
    FROM evaluations e SEMI JOIN subs s ON s.solution_id = e.solution_id
    GROUP BY e.solution_id, e.workload_id, e.env_id
), any_ev AS (
    SELECT solution_id, count(*) AS workloads, count(*) FILTER (WHERE status = 'passed') AS passed
    FROM sub_eval GROUP BY ALL
), gpu AS (
    SELECT s.solution_id, s.env_id,
           count(*) AS bench_workloads,
           count(*) FILTER (WHERE s.status = 'passed' AND r.median_ms > 0 AND s.median_ms > 0) AS timed,
           exp(avg(ln(CASE WHEN s.status = 'passed' AND r.median_ms > 0 AND s.median_ms > 0
                           THEN r.median_ms / s.median_ms END))) AS speedup
    FROM sub_eval s
    JOIN workloads w ON w.workload_id = s.workload_id AND w.tag = 'bench'
    LEFT JOIN v_reference_times r ON r.workload_id = s.workload_id AND r.env_id = s.env_id AND r.timing_mode = s.timing_mode
    WHERE s.backend = 'cuda'
    GROUP BY s.solution_id, s.env_id
    QUALIFY row_number() OVER (PARTITION BY s.solution_id ORDER BY timed DESC, bench_workloads DESC, s.env_id) = 1
), scores AS (
    SELECT solution_id, judge, combined, dependency_aware FROM v_judge_scores
), coverage AS (
    SELECT proposal_id, combined FROM proposal_scores
    QUALIFY row_number() OVER (PARTITION BY proposal_id ORDER BY created_at DESC) = 1
)
SELECT x.name AS experiment, (SELECT count(*) > 0 FROM meta WHERE key = 'demo') AS demo, a.attempt_id, a.model, a.task_id, a.condition, a.seed, a.status, a.agent_status,
       a.submission_choice, a.turns, a.prompt_tokens, a.completion_tokens, a.submission_id, a.proposal_id,
       a.status = 'failed' AS harness_failed,
       a.status IN ('finished', 'failed') AS done,
       coalesce(ae.workloads, 0) AS workloads, coalesce(ae.passed, 0) AS passed,
       coalesce(a.status = 'finished' AND ae.workloads > 0 AND ae.passed = ae.workloads, false) AS correct,
       env.gpu_name,
       CASE WHEN correct AND g.timed = g.bench_workloads THEN g.speedup END AS geomean_speedup,
       ej.judge AS implementation_judge,
       CASE WHEN done THEN coalesce(js.dependency_aware, 0.0) END AS implementation_score,
       CASE WHEN done THEN coalesce(js.combined, 0.0) END AS implementation_score_plain,
       js.dependency_aware AS implementation_score_judged,
       st.dependency_aware AS static_score, st.combined AS static_score_plain,
       cv.combined AS design_coverage
FROM attempts a
JOIN experiments x USING (experiment_id)
JOIN v_experiment_judge ej USING (experiment_id)
LEFT JOIN any_ev ae ON ae.solution_id = a.submission_id
LEFT JOIN gpu g ON g.solution_id = a.submission_id
LEFT JOIN environments env ON env.env_id = g.env_id
LEFT JOIN scores js ON js.solution_id = a.submission_id AND js.judge = ej.judge
LEFT JOIN scores st ON st.solution_id = a.submission_id AND st.judge = 'static'
LEFT JOIN coverage cv ON cv.proposal_id = a.proposal_id;

-- Per model, task and condition (seeds averaged). Harness failures count as incorrect attempts;
-- attempts not yet done (pending, running) are left out and counted.
--   correct_rate           share of done attempts that are correct;
--   correct_rate_finished  the alternative that leaves harness failures out;
--   task_score             the task's term of the Performance Score: mean over done attempts of
--                          the speedup, 0 when incorrect; NULL when a correct attempt has no GPU
--                          speedup (speed not measured, e.g. on the interpreter);
--   speedup_when_correct   geometric mean speedup over the correct attempts.
CREATE OR REPLACE VIEW v_task_outcomes AS
SELECT experiment, model, task_id, condition,
       count(*) AS attempts,
       count(*) FILTER (WHERE done) AS done,
       count(*) FILTER (WHERE harness_failed) AS harness_failed,
       count(*) FILTER (WHERE NOT done) AS unfinished,
       avg(correct::INT) FILTER (WHERE done) AS correct_rate,
       avg(correct::INT) FILTER (WHERE status = 'finished') AS correct_rate_finished,
       CASE WHEN count(*) FILTER (WHERE correct AND geomean_speedup IS NULL) = 0
            THEN avg(CASE WHEN correct THEN geomean_speedup ELSE 0 END) FILTER (WHERE done) END AS task_score,
       exp(avg(ln(geomean_speedup)) FILTER (WHERE correct AND geomean_speedup > 0)) AS speedup_when_correct,
       avg(implementation_score) FILTER (WHERE done) AS implementation_score,
       avg(implementation_score_plain) FILTER (WHERE done) AS implementation_score_plain,
       avg(implementation_score_judged) AS implementation_score_judged,
       any_value(implementation_judge) AS implementation_judge,
       avg(design_coverage) AS design_coverage,
       bool_or(demo) AS demo
FROM v_attempts
GROUP BY ALL;

-- The paired table: per model and task, guided against unguided (failures counted as above).
CREATE OR REPLACE VIEW v_paired AS
SELECT experiment, model, task_id,
       max(correct_rate) FILTER (WHERE condition = 'guided') AS guided_correct,
       max(correct_rate) FILTER (WHERE condition = 'unguided') AS unguided_correct,
       max(task_score) FILTER (WHERE condition = 'guided') AS guided_task_score,
       max(task_score) FILTER (WHERE condition = 'unguided') AS unguided_task_score,
       max(speedup_when_correct) FILTER (WHERE condition = 'guided') AS guided_speedup,
       max(speedup_when_correct) FILTER (WHERE condition = 'unguided') AS unguided_speedup,
       max(implementation_score) FILTER (WHERE condition = 'guided') AS guided_impl_score,
       max(implementation_score) FILTER (WHERE condition = 'unguided') AS unguided_impl_score,
       max(implementation_score_plain) FILTER (WHERE condition = 'guided') AS guided_impl_plain,
       max(implementation_score_plain) FILTER (WHERE condition = 'unguided') AS unguided_impl_plain,
       max(design_coverage) FILTER (WHERE condition = 'guided') AS guided_design_coverage,
       max(design_coverage) FILTER (WHERE condition = 'unguided') AS unguided_design_coverage,
       sum(harness_failed) FILTER (WHERE condition = 'guided') AS guided_harness_failed,
       sum(harness_failed) FILTER (WHERE condition = 'unguided') AS unguided_harness_failed
FROM v_task_outcomes
GROUP BY ALL;

-- The paper's headline table: per experiment, model and condition, and pooled over the models
-- (model '(all models)', pooled = true: the mean over (model, task) pairs).
--   correctness        mean over tasks of correct_rate (harness failures count as incorrect);
--   performance_score  mean over tasks of task_score (speedup if correct, else 0); NULL when the
--                      speed of a correct task was not measured;
--   geomean_speedup    the paper's: geometric mean of the task speedups of the models correct on
--                      every task in both conditions (NULL for any other model, and pooled over
--                      those models only);
--   geomean_speedup_correct_tasks  the alternative: over the tasks this model got right;
--   implementation_score           dependency-aware (0-100), failures 0, judge as named;
--   implementation_score_plain / _judged  the alternatives (level means; judged submissions only).
CREATE OR REPLACE VIEW v_headline AS
WITH always_correct AS (
    SELECT experiment, model
    FROM v_task_outcomes
    GROUP BY ALL
    HAVING count(DISTINCT condition) = 2 AND bool_and(coalesce(correct_rate = 1, false))
       AND count(DISTINCT task_id) FILTER (WHERE condition = 'guided')
         = count(DISTINCT task_id) FILTER (WHERE condition = 'unguided')
), o AS (
    SELECT t.*, a.model IS NOT NULL AS always_correct
    FROM v_task_outcomes t LEFT JOIN always_correct a USING (experiment, model)
), scoped AS (
    SELECT model AS scope, false AS pooled, * FROM o
    UNION ALL
    SELECT '(all models)' AS scope, true AS pooled, * FROM o
)
SELECT experiment, scope AS model, pooled, condition, bool_or(demo) AS demo,
       count(DISTINCT model) AS models,
       count(DISTINCT task_id) AS tasks,
       sum(attempts) AS attempts, sum(harness_failed) AS harness_failed, sum(unfinished) AS unfinished,
       avg(correct_rate) AS correctness,
       avg(correct_rate_finished) AS correctness_finished_only,
       CASE WHEN count(task_score) = count(*) THEN avg(task_score) END AS performance_score,
       exp(avg(ln(speedup_when_correct)) FILTER (WHERE always_correct)) AS geomean_speedup,
       count(DISTINCT model) FILTER (WHERE always_correct) AS models_in_geomean,
       exp(avg(ln(speedup_when_correct))) AS geomean_speedup_correct_tasks,
       count(speedup_when_correct) AS tasks_with_speed,
       count(speedup_when_correct) > 0 AS speed_measured,
       avg(implementation_score) AS implementation_score,
       avg(implementation_score_plain) AS implementation_score_plain,
       avg(implementation_score_judged) AS implementation_score_judged,
       string_agg(DISTINCT implementation_judge, ', ') AS implementation_judge,
       avg(design_coverage) AS design_coverage
FROM scoped
GROUP BY experiment, scope, pooled, condition;

-- The headline per model only (v_headline without the pooled rows).
CREATE OR REPLACE VIEW v_performance AS
SELECT * EXCLUDE (pooled) FROM v_headline WHERE NOT pooled;

-- Per level: the implementation credit of the judged submissions (plain and dependency-aware,
-- 0-1), per model and pooled, by condition, with the experiment's judge. Attempts without a
-- submission are not in these means (the headline counts them 0).
CREATE OR REPLACE VIEW v_implementation_levels AS
WITH per AS (
    SELECT a.experiment, a.model, a.condition, a.implementation_judge AS judge, l.level, l.plain, l.dependency_aware
    FROM v_attempt_submissions a
    JOIN level_scores(true) l ON l.solution_id = a.submission_id AND l.judge = a.implementation_judge
)
SELECT experiment, scope AS model, condition, judge, level,
       count(*) AS submissions, avg(plain) AS plain, avg(dependency_aware) AS dependency_aware
FROM (SELECT model AS scope, * FROM per UNION ALL SELECT '(all models)' AS scope, * FROM per)
GROUP BY ALL;

-- The design items the submissions leave out, by experiment, condition and level: how many judged
-- submissions implement, partly implement or miss each item (experiment's judge), its miss rate
-- over the decided verdicts, and its rank among the level's items (1 = most missed).
CREATE OR REPLACE VIEW v_missed_items AS
WITH counts AS (
    SELECT a.experiment, a.condition, v.level, v.task_id, v.item_id, v.title,
           count(*) AS judged,
           count(*) FILTER (WHERE v.verdict = 'missing') AS missing,
           count(*) FILTER (WHERE v.verdict = 'partial') AS partial,
           count(*) FILTER (WHERE v.verdict = 'implemented') AS implemented,
           count(*) FILTER (WHERE v.credit IS NULL) AS undetermined,
           count(*) FILTER (WHERE v.verdict = 'missing') / nullif(count(v.credit), 0) AS miss_rate
    FROM v_attempt_submissions a
    JOIN v_item_verdicts v ON v.solution_id = a.submission_id AND v.judge = a.implementation_judge
    GROUP BY ALL
)
SELECT *, rank() OVER (PARTITION BY experiment, condition, level ORDER BY miss_rate DESC NULLS LAST, missing DESC) AS rank_in_level
FROM counts;

-- Items present in a submission without their prerequisites, by experiment and condition: how
-- many judged submissions implement (or partly) the item while the prerequisite is missing.
CREATE OR REPLACE VIEW v_prerequisite_gap_summary AS
WITH judged AS (
    SELECT a.experiment, a.condition, a.task_id, count(DISTINCT a.submission_id) AS submissions
    FROM v_attempt_submissions a
    SEMI JOIN v_item_verdicts v ON v.solution_id = a.submission_id AND v.judge = a.implementation_judge
    GROUP BY ALL
)
SELECT a.experiment, a.condition, g.task_id, g.level, g.item_id, g.prerequisite_level, g.prerequisite,
       count(DISTINCT g.solution_id) AS submissions_with_gap, any_value(j.submissions) AS judged_submissions
FROM v_attempt_submissions a
JOIN v_prerequisite_gaps g ON g.solution_id = a.submission_id AND g.judge = a.implementation_judge
JOIN judged j ON j.experiment = a.experiment AND j.condition = a.condition AND j.task_id = g.task_id
GROUP BY ALL;

-- Proposal against implementation, per attempt and design item: what DESIGN.md covers (proposal
-- judge) against what the submission implements (experiment's judge). designed = covered or
-- partial; built = implemented or partial; either side undecided (undetermined, judge_error, not
-- graded) gives 'undecided'.
CREATE OR REPLACE VIEW v_design_vs_build AS
SELECT a.experiment, a.model, a.task_id, a.condition, a.attempt_id, d.level, d.item_id, d.title,
       pv.verdict AS designed_verdict, cv.verdict AS built_verdict,
       CASE WHEN pv.verdict IN ('covered', 'partial') AND cv.verdict IN ('implemented', 'partial') THEN 'designed and built'
            WHEN pv.verdict IN ('covered', 'partial') AND cv.verdict = 'missing' THEN 'designed, not built'
            WHEN pv.verdict = 'missing' AND cv.verdict IN ('implemented', 'partial') THEN 'built, not designed'
            WHEN pv.verdict = 'missing' AND cv.verdict = 'missing' THEN 'neither'
            ELSE 'undecided' END AS outcome
FROM v_attempt_submissions a
JOIN design_items d ON d.task_id = a.task_id
LEFT JOIN v_proposal_verdicts pv ON pv.proposal_id = a.proposal_id AND pv.item_id = d.item_id
LEFT JOIN v_item_verdicts cv ON cv.solution_id = a.submission_id AND cv.judge = a.implementation_judge
                            AND cv.item_id = d.item_id
WHERE a.proposal_id IS NOT NULL AND a.submission_id IS NOT NULL;

-- Proposal against implementation by experiment, condition and level: items designed but not built
-- and built but not designed, over the decided (attempt, item) pairs.
CREATE OR REPLACE VIEW v_design_build_summary AS
SELECT experiment, condition, level,
       count(DISTINCT attempt_id) AS attempts,
       count(*) FILTER (WHERE outcome <> 'undecided') AS decided,
       count(*) FILTER (WHERE outcome = 'designed and built') AS designed_and_built,
       count(*) FILTER (WHERE outcome = 'designed, not built') AS designed_not_built,
       count(*) FILTER (WHERE outcome = 'built, not designed') AS built_not_designed,
       count(*) FILTER (WHERE outcome = 'neither') AS neither,
       count(*) FILTER (WHERE outcome = 'undecided') AS undecided
FROM v_design_vs_build
GROUP BY ALL;
