-- Correctness on every backend (the interpreter included): first the overall rate per backend, then
-- per task the shipped solutions and, in one row, every other solution (candidates, agent
-- submissions), with the failures (the first three; the rest counted).
WITH e AS (
    SELECT e.task_id, CASE WHEN e.solution IN ('expert', 'naive', 'compiled', 'reference') THEN e.solution ELSE 'others' END AS grp,
           e.solution_id, e.backend, e.workload_id, e.status, e.reason
    FROM v_evaluations e
), agg AS (
    SELECT task_id, grp, backend, count(DISTINCT solution_id) AS solutions, count(*) AS workloads,
           count(*) FILTER (WHERE status = 'passed') AS passed,
           list(workload_id || ': ' || status || coalesce(' (' || left(reason, 120) || ')', '') ORDER BY workload_id)
               FILTER (WHERE status <> 'passed') AS failures
    FROM e GROUP BY ALL
)
SELECT task_id, solution, backend, workloads, passed, pass_rate, failures FROM (
    SELECT 0 AS k, '(all tasks)' AS task_id, '(all solutions)' AS solution, backend, count(*) AS workloads,
           count(*) FILTER (WHERE status = 'passed') AS passed,
           round(100.0 * count(*) FILTER (WHERE status = 'passed') / count(*), 1) AS pass_rate, NULL AS failures
    FROM e GROUP BY backend
    UNION ALL
    SELECT 1, task_id, CASE WHEN grp = 'others' THEN 'others (' || solutions || ')' ELSE grp END, backend, workloads, passed,
           round(100.0 * passed / workloads, 1),
           array_to_string(list_slice(failures, 1, 3), '; ')
             || CASE WHEN len(failures) > 3 THEN '; and ' || (len(failures) - 3) || ' more' ELSE '' END
    FROM agg
)
ORDER BY k, task_id, solution, backend;
