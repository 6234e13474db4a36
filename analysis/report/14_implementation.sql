-- Which design properties each task's shipped solutions implement (the newest expert and naive
-- versions) and, in one row, the mean over every other judged solution (candidates, agent
-- submissions): per level the mean credit (0-1), combined = the plain implementation score
-- (0-100: the mean of the three levels), dependency_aware = the same with each item's credit
-- limited by its prerequisites, coverage = the decided share of the rubric; each judge's latest run.
WITH j AS (
    SELECT j.*, v.latest, CASE WHEN j.solution IN ('expert', 'naive') AND v.latest THEN j.solution END AS shipped
    FROM v_judge_scores j JOIN v_solution_versions v USING (solution_id)
)
SELECT task_id, solution, version, judge, l1, l2, l3, combined, dependency_aware, coverage FROM (
    SELECT task_id, shipped AS solution, left(solution_id, 8) AS version, judge,
           round(l1, 2) AS l1, round(l2, 2) AS l2, round(l3, 2) AS l3,
           round(combined, 1) AS combined, round(dependency_aware, 1) AS dependency_aware, round(coverage, 2) AS coverage
    FROM j WHERE shipped IS NOT NULL
    UNION ALL
    SELECT task_id, 'others: mean of ' || count(*), NULL, judge, round(avg(l1), 2), round(avg(l2), 2), round(avg(l3), 2),
           round(avg(combined), 1), round(avg(dependency_aware), 1), round(avg(coverage), 2)
    FROM j WHERE shipped IS NULL GROUP BY task_id, judge
)
ORDER BY task_id, solution LIKE 'others%', solution, judge;
