#!/usr/bin/env bash
# Each attack of session 17 through `d2k eval` (CPU interpreter, timing on) on the code before the
# session (18f5103) and on HEAD, beside an honest rmsnorm file: status, reason and median per
# workload, one JSON line each. Interpreter medians are wall-clock times, never kernel speed: they
# are here only to show how far a forged figure sits below the honest one.
#   bash benchmarks/studies/2026-12-04-session17-attacks/run_attacks.sh > data/attacks_cpu.jsonl
set -uo pipefail
root=$(git rev-parse --show-toplevel)
py=${PYTHON:-$root/.venv/bin/python}
old=$(mktemp -d)
git -C "$root" archive 18f5103 | tar -x -C "$old"
here=$(dirname "$(readlink -f "$0")")
files="$here/honest_rmsnorm.py"
for f in patch_json_reply patch_json_encoder thread_rewrite precompute_perturbed fixup_kept patch_guard_clock patch_flush_zero; do
  files="$files $root/tests/adversarial/cpu/$f.py"
done
for code in old new; do
  dir=$root; [[ $code == old ]] && dir=$old
  db=$(mktemp -u).duckdb
  for f in $files; do
    (cd "$dir" && PYTHONPATH=$dir D2K_DB=$db D2K_WORKDIR=$(mktemp -d) "$py" -m d2k eval rmsnorm "$f" --no-reference > /dev/null 2>&1)
  done
  (cd "$dir" && PYTHONPATH=$dir D2K_DB=$db "$py" -m d2k sql \
    "SELECT solution, workload_id, status, reason, round(median_ms * 1000, 1) AS median_us FROM v_evaluations ORDER BY 1, 2" \
    --format json) | "$py" -c "
import json, sys
for row in json.load(sys.stdin):
    row['solution'] = row['solution'].rsplit('/', 1)[-1]
    row['reason'] = (row['reason'] or '')[:120]
    print(json.dumps({'code': '$code', **row}))"
done
rm -rf "$old"
