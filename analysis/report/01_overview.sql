-- What the store holds, and the overall correctness rate: the share of the latest evaluations
-- (each solution on each workload and machine) that passed, per backend.
SELECT what, value FROM (
    SELECT 1 AS k, 'tasks' AS what, (SELECT count(*) FROM tasks)::VARCHAR AS value
    UNION ALL SELECT 2, 'workloads (bench + smoke)', (SELECT count(*) FROM workloads)::VARCHAR
    UNION ALL SELECT 3, 'design items', (SELECT count(*) FROM design_items)::VARCHAR
    UNION ALL SELECT 4, 'solutions', (SELECT count(*) FROM solutions)::VARCHAR
    UNION ALL SELECT 5, 'GPU evaluations', (SELECT count(*) FROM evaluations WHERE backend = 'cuda')::VARCHAR
    UNION ALL SELECT 6, 'interpreter evaluations', (SELECT count(*) FROM evaluations WHERE backend <> 'cuda')::VARCHAR
    UNION ALL SELECT 7, 'correctness rate, ' || CASE backend WHEN 'cuda' THEN 'GPU' ELSE backend END,
           printf('%.1f %% (%d of %d passed)', 100.0 * count(*) FILTER (WHERE status = 'passed') / count(*),
                  count(*) FILTER (WHERE status = 'passed'), count(*))
        FROM v_evaluations GROUP BY backend
    UNION ALL SELECT 8, 'machines', (SELECT count(*) FROM environments)::VARCHAR
    UNION ALL SELECT 9, 'judge verdicts', (SELECT count(*) FROM verdicts)::VARCHAR
    UNION ALL SELECT 10, 'experiments, attempts', (SELECT count(*) FROM experiments)::VARCHAR || ', '
                                                 || (SELECT count(*) FROM attempts)::VARCHAR
)
ORDER BY k, what;
