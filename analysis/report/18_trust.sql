-- What the trusted side could not vouch for: evaluations of kernel-less solutions (no kernel of
-- their own: library calls only), timings the trusted side rejected (timing_suspect), event windows
-- with calls issued later than their hold (host_late), and runs whose sandbox lacked a layer
-- (their warnings). SECURITY.md says what each means. Beside them, the passed figures that hold
-- more than the solution's kernels, as `d2k bench` notes them (d2k/timing_notes.py, same
-- thresholds): calls that wait for the device mid-call, and device spans over 5 % (and 10 µs)
-- outside their kernels. Those two rest on the timing loop's own report from the candidate's
-- process: a row says what the figure holds; a missing row vouches for nothing.
SELECT kind, run_id, task_id, solution, workload_id, backend, detail FROM (
    SELECT 1 AS k, 'kernel-less solution' AS kind, run_id, task_id, solution, workload_id, backend,
           'no kernel of its own was launched' AS detail
    FROM v_evaluations WHERE kernel_less
    UNION ALL
    SELECT 2, 'timing rejected', run_id, task_id, solution, workload_id, backend, left(reason, 200)
    FROM v_evaluations WHERE status = 'timing_suspect'
    UNION ALL
    SELECT 3, 'calls issued late', run_id, task_id, solution, workload_id, backend,
           (flags->'host_late'->>'calls') || ' of ' || (flags->'host_late'->>'of') || ' timed calls (worst '
               || (flags->'host_late'->>'worst_us') || ' µs of host time)'
    FROM v_evaluations WHERE (flags->'host_late') IS NOT NULL
    UNION ALL
    SELECT 4, 'waits for the device', run_id, task_id, solution, workload_id, backend,
           'the call reads a device value on the host mid-call, or the profiler slowed its host side: timed by events, host work included'
    FROM v_evaluations WHERE backend = 'cuda' AND status = 'passed' AND waits_for_device
    UNION ALL
    SELECT 5, 'span outside its kernels', run_id, task_id, solution, workload_id, backend,
           printf('%.0f of %.0f µs of the device span (%.0f %%)', 1e3 * (span_median_ms - kernel_sum_median_ms),
                  1e3 * span_median_ms, 100 * (1 - kernel_sum_median_ms / span_median_ms))
    FROM v_evaluations
    WHERE backend = 'cuda' AND status = 'passed' AND span_median_ms > 0
      AND span_median_ms - kernel_sum_median_ms > greatest(0.05 * span_median_ms, 0.010)
    UNION ALL
    -- a run whose workers saw different layers stores them as variants
    SELECT DISTINCT 6, 'sandbox warning', run_id, NULL, NULL, NULL, NULL, left(w, 200)
    FROM (SELECT run_id, unnest(json_extract_string(sandbox, '$.warnings[*]')
                                || json_extract_string(sandbox, '$.variants[*].warnings[*]')) AS w
          FROM runs WHERE sandbox IS NOT NULL)
)
ORDER BY k, task_id, solution, workload_id, run_id;
