#!/usr/bin/env bash
# One device call to choose among candidate kernels of a task: every VARIANTS_DIR/<task>/*.py is
# checked and timed by `d2k bench` on the task's bench workloads, task by task in TASK_ORDER
# (default: every folder), within SWEEP_SECONDS, with the task's expert as control (CONTROL=0
# leaves it out); CALIBRATE=0 skips the calibration. EXTRA, if set, is one more `d2k bench`
# argument list run last (e.g. "--tasks T --solution compiled").
# Prints median, SOL fraction and status per workload and candidate; the results.jsonl files and
# the calibration come back in $OUT/results.tgz for `d2k ingest`, refreshed after every task so
# a call cut short still returns what finished. WORKLOAD_TIMEOUT (90 s) bounds one workload, so a
# candidate that hangs (a spin-wait that never ends, say) costs little of the call.
# Needs the wheels of benchmarks/gpu_env.sh in .whl/ (carried), and VARIANTS_DIR carried if
# git ignores it; a study that keeps its candidates as edits (candidates.toml) has them written on
# the device first: python3 benchmarks/make_candidates.py SPEC DIR && VARIANTS_DIR=DIR bash ...
set -uo pipefail
source benchmarks/gpu_env.sh
# timed as the shipped tables are (device span, read flush), so a candidate's figure compares with
# them; session 16's candidate sweeps ran without it, by CUDA events (0-5 us higher on short calls)
export D2K_TIMING=${D2K_TIMING:-'{"device_span": true, "flush_mode": "read"}'}
VARIANTS_DIR=${VARIANTS_DIR:-.scratch/variants}
TASK_ORDER=${TASK_ORDER:-$(cd "$VARIANTS_DIR" && ls -d */ | tr -d /)}
[[ "${CALIBRATE:-1}" = 1 ]] && python3 -m d2k calibrate 2>&1 | tail -8
save_results() {
  (cd "$D2K_WORKDIR" && tar czf "$OUT/results.tgz" $(find . -name results.jsonl -o -name calibration.json)) 2>/dev/null
}
deadline=$(( $(date +%s) + ${SWEEP_SECONDS:-480} ))
for task in $TASK_ORDER; do
  # the shipped expert first, timed in the same call: a call cut short still has its control
  # (2026-12-04: a GDN pass ran out of time before a control placed last)
  args=(); [[ "${CONTROL:-1}" = 1 ]] && args+=(--solution expert)
  for f in "$VARIANTS_DIR/$task"/*.py; do args+=(--solution "$f"); done
  left=$(( deadline - $(date +%s) ))
  (( left > 15 )) || { echo "out of time before $task" | tee -a "$OUT/sweep.log"; break; }
  start=$(date +%s)
  timeout "$left" python3 -m d2k bench --tasks "$task" "${args[@]}" --workloads "${WORKLOADS:-bench}" \
    --timeout "${WORKLOAD_TIMEOUT:-90}" >>"$OUT/sweep.log" 2>&1
  echo "$task: $(( ${#args[@]} / 2 )) candidates, $(( $(date +%s) - start )) s" | tee -a "$OUT/sweep.log"
  save_results
done
if [[ -n "${EXTRA:-}" ]]; then
  left=$(( deadline - $(date +%s) ))
  (( left > 15 )) && timeout "$left" python3 -m d2k bench $EXTRA >>"$OUT/sweep.log" 2>&1
fi
COLUMNS=200 python3 -m d2k sql "SELECT task_id, replace(workload_id, task_id || '_', '') AS workload,
    regexp_replace(solution, '.*/', '') AS candidate, round(1e3 * median_ms, 2) AS median_us,
    round(sol_fraction, 3) AS sol, status FROM v_workload_speedup ORDER BY task_id, workload, median_us" \
  | tee "$OUT/variants.txt"
save_results
