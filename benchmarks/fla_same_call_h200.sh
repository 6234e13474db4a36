#!/usr/bin/env bash
# Issue 16's comparison in one device call: gdn_chunk_prefill's and gdn_decode's experts against
# fla-core (tasks/<id>/baselines/fla.py), in two processes with two stores, the expert first in the
# first and fla-core first in the second, device span, read flush. Each evaluation stores the clocks
# it ran under (timing.gpu_clocks), since the GDN expert's prefill figures moved 10-61 % between
# calls. SECONDS_TOTAL (default 480) bounds the whole; each process gets half (PROCESSES=1: all),
# prefill two thirds of it.
# Writes $OUT/bench_{1,2}.log, $OUT/evaluations_{1,2}.json, $OUT/fla_{1,2}.duckdb, calibrate.log.
# Needs .whl carried (benchmarks/gpu_env.sh installs d2k's wheels and fla-core, einops).
set -uo pipefail
source benchmarks/gpu_env.sh
export D2K_TIMING='{"device_span": true, "flush_mode": "read"}'
start=$(date +%s)
python3 -m d2k calibrate > "$OUT/calibrate.log" 2>&1
n=${PROCESSES:-2}   # 1: the expert-first process only, where the call has no time for two
half=$(( (${SECONDS_TOTAL:-480} - ($(date +%s) - start)) / n ))
expert="--solution expert"
for i in $(seq 1 "$n"); do
  export D2K_DB=/tmp/fla_$i.duckdb
  prefill_fla="--solution tasks/gdn_chunk_prefill/baselines/fla.py"
  decode_fla="--solution tasks/gdn_decode/baselines/fla.py"
  if [[ $i = 1 ]]; then prefill="$expert $prefill_fla"; decode="$expert $decode_fla"
  else prefill="$prefill_fla $expert"; decode="$decode_fla $expert"; fi
  timeout $(( half * 2 / 3 )) python3 -m d2k bench --tasks gdn_chunk_prefill $prefill --per-workload \
    --timeout 90 >> "$OUT/bench_$i.log" 2>&1
  timeout $(( half / 3 )) python3 -m d2k bench --tasks gdn_decode $decode --per-workload \
    --timeout 60 >> "$OUT/bench_$i.log" 2>&1
  python3 -m d2k sql "SELECT e.task_id, e.workload_id, s.label, e.status, e.median_ms, e.event_median_ms,
    e.timing_method, e.timing->'gpu_clocks' AS clocks, substr(e.reason, 1, 200) AS reason
    FROM evaluations e JOIN solutions s USING (solution_id) ORDER BY 1, 2, 3" --format json > "$OUT/evaluations_$i.json"
  python3 -c "import duckdb, sys; duckdb.connect(sys.argv[1]).execute('CHECKPOINT')" "$D2K_DB"
  cp "$D2K_DB" "$OUT/fla_$i.duckdb"
done
cat "$OUT/evaluations_1.json" | head -c 3000
