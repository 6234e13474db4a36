-- Correctness on every backend (the interpreter included), with what failed.
SELECT task_id, regexp_replace(solution, '.*/', '') AS solution, backend, workloads, passed,
       array_to_string(failures, '; ') AS failures
FROM v_correctness
ORDER BY task_id, solution, backend;
