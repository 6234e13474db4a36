-- Paired experiments per model and task, guided / unguided (seeds averaged): correct (share of
-- attempts), the task's term of the Performance Score (speedup if correct, else 0), the speedup of
-- the correct attempts, the dependency-aware implementation score (0-100) and the attempts that
-- failed in the harness (counted as incorrect).
SELECT experiment, model, task_id,
       printf('%.2g / %.2g', guided_correct, unguided_correct) AS correct,
       coalesce(printf('%.2f', guided_task_score), '—') || ' / ' || coalesce(printf('%.2f', unguided_task_score), '—') AS task_score,
       coalesce(printf('%.2fx', guided_speedup), '—') || ' / ' || coalesce(printf('%.2fx', unguided_speedup), '—') AS speedup,
       coalesce(printf('%.0f', guided_impl_score), '—') || ' / ' || coalesce(printf('%.0f', unguided_impl_score), '—') AS implementation,
       coalesce(guided_harness_failed, 0) || ' / ' || coalesce(unguided_harness_failed, 0) AS failed
FROM v_paired
ORDER BY experiment, model, task_id;
