#!/usr/bin/env bash
# Timing v2 (issue 17), one device call: why references that synchronise with the host mid-call
# (kv_cache_append_fp8, moe_align_block_size) ran 1.2-2.4x slower in span mode.
#   1. outside d2k (benchmarks/host_sync_probe.py): the same calls with no profiler, with CUPTI's
#      CUDA activity only, and with CPU + CUDA activity (what span mode runs);
#   2. through d2k, the two references (rmsnorm's as a control without a sync) in five settings:
#      events | span | events without the hold | events without the sandbox | span without the sandbox.
# The probe runs twice: Kineto's default, then TEARDOWN_CUPTI=1 (CUPTI finalized after each session).
# Writes $OUT/probe.jsonl, $OUT/settings.json (one row per evaluation) and logs.tgz.
# Budgets: PROBE_SECONDS, SETTING_SECONDS; SETTINGS picks settings (default all five). Needs .whl carried (benchmarks/gpu_env.sh).
set -uo pipefail
source benchmarks/gpu_env.sh
TASKS=${TASKS:-kv_cache_append_fp8,moe_align_block_size,rmsnorm}
for teardown in "" 1; do
TEARDOWN_CUPTI=$teardown timeout "${PROBE_SECONDS:-90}" python3 benchmarks/host_sync_probe.py \
  kv_cache_append_fp8:llama70b_tp4_decode_t256:reference kv_cache_append_fp8:llama8b_prefill_t8192:reference \
  moe_align_block_size:qwen3_t32_k8_e128_bs16:reference moe_align_block_size:dsv3_t4096_k8_e256_bs64:reference \
  rmsnorm:h7168_t64:reference kv_cache_append_fp8:llama70b_tp4_decode_t256:expert \
  >> "$OUT/probe.jsonl" 2>> "$OUT/probe.log"
done
run_setting() {  # name, sandbox (1|0), timing JSON
  local start=$(date +%s)
  D2K_DB=/tmp/hs_$1.duckdb D2K_SANDBOX=$2 D2K_TIMING=$3 timeout "${SETTING_SECONDS:-70}" \
    python3 -m d2k bench --tasks "$TASKS" $(for s in ${SOLUTIONS:-reference}; do printf -- "--solution %s " "$s"; done) --per-workload > "$OUT/setting_$1.log" 2>&1
  echo "$1: $(( $(date +%s) - start )) s" | tee -a "$OUT/cost.log"
  D2K_DB=/tmp/hs_$1.duckdb python3 -m d2k sql "SELECT '$1' AS setting, e.task_id, e.workload_id, e.solution_id, e.status, e.timing_method, e.median_ms, e.event_median_ms, e.span_median_ms, e.kernels_per_call, e.n_samples, e.seconds, json_extract(e.timing, '$.waits_for_device') AS waits_for_device, json_extract_string(e.timing, '$.span_skipped') AS span_skipped FROM evaluations e ORDER BY 2, 3" --format json > "$OUT/rows_$1.json"
}
for setting in ${SETTINGS:-events span nohold nosandbox span_nosandbox}; do
  case $setting in
    events) run_setting events 1 '{"flush_mode": "read"}' ;;
    span) run_setting span 1 '{"device_span": true, "flush_mode": "read"}' ;;
    nohold) run_setting nohold 1 '{"flush_mode": "read", "hold_max_us": 0}' ;;
    nosandbox) run_setting nosandbox 0 '{"flush_mode": "read"}' ;;
    span_nosandbox) run_setting span_nosandbox 0 '{"device_span": true, "flush_mode": "read"}' ;;
  esac
done
python3 - "$OUT" <<'EOF'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
rows = []
for p in sorted(out.glob("rows_*.json")):
    try:
        rows += json.loads(p.read_text() or "[]")
    except json.JSONDecodeError:
        pass
    p.unlink()
(out / "settings.json").write_text(json.dumps(rows, indent=0))
EOF
(cd "$OUT" && tar czf logs.tgz --remove-files $(ls *.log | grep -v -e "^main.log$" -e "^cost.log$") 2>/dev/null)
