#!/usr/bin/env bash
# A short device call after the 2026-12-05 fixes (session 19): silu_and_mul's expert on the
# workload that ran out of memory (a harness frame cycle kept two outputs per timed call), then
# gdn_decode's expert beside fla-core (whose import failed on the refused sys.addaudithook), then
# the compiled silu_and_mul (torch.compile imports filelock, which adds an audit hook). Each step
# writes its log as it goes; the store's rows come back at the end of each step.
# Needs .whl carried (benchmarks/gpu_env.sh installs d2k's wheels and fla-core, einops).
set -uo pipefail
source benchmarks/gpu_env.sh
rows() {
  python3 -m d2k sql "SELECT e.task_id, e.workload_id, s.label, e.status, e.median_ms, e.event_median_ms,
    e.span_median_ms, substr(e.reason, 1, 200) AS reason FROM evaluations e JOIN solutions s USING (solution_id)
    ORDER BY 1, 2, 3" --format json > "$OUT/evaluations.json"
}
timeout "${SILU_S:-60}" python3 -m d2k bench --tasks silu_and_mul --solution expert --per-workload --timeout 40 \
  > "$OUT/silu.log" 2>&1; rows
D2K_TIMING='{"device_span": true, "flush_mode": "read"}' timeout "${GDN_S:-90}" python3 -m d2k bench \
  --tasks gdn_decode --solution expert --solution tasks/gdn_decode/baselines/fla.py --per-workload --timeout 40 \
  > "$OUT/gdn.log" 2>&1; rows
timeout "${COMPILED_S:-90}" python3 -m d2k bench --tasks silu_and_mul --solution compiled --per-workload --timeout 80 \
  > "$OUT/compiled.log" 2>&1; rows
