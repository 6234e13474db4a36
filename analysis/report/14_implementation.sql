-- Which design properties each judged solution implements: per level (0-1), combined and
-- dependency-aware scores (0-100), from the latest run of each judge (`latest`: the newest
-- version of each solution name, see v_solution_versions).
WITH scores AS (
    SELECT *, row_number() OVER (PARTITION BY solution_id, judge ORDER BY created_at DESC) AS rn
    FROM v_judge_scores
)
SELECT j.task_id, regexp_replace(j.solution, '.*/', '') AS solution, left(j.solution_id, 8) AS version, j.judge,
       round(j.l1, 2) AS l1, round(j.l2, 2) AS l2, round(j.l3, 2) AS l3,
       round(j.combined, 1) AS combined, round(j.dependency_aware, 1) AS dependency_aware,
       round(j.coverage, 2) AS coverage, v.latest
FROM scores j
JOIN v_solution_versions v USING (solution_id)
WHERE j.rn = 1
ORDER BY j.task_id, solution, j.judge;
