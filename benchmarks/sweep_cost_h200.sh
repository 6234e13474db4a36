#!/usr/bin/env bash
# Issue 17's cost target ("the full expert sweep no slower than today"), in one device call: every
# task's expert over its bench workloads, once in today's default timing (event window, zeroing
# flush) and once in device-span mode (read flush), task by task on the same machine. The two runs of
# a task go back to back and swap order from one task to the next, so neither mode always runs on the
# warmer card; each mode has its own work folder, so its candidates compile into their own empty
# kernel cache and neither reuses the other's kernels. (Until session 32 only TRITON_CACHE_DIR was
# set per mode, which the sandbox replaces with $D2K_WORKDIR/kernel-cache/<solution id>: the mode
# that ran second reused the first one's kernels and its checks skipped the compiles.) Writes under $OUT:
#   cost.jsonl                        one row per task and mode: the wall seconds of
#                                     `d2k bench --tasks T --solution expert` and its exit code
#   evaluations_events.json, _span    each mode's evaluations (status, medians, seconds; the seconds
#                                     of checks and of timing; profiler fallbacks)
#   gpu.txt, bench_*.log
# A task whose second run the deadline cuts off has one row: the table counts complete pairs only.
# COST_TASKS (space-separated) picks the tasks, in order; default all of tasks/.
# Table: python3 benchmarks/sweep_cost_table.py OUT_DIR
set -uo pipefail
DEADLINE=$(( $(date +%s) + ${SECONDS_BUDGET:-560} - 20 ))   # 20 s kept for the extracts below
source benchmarks/gpu_env.sh
# a fresh store, work folder and Triton cache for each mode and run: a warm machine keeps /tmp between calls, and
# session 30's second call found the first call's store there and skipped one task's evaluations
RUN=$(mktemp -d /tmp/cost_run.XXXXXX)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
SPAN='{"device_span": true, "flush_mode": "read"}'
i=0
for task in ${COST_TASKS:-$(ls tasks)}; do
  order="events span"; (( i % 2 )) && order="span events"; i=$(( i + 1 ))
  for mode in $order; do
    (( DEADLINE - $(date +%s) > 15 )) || break 2
    timing=""; [[ $mode == span ]] && timing=$SPAN
    start=$(date +%s%N)
    TRITON_CACHE_DIR=$RUN/triton_$mode D2K_WORKDIR=$RUN/work_$mode D2K_DB=$RUN/$mode.duckdb D2K_TIMING="$timing" \
      timeout "$(budget "${TASK_SECONDS:-200}")" python3 -m d2k bench --tasks "$task" --solution expert --force \
      >> "$OUT/bench_$mode.log" 2>&1
    rc=$?
    echo "{\"task\": \"$task\", \"mode\": \"$mode\", \"wall_s\": $(( ($(date +%s%N) - start) / 1000000 ))e-3, \"rc\": $rc}" \
      | tee -a "$OUT/cost.jsonl"
  done
done
for mode in events span; do
  [[ -e $RUN/$mode.duckdb ]] || continue
  # with where each evaluation's seconds went (checks or timing) and whether span mode fell back to
  # an unprofiled timing (profiler_slowed, span_skipped): what the per-call cost is made of
  D2K_DB=$RUN/$mode.duckdb timeout 15 python3 -m d2k sql "SELECT task_id, workload_id, status, timing_method, median_ms,
    event_median_ms, span_median_ms, n_samples, seconds, CAST(timing->'phases_s'->>'check' AS DOUBLE) AS check_s,
    CAST(timing->'phases_s'->>'time' AS DOUBLE) AS time_s, CAST(timing->>'profiler_slowed' AS DOUBLE) AS profiler_slowed,
    CAST(timing->>'discarded_calls' AS INTEGER) AS discarded_calls, timing->>'span_skipped' AS span_skipped
    FROM evaluations ORDER BY 1, 2" --format json \
    > "$OUT/evaluations_$mode.json"
done
