#!/usr/bin/env bash
# Content B (issues 14-16) in one device call: calibrate, then eager reference, torch.compile of the
# reference, each library baseline (tasks/<id>/baselines/), naive and expert on every bench workload
# of the eleven new tasks, timed with the device span (timing v2) beside the event window.
# Needs .whl (benchmarks/gpu_env.sh installs d2k's wheels and fla-core, einops and gemlite) carried. Writes under $OUT.
# Passes with other tasks or solutions in the same call: run it again with the same D2K_DB,
# SKIP_CALIBRATE=1 and a PASS name (its log is bench$PASS.log; the table covers every pass).
# TASK_SECONDS caps each task's share of BENCH_SECONDS (tasks run one after another).
set -uo pipefail
source benchmarks/gpu_env.sh
TASKS=${TASKS:-paged_decode_gqa,splitkv_decode_long_context,merge_attn_states,mla_decode,fp8_blockwise_gemm,w4a16_gemm,fused_moe_experts,causal_conv1d,mamba2_ssd_chunked,gdn_chunk_prefill,gdn_decode}
SOLUTIONS=${SOLUTIONS:-expert naive baselines reference compiled}
export D2K_TIMING=${D2K_TIMING:-'{"device_span": true, "flush_mode": "read"}'}
[[ -n ${SKIP_CALIBRATE:-} ]] || python3 -m d2k calibrate > "$OUT/calibrate.log" 2>&1
args=(); for s in $SOLUTIONS; do args+=(--solution "$s"); done
start=$(date +%s)
if [[ -n ${TASK_SECONDS:-} ]]; then
  # each task gets at most TASK_SECONDS, so one slow task cannot starve the ones after it (the sweep
  # runs tasks in alphabetical order); the whole pass still stops at BENCH_SECONDS
  for t in ${TASKS//,/ }; do
    left=$(( ${BENCH_SECONDS:-480} - ($(date +%s) - start) ))
    (( left > 10 )) || { echo "no time left for $t" >> "$OUT/bench${PASS:-}.log"; continue; }
    timeout "$(( left < TASK_SECONDS ? left : TASK_SECONDS ))" python3 -m d2k bench --tasks "$t" "${args[@]}" \
      --per-workload --timeout "${TIMEOUT:-120}" >> "$OUT/bench${PASS:-}.log" 2>&1
  done
else
  timeout "${BENCH_SECONDS:-480}" python3 -m d2k bench --tasks "$TASKS" "${args[@]}" --per-workload --timeout "${TIMEOUT:-120}" > "$OUT/bench${PASS:-}.log" 2>&1
fi
echo "sweep wall time: $(( $(date +%s) - start )) s" | tee -a "$OUT/bench${PASS:-}.log"
COLUMNS=250 python3 -m d2k sql @analysis/queries/baselines_table.sql > "$OUT/table.txt" 2>&1
python3 -m d2k sql "SELECT e.task_id, e.workload_id, s.label, e.status, e.median_ms, e.event_median_ms, e.span_median_ms, e.kernels_per_call, e.kernel_less, e.seconds, e.timing_method, substr(e.reason, 1, 300) AS reason FROM evaluations e JOIN solutions s USING (solution_id) ORDER BY 1, 2, 3" --format json > "$OUT/evaluations.json"
python3 -c "import duckdb, sys; duckdb.connect(sys.argv[1]).execute('CHECKPOINT')" "$D2K_DB"  # fold the WAL in before copying
cp "$D2K_DB" "$OUT/content_b.duckdb" 2>/dev/null
tail -40 "$OUT/bench${PASS:-}.log"
