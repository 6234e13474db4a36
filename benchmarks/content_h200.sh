#!/usr/bin/env bash
# The content issue's GPU table in one device call: calibrate, then eager reference,
# torch.compile(reference), naive and expert on every bench workload of TASKS; prints the
# baselines table. SOLUTIONS and TASKS narrow the sweep; WARM_SECONDS and BENCH_SECONDS bound it.
# Needs the wheels of benchmarks/gpu_env.sh in .whl/ (carried). Writes under $OUT.
set -uo pipefail
source benchmarks/gpu_env.sh
TASKS=${TASKS:-fused_add_rmsnorm,layernorm_backward,rope_cos_sin_cache,silu_and_mul,per_token_group_fp8_quant,kv_cache_append_fp8,softmax_vocab,cross_entropy_fwd_bwd,fused_linear_cross_entropy,top_k_top_p_sampling,moe_grouped_topk_routing,moe_align_block_size}
SOLUTIONS=${SOLUTIONS:-expert naive reference compiled}
python3 -m d2k calibrate
if [[ " $SOLUTIONS " == *" compiled "* ]]; then
  # torch.compile is CPU-bound: fill the inductor and Triton caches with four sweeps in parallel
  # (their timings are thrown away), so the timed sweep below only loads compiled code.
  start=$(date +%s)
  IFS=, read -ra all <<<"$TASKS"
  for i in 0 1 2 3; do
    part=$(for j in "${!all[@]}"; do (( j % 4 == i )) && printf '%s,' "${all[$j]}"; done)
    [[ -n "$part" ]] && D2K_DB=/tmp/warm$i.duckdb D2K_WORKDIR=/tmp/warm$i \
      timeout "${WARM_SECONDS:-240}" python3 -m d2k bench --tasks "${part%,}" --solution compiled >/tmp/warm$i.log 2>&1 &
  done
  wait
  echo "compile warm-up: $(( $(date +%s) - start )) s" | tee -a "$OUT/bench.log"
fi
start=$(date +%s)
args=(); for s in $SOLUTIONS; do args+=(--solution "$s"); done
# Bounded so the table and the raw runs still come back when the sweep outlasts the call.
timeout "${BENCH_SECONDS:-520}" python3 -m d2k bench --tasks "$TASKS" "${args[@]}" --per-workload 2>&1 | tee -a "$OUT/bench.log"
echo "sweep wall time: $(( $(date +%s) - start )) s" | tee -a "$OUT/bench.log"
COLUMNS=220 python3 -m d2k sql @analysis/queries/baselines_table.sql | tee "$OUT/table.txt"
tar czf "$OUT/runs.tgz" -C "$D2K_WORKDIR" . 2>/dev/null
