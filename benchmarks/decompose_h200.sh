#!/usr/bin/env bash
# Issue 17's short-kernel offset taken apart, in one device call. Writes under $OUT:
#   decompose.jsonl   benchmarks/span_decompose.py on every bench workload of the five agreement
#                     tasks' experts: the span as d2k records it, behind a flush without the sleep,
#                     and every term of a CUDA-graph replay's per-call figure (CUPTI)
#   ncu_all.csv, ncu_none.csv, ncu_*_cases.json  Nsight Compute's durations of the same calls with
#                     the caches flushed (--cache-control all, as in the agreement study) and not
#                     (none): is ncu's extra microsecond cache refill or its own per-kernel cost?
#   ncu_call.csv, ncu_call_cases.json  ncu without its cache control, the script reading a 2 x L2
#                     buffer once before each call instead (ncu_calls.py --call-flush): cold once a
#                     call, as in d2k's timed call (session 30)
#   agreement.json    d2k's span mode (read flush) on the same workloads, SPAN_PROCESSES processes (1)
# Table: python3 benchmarks/span_decompose_table.py OUT_DIR
set -uo pipefail
export D2K_DB=${D2K_DB:-/tmp/decompose.duckdb}
# the deadline counts from the start (the install below is inside it), less 25 s kept for the
# steps after the last stage (ncu's export, the store's extract, the table, the caller's tarball)
DEADLINE=$(( $(date +%s) + ${SECONDS_BUDGET:-560} - 25 ))
source benchmarks/gpu_env.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
TASKS=${TASKS:-rmsnorm silu_and_mul softmax_vocab moe_grouped_topk_routing top_k_top_p_sampling}
CASES=""
for t in $TASKS; do
  for w in $(python3 -c "import json;[print(json.loads(l)['id']) for l in open('workloads/$t.jsonl') if json.loads(l)['tag']=='bench']"); do CASES="$CASES $t:$w"; done
done
timeout $(budget ${DECOMPOSE_SECONDS:-200}) python3 benchmarks/span_decompose.py --calls ${CALLS:-40} $CASES \
  > "$OUT/decompose.jsonl" 2> "$OUT/decompose.err"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for cache in all none call; do
  [[ -n $NCU ]] || { echo "no ncu" | tee "$OUT/ncu.err"; break; }
  # call: no cache control by ncu; the script flushes once before each call, as d2k's timer does
  control=$cache flag=""; [[ $cache == call ]] && control=none flag=--call-flush
  timeout $(budget ${NCU_SECONDS:-90}) "$NCU" --clock-control none --cache-control $control --metrics gpu__time_duration.sum \
    --profile-from-start off --target-processes all -f -o /tmp/ncu_$cache \
    python3 benchmarks/ncu_calls.py ${NCU_CALLS:-10} $flag $CASES > "$OUT/ncu_$cache.log" 2>&1
  # ncu_calls.py prints the cases done after each case: the last line covers a run cut short too
  grep '^CASES ' "$OUT/ncu_$cache.log" | tail -1 | sed 's/^CASES //' > "$OUT/ncu_${cache}_cases.json"
  timeout 20 "$NCU" -i /tmp/ncu_$cache.ncu-rep --csv --page raw --print-units base > "$OUT/ncu_$cache.csv" 2>> "$OUT/ncu_$cache.log"
done
# SPAN_PROCESSES runs of d2k's span mode, SPAN_SECONDS each: with 5, the table of
# benchmarks/timing_agreement_table.py OUT_DIR gives issue 17's repeatability (CV over processes)
for p in $(seq 1 "${SPAN_PROCESSES:-1}"); do
  D2K_TIMING='{"device_span": true, "flush_mode": "read"}' timeout $(budget ${SPAN_SECONDS:-120}) python3 -m d2k bench \
    --tasks "$(echo $TASKS | tr ' ' ',')" --solution expert --force >> "$OUT/span.log" 2>&1
done
python3 -m d2k sql "SELECT task_id, workload_id, run_id, median_ms, event_median_ms, span_median_ms, kernel_sum_median_ms, kernels_per_call, status FROM evaluations WHERE backend='cuda' AND span_median_ms IS NOT NULL ORDER BY task_id, workload_id, created_at" --format json > "$OUT/agreement.json"
python3 benchmarks/span_decompose_table.py "$OUT" > "$OUT/decompose_table.md" 2>&1
