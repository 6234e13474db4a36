#!/usr/bin/env bash
# The foundation issue's GPU measurements, in one device call. Needs the wheels of
# benchmarks/gpu_env.sh in .whl/ (the GPU image lacks some). Writes the store and logs under $OUT.
set -uo pipefail
source benchmarks/gpu_env.sh
TASKS=${TASKS:-rmsnorm,bf16_gemm,flash_attention_prefill}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
python3 -m d2k validate
python3 -m d2k calibrate
start=$(date +%s)
python3 -m d2k bench --tasks "$TASKS" --per-workload 2>&1 | tee "$OUT/bench.log"
echo "sweep wall time: $(( $(date +%s) - start )) s" | tee -a "$OUT/bench.log"
if [ "${DOBENCH:-1}" = 1 ]; then
  python3 benchmarks/do_bench_compare.py --tasks "$TASKS" > "$OUT/do_bench.jsonl"
fi
for i in $(seq 2 "${REPEATS:-1}"); do
  start=$(date +%s)
  python3 -m d2k bench --tasks "$TASKS" --solution expert --force 2>&1 | tail -3
  echo "repeat $i wall time: $(( $(date +%s) - start )) s"
done
tar czf "$OUT/runs.tgz" -C /tmp/d2kwork . 2>/dev/null
[ "${GPUTESTS:-1}" = 1 ] && python3 -m pytest -q -m gpu tests/execution/test_gpu.py -p no:cacheprovider 2>&1 | tail -15 | tee "$OUT/gpu_tests.log"
