#!/usr/bin/env bash
# One device call for the trusted-execution and timing-v2 issues. Writes under $OUT:
#   sandbox.txt      which sandbox layers this machine allows (namespaces, user drop, CUDA as nobody)
#   corpus_gpu.jsonl the reward-hack corpus on the GPU (tests/adversarial, pytest -m gpu)
#   agreement.json   timing v2: device span, kernel sum and event window, SPAN_RUNS processes each
#   ncu.csv, ncu_cases.json  the independent figure: ncu's kernel durations (benchmarks/ncu_calls.py)
#   graph_replay.jsonl a second one: CUDA-graph replay (benchmarks/graph_replay_timing.py)
#   calibration.json `d2k calibrate`: the kernel launch cost (SKIP_CALIBRATE=1 skips it)
#   (benchmarks/timing_agreement_table.py OUT_DIR prints the table)
#   overhead.log     the boundary's cost: the same evaluations under the old in-process worker
#                    (old/, the commit before the boundary) and the new one
# Needs .whl (benchmarks/gpu_env.sh) and old/ (git archive of the old commit) carried.
set -uo pipefail
export D2K_DB=${D2K_DB:-/tmp/trusted.duckdb}   # the store stays out of $OUT (8 files come back at most)
source benchmarks/gpu_env.sh
DEADLINE=$(( $(date +%s) + ${SECONDS_BUDGET:-570} ))
python3 -m pip install -q --no-index --find-links .whl pytest 2>/dev/null || true
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
python3 - <<'PY' 2>&1 | tee "$OUT/sandbox.txt"
from d2k.execution import sandbox
print("namespaces:", sandbox.namespaces_available())
print("python readable by others:", sandbox.python_readable_by_others())
import subprocess, sys
r = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", sys.executable, "-c",
                    "import torch; print('cuda as nobody:', torch.cuda.is_available(), torch.zeros(1, device='cuda').add(1).item())"],
                   capture_output=True, text=True)
print(r.stdout.strip(), r.stderr.strip()[-300:])
PY
# Ordered by what matters most: whatever finishes inside the call's 600 s comes back.
# 1. overhead of the boundary: old in-process worker vs new, same tasks, events timing, write flush
for impl in ${OVERHEAD_IMPLS-old new}; do  # OVERHEAD_IMPLS= skips this stage
  dir=$PWD; [[ $impl == old ]] && dir=$PWD/old
  start=$(date +%s%N)
  (cd "$dir" && D2K_DB=/tmp/ovh_$impl.duckdb D2K_WORKDIR=/tmp/ovh_$impl PYTHONPATH=$dir timeout $(budget 60) python3 -m d2k bench --tasks rmsnorm,silu_and_mul --solution expert > "$OUT/overhead_$impl.log" 2>&1)
  echo "$impl wall $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$OUT/overhead.log"
  (cd "$dir" && D2K_DB=/tmp/ovh_$impl.duckdb PYTHONPATH=$dir python3 -m d2k sql "SELECT workload_id, median_ms, iqr_ms, n_samples, seconds$([[ $impl == new ]] && echo ', flags')  FROM evaluations ORDER BY workload_id" --format json > "$OUT/overhead_$impl.json")
done
# 2. the corpus on the GPU
[[ -n ${SKIP_CORPUS:-} ]] || D2K_GPU_SHARE=${CORPUS_SHARE:-4} D2K_CORPUS_ONLY=${CORPUS_ONLY:-} D2K_CORPUS_TABLE=$OUT/corpus_gpu.jsonl timeout $(budget ${CORPUS_SECONDS:-300}) python3 -m pytest -q -m gpu tests/adversarial/test_corpus_gpu.py -p no:cacheprovider 2>&1 | tail -25 | tee "$OUT/corpus_gpu.log"
# 3. timing v2 agreement: graph replay (independent) then d2k in span mode, five processes
CASES=""
for t in rmsnorm silu_and_mul softmax_vocab moe_grouped_topk_routing top_k_top_p_sampling; do
  for w in $(python3 -c "import json;[print(json.loads(l)['id']) for l in open('workloads/$t.jsonl') if json.loads(l)['tag']=='bench']"); do CASES="$CASES $t:$w"; done
done
# the kernel launch cost on a near-empty kernel (calibration.json: the table's "span + launch" column)
[[ -n ${SKIP_CALIBRATE:-} ]] || { timeout $(budget 90) python3 -m d2k calibrate > "$OUT/calibrate.txt" 2>&1; \
  cp "$(ls -t "$D2K_WORKDIR"/calibrations/*/calibration.json 2>/dev/null | head -1)" "$OUT/calibration.json" 2>/dev/null; }
# the independent figure: Nsight Compute's kernel durations, caches flushed, clocks left alone
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [[ -z ${SKIP_NCU:-} && -n $NCU ]]; then
  timeout $(budget ${NCU_SECONDS:-120}) "$NCU" --clock-control none --cache-control all --metrics gpu__time_duration.sum \
    --profile-from-start off --target-processes all -f -o /tmp/ncu_calls \
    python3 benchmarks/ncu_calls.py ${NCU_CALLS:-20} $CASES > "$OUT/ncu_calls.log" 2>&1
  grep '^CASES ' "$OUT/ncu_calls.log" | tail -1 | sed 's/^CASES //' > "$OUT/ncu_cases.json"
  "$NCU" -i /tmp/ncu_calls.ncu-rep --csv --page raw --print-units base > "$OUT/ncu.csv" 2>> "$OUT/ncu_calls.log"
fi
[[ -n ${SKIP_REPLAY:-} ]] || timeout $(budget 80) python3 benchmarks/graph_replay_timing.py $CASES > "$OUT/graph_replay.jsonl" 2> "$OUT/graph_replay.err"
for i in $(seq 1 ${SPAN_RUNS:-2}); do  # SPAN_RUNS=0 skips
  D2K_TIMING='{"device_span": true, "flush_mode": "read"}' timeout $(budget ${SPAN_SECONDS:-50}) python3 -m d2k bench \
    --tasks rmsnorm,silu_and_mul,softmax_vocab,moe_grouped_topk_routing,top_k_top_p_sampling --solution expert --force > "$OUT/span_$i.log" 2>&1
done
python3 -m d2k sql "SELECT task_id, workload_id, run_id, median_ms, event_median_ms, span_median_ms, kernel_sum_median_ms, kernels_per_call, status FROM evaluations WHERE backend='cuda' AND span_median_ms IS NOT NULL ORDER BY task_id, workload_id, created_at" --format json > "$OUT/agreement.json"
python3 -c "import duckdb, sys; duckdb.connect(sys.argv[1]).execute('CHECKPOINT')" "$D2K_DB"  # fold the WAL in before copying
cp "$D2K_DB" "$OUT/trusted.duckdb" 2>/dev/null
# logs travel as one archive
python3 benchmarks/timing_agreement_table.py "$OUT" > "$OUT/agreement_table.md" 2>&1
(cd "$OUT" && tar czf logs.tgz --remove-files $(ls *.log *.txt *.err 2>/dev/null | grep -v "^main.log$") 2>/dev/null)  # a caller's main.log is still being written
