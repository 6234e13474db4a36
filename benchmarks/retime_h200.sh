#!/usr/bin/env bash
# Timing v2 (issue 17), one device call: re-time the shipped tables in device-span mode.
#   1. the cost: the five agreement tasks' experts in the default (event-window) mode, one process,
#      wall time beside the span-mode runs of trusted_h200.sh;
#   2. every bench workload of the first fifteen tasks: expert, then the eager reference, device
#      span with the read flush (the event window is stored beside it in the same evaluation).
# Writes $OUT/retime.json (one row per evaluation) and logs.tgz. Budgets: COST_SECONDS,
# EXPERT_SECONDS, REFERENCE_SECONDS; EXPERT_TASKS, REFERENCE_TASKS narrow a pass (none skips it). Needs .whl carried (benchmarks/gpu_env.sh).
set -uo pipefail
export D2K_DB=${D2K_DB:-/tmp/retime.duckdb}
source benchmarks/gpu_env.sh
FIVE=rmsnorm,silu_and_mul,softmax_vocab,moe_grouped_topk_routing,top_k_top_p_sampling
FIFTEEN=${TASKS:-bf16_gemm,cross_entropy_fwd_bwd,flash_attention_prefill,fused_add_rmsnorm,fused_linear_cross_entropy,kv_cache_append_fp8,layernorm_backward,moe_align_block_size,moe_grouped_topk_routing,per_token_group_fp8_quant,rmsnorm,rope_cos_sin_cache,silu_and_mul,softmax_vocab,top_k_top_p_sampling}
if [[ -z ${SKIP_COST:-} ]]; then
  start=$(date +%s%N)
  D2K_DB=/tmp/cost_events.duckdb timeout "${COST_SECONDS:-100}" python3 -m d2k bench --tasks $FIVE --solution expert > "$OUT/cost_events.log" 2>&1
  echo "events mode, $FIVE expert: $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee "$OUT/cost.log"
  D2K_DB=/tmp/cost_events.duckdb python3 -m d2k sql "SELECT workload_id, median_ms, seconds FROM evaluations ORDER BY 1" --format json > "$OUT/cost_events.json"
fi
export D2K_TIMING='{"device_span": true, "flush_mode": "read"}'
for s in expert reference; do
  budget=$([[ $s == expert ]] && echo "${EXPERT_SECONDS:-240}" || echo "${REFERENCE_SECONDS:-200}")
  start=$(date +%s)
  tasks=$([[ $s == expert ]] && echo "${EXPERT_TASKS:-$FIFTEEN}" || echo "${REFERENCE_TASKS:-$FIFTEEN}")
  [[ $tasks == none ]] && continue
  timeout "$budget" python3 -m d2k bench --tasks "$tasks" --solution $s --per-workload > "$OUT/retime_$s.log" 2>&1
  echo "$s sweep: $(( $(date +%s) - start )) s" | tee -a "$OUT/cost.log"
done
python3 -m d2k sql "SELECT e.task_id, e.workload_id, s.label, e.status, e.median_ms, e.event_median_ms, e.span_median_ms, e.kernel_sum_median_ms, e.kernels_per_call, e.iqr_ms, e.seconds, substr(e.reason, 1, 200) AS reason FROM evaluations e JOIN solutions s USING (solution_id) ORDER BY 1, 2, 3" --format json > "$OUT/retime.json"
(cd "$OUT" && tar czf logs.tgz --remove-files $(ls *.log | grep -v "^main.log$") 2>/dev/null)
