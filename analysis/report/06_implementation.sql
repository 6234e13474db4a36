-- Which design properties each judged solution implements: per level (0-1), combined and
-- dependency-aware scores (0-100), from the latest run of each judge (`latest`: the newest
-- version of each solution name).
WITH scores AS (
    SELECT *, row_number() OVER (PARTITION BY solution_id, judge ORDER BY created_at DESC) AS rn
    FROM v_judge_scores
)
SELECT task_id, regexp_replace(solution, '.*/', '') AS solution, left(solution_id, 8) AS version, judge,
       round(l1, 2) AS l1, round(l2, 2) AS l2, round(l3, 2) AS l3,
       round(combined, 1) AS combined, round(dependency_aware, 1) AS dependency_aware,
       round(coverage, 2) AS coverage,
       row_number() OVER (PARTITION BY task_id, solution, judge ORDER BY created_at DESC) = 1 AS latest
FROM scores
WHERE rn = 1
ORDER BY task_id, solution, judge;
