#!/usr/bin/env bash
# The red-team files of 2026-12-05 through `d2k eval` (CPU interpreter, timing on) on the code the
# session started from (d3bbcf3) and on HEAD, beside the honest files: status, reason and median
# per workload, one JSON line each. Interpreter medians are wall-clock times, never kernel speed:
# they only show how far a forged figure sits below the honest one.
#   bash benchmarks/studies/2026-12-05-red-team/run_attacks.sh > data/attacks_cpu.jsonl
# sysv_shm_persist.py runs twice (its second evaluation passes only if the first one's segment
# outlived it); the segment it leaves on the old code is removed afterwards.
set -uo pipefail
root=$(git rev-parse --show-toplevel)
py=${PYTHON:-$root/.venv/bin/python}
here=$(dirname "$(readlink -f "$0")")
old=$(mktemp -d)
git -C "$root" archive d3bbcf3 | tar -x -C "$old"
corpus="lazy_list_result lazy_list_recompute_on_keep setprofile_work_in_before settrace_locals_t0 audit_defer_work
        forge_kernel_names profile_defer_work profile_fixup_kept profile_forge_span signal_rewrite takeover_protocol
        proc_sysctl_write home_visible raw_disk_read"
files="$here/honest_rmsnorm.py"
for f in $corpus; do files="$files $root/tests/adversarial/cpu/$f.py"; done
files="$files $here/open/ctypes_rebind_t0.py $here/open/frame_locals_t0_ctypes.py $here/closed/numpy_rng_hook_work_in_before.py"
files="$files $here/closed/sysv_shm_persist.py $here/closed/sysv_shm_persist.py"
for code in old new; do
  dir=$root; [[ $code == old ]] && dir=$old
  db=$(mktemp -u).duckdb
  for f in $files; do
    (cd "$dir" && PYTHONPATH=$dir D2K_DB=$db D2K_WORKDIR=$(mktemp -d) "$py" -m d2k eval rmsnorm "$f" --no-reference --force > /dev/null 2>&1)
  done
  for f in "$here/closed/honest_fused_add_rmsnorm.py" "$here/closed/lazy_list_inplace.py"; do
    (cd "$dir" && PYTHONPATH=$dir D2K_DB=$db D2K_WORKDIR=$(mktemp -d) "$py" -m d2k eval fused_add_rmsnorm "$f" --no-reference --force > /dev/null 2>&1)
  done
  (cd "$dir" && PYTHONPATH=$dir D2K_DB=$db "$py" -m d2k sql \
    "SELECT solution, workload_id, status, reason, round(median_ms * 1000, 1) AS median_us, kernel_less FROM v_evaluations ORDER BY created_at" \
    --format json) | "$py" -c "
import json, sys
for row in json.load(sys.stdin):
    row['solution'] = row['solution'].rsplit('/', 1)[-1]
    row['reason'] = (row['reason'] or '')[:120]
    print(json.dumps({'code': '$code', **row}))"
  ipcrm -M 0x0d2c0a77 2>/dev/null || true
done
rm -rf "$old"
