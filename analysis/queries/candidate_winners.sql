-- Candidate kernels (any solution given by path) against the task's expert on the GPU, per task:
-- on how many bench workloads each is faster than the expert, and its geometric-mean gain over
-- the expert. A candidate replaces the expert only if it beats it on every workload and by at least
-- 1 % in the geometric mean (replaces_expert): smaller gains are within run-to-run spread and do
-- not pay for a rewrite (round 1 kept silu_and_mul's expert on that ground). Fill it with
--   VARIANTS_DIR=benchmarks/candidates bash benchmarks/variants_h200.sh   (expert as control)
-- then: d2k ingest …/results.jsonl; d2k sql @analysis/queries/candidate_winners.sql
WITH expert AS (
    SELECT task_id, workload_id, env_id, median_ms AS expert_ms
    FROM v_workload_speedup WHERE solution = 'expert' AND status = 'passed' AND tag = 'bench'
      AND solution_id IN (SELECT solution_id FROM v_solution_versions WHERE latest)  -- today's expert
)
SELECT c.task_id, regexp_replace(c.solution, '.*/', '') AS candidate,
       count(*) AS workloads,
       count(*) FILTER (WHERE c.status = 'passed') AS passed,
       count(*) FILTER (WHERE c.status = 'passed' AND c.median_ms < x.expert_ms) AS faster,
       round(exp(avg(ln(x.expert_ms / c.median_ms)) FILTER (WHERE c.status = 'passed')), 3) AS geomean_gain,
       round(min(c.sol_fraction), 3) AS min_sol_fraction,
       count(*) FILTER (WHERE c.status = 'passed' AND c.median_ms < x.expert_ms) = count(*) AS beats_everywhere,
       count(*) FILTER (WHERE c.status = 'passed' AND c.median_ms < x.expert_ms) = count(*)
         AND exp(avg(ln(x.expert_ms / c.median_ms)) FILTER (WHERE c.status = 'passed')) >= 1.01 AS replaces_expert
FROM v_workload_speedup c
JOIN expert x ON x.task_id = c.task_id AND x.workload_id = c.workload_id AND x.env_id = c.env_id
WHERE c.tag = 'bench' AND c.solution NOT IN ('expert', 'naive', 'reference', 'compiled')
GROUP BY ALL
ORDER BY c.task_id, geomean_gain DESC;
