-- Candidate kernels (any solution given by path) against the task's expert on the GPU, per task:
-- each candidate's newest run that also timed an expert (the call's control, as
-- benchmarks/variants_h200.sh does), compared workload by workload with that control from the
-- same run, so the spread between device calls never decides. On how many bench workloads the
-- candidate is faster, its geometric-mean gain over the control, and whether it replaces the
-- expert (replaces_expert): faster on every workload and by at least 1 % in the geometric mean
-- (smaller gains are within run-to-run spread and do not pay for a rewrite). Fill it with
--   VARIANTS_DIR=benchmarks/studies/<date>-<name>/candidates bash benchmarks/variants_h200.sh   (expert as control)
-- then: d2k ingest …/results.jsonl; d2k sql @analysis/queries/candidate_winners.sql
WITH ev AS (
    SELECT e.run_id, e.task_id, e.workload_id, e.env_id, e.solution_id, s.label, e.status,
           e.median_ms, e.created_at
    FROM evaluations e
    JOIN solutions s USING (solution_id)
    JOIN workloads w USING (workload_id)
    WHERE e.backend = 'cuda' AND w.tag = 'bench'
), paired AS (
    SELECT c.task_id, c.label AS solution, c.solution_id, c.run_id, c.workload_id, c.env_id,
           c.status, c.median_ms, x.median_ms AS expert_ms, c.created_at
    FROM ev c
    JOIN ev x ON x.run_id = c.run_id AND x.workload_id = c.workload_id
             AND x.label = 'expert' AND x.status = 'passed'
    WHERE c.label NOT IN ('expert', 'naive', 'reference', 'compiled')
), newest AS (
    SELECT * FROM paired
    QUALIFY run_id = first_value(run_id) OVER (PARTITION BY solution_id ORDER BY created_at DESC)
), sol AS (
    SELECT workload_id, env_id, any_value(sol_ms) AS sol_ms
    FROM v_evaluations WHERE sol_ms IS NOT NULL GROUP BY ALL
)
SELECT n.task_id, regexp_replace(n.solution, '.*/', '') AS candidate,
       count(*) AS workloads,
       count(*) FILTER (WHERE n.status = 'passed') AS passed,
       count(*) FILTER (WHERE n.status = 'passed' AND n.median_ms < n.expert_ms) AS faster,
       round(exp(avg(ln(n.expert_ms / n.median_ms)) FILTER (WHERE n.status = 'passed')), 3) AS geomean_gain,
       round(min(sol.sol_ms / n.median_ms) FILTER (WHERE n.status = 'passed'), 3) AS min_sol_fraction,
       count(*) FILTER (WHERE n.status = 'passed' AND n.median_ms < n.expert_ms) = count(*) AS beats_everywhere,
       count(*) FILTER (WHERE n.status = 'passed' AND n.median_ms < n.expert_ms) = count(*)
         AND exp(avg(ln(n.expert_ms / n.median_ms)) FILTER (WHERE n.status = 'passed')) >= 1.01 AS replaces_expert
FROM newest n
LEFT JOIN sol ON sol.workload_id = n.workload_id AND sol.env_id = n.env_id
GROUP BY ALL
ORDER BY n.task_id, geomean_gain DESC;
