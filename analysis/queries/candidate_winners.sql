-- Candidate kernels (any solution given by path) against the task's expert on the GPU, per task:
-- each candidate's newest run that also timed an expert (the call's control, as
-- benchmarks/variants_h200.sh does), compared workload by workload with that control from the
-- same run, so the spread between device calls never decides. On how many bench workloads the
-- candidate is faster, its geometric-mean gain over the control, and whether it replaces the
-- expert (replaces_expert): faster on every workload and by at least 1 % in the geometric mean
-- (smaller gains are within run-to-run spread and do not pay for a rewrite). Fill it with
--   VARIANTS_DIR=benchmarks/studies/<date>-<name>/candidates bash benchmarks/variants_h200.sh   (expert as control)
-- then: d2k ingest …/results.jsonl; d2k sql @analysis/queries/candidate_winners.sql
WITH ctrl AS (      -- the shipped expert's passed timings: the control of each run
    SELECT e.run_id, e.workload_id, e.env_id, e.median_ms AS expert_ms
    FROM evaluations e
    JOIN solutions s USING (solution_id)
    JOIN workloads w USING (workload_id)
    WHERE e.backend = 'cuda' AND w.tag = 'bench' AND s.label = 'expert' AND e.status = 'passed'
), newest_run AS (  -- each candidate's newest run that timed the control
    SELECT e.solution_id, arg_max(e.run_id, e.created_at) AS run_id
    FROM evaluations e
    JOIN solutions s USING (solution_id)
    SEMI JOIN ctrl x ON x.run_id = e.run_id AND x.workload_id = e.workload_id AND x.env_id = e.env_id
    WHERE e.backend = 'cuda' AND s.label NOT IN ('expert', 'naive', 'reference', 'compiled')
    GROUP BY e.solution_id
), newest AS (      -- that run's candidate timings beside the control's
    SELECT e.task_id, s.label AS solution, e.solution_id, e.run_id, e.workload_id, e.env_id, e.status, e.median_ms,
           x.expert_ms
    FROM evaluations e
    JOIN solutions s USING (solution_id)
    JOIN newest_run r ON r.solution_id = e.solution_id AND r.run_id = e.run_id
    JOIN ctrl x ON x.run_id = e.run_id AND x.workload_id = e.workload_id AND x.env_id = e.env_id
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
LEFT JOIN v_sol sol ON sol.workload_id = n.workload_id AND sol.env_id = n.env_id
GROUP BY ALL
ORDER BY n.task_id, geomean_gain DESC;
