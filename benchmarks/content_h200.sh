#!/usr/bin/env bash
# The content issue's GPU table in one device call: calibrate, then eager reference,
# torch.compile(reference), naive and expert on every bench workload of TASKS; prints the
# baselines table. Needs the wheels of pydantic and duckdb in .whl/ (carried). Writes under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
export D2K_DB=$OUT/d2k.duckdb D2K_WORKDIR=/tmp/d2kwork
TASKS=${TASKS:-fused_add_rmsnorm,layernorm_backward,rope_cos_sin_cache,silu_and_mul,per_token_group_fp8_quant,kv_cache_append_fp8,softmax_vocab,cross_entropy_fwd_bwd,fused_linear_cross_entropy,top_k_top_p_sampling,moe_grouped_topk_routing,moe_align_block_size}
python3 -m d2k calibrate
start=$(date +%s)
python3 -m d2k bench --tasks "$TASKS" --solution expert --solution naive --solution reference --solution compiled \
  --per-workload 2>&1 | tee "$OUT/bench.log"
echo "sweep wall time: $(( $(date +%s) - start )) s" | tee -a "$OUT/bench.log"
COLUMNS=220 python3 -m d2k sql @analysis/queries/baselines_table.sql | tee "$OUT/table.txt"
tar czf "$OUT/runs.tgz" -C /tmp/d2kwork . 2>/dev/null
