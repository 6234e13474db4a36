#!/usr/bin/env bash
# One device call to look inside kernels: for each TASK:WORKLOAD[:SOLUTION] argument,
#   $OUT/flush_cases.jsonl   CudaTimer medians under the write and the read L2 flush
#                            (benchmarks/flush_variants.py),
#   $OUT/ncu.tgz: ncu/<case>.txt  Nsight Compute sections of the one profiled call
#                            (benchmarks/profile_kernels.py; clocks left as they are),
#   $OUT/resource_usage.txt  registers, spills and shared memory of every compiled Triton kernel,
#   $OUT/sass.tgz            their SASS and PTX.
# PROFILE_SECONDS (default 240) bounds the ncu part; ncu fails on gVisor machines (no counters),
# which the .txt files then say.
set -uo pipefail
source benchmarks/gpu_env.sh
export TRITON_CACHE_DIR=$OUT/triton_cache
mkdir -p "$OUT/ncu" "$TRITON_CACHE_DIR"
python3 benchmarks/flush_variants.py "$@" > "$OUT/flush_cases.jsonl" 2> "$OUT/flush_cases.err"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
deadline=$(( $(date +%s) + ${PROFILE_SECONDS:-240} ))
for case in "$@"; do
  left=$(( deadline - $(date +%s) )); (( left > 10 )) || break
  timeout "$left" "$NCU" --clock-control none --profile-from-start off --target-processes all \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
    --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
    python3 benchmarks/profile_kernels.py "$case" > "$OUT/ncu/$(echo "$case" | tr ':/' '__').txt" 2>&1
done
find "$TRITON_CACHE_DIR" -name '*.cubin' | while read -r c; do
  echo "== $c"; cuobjdump --dump-resource-usage "$c" 2>&1 | grep -E 'Function|REG|STACK|SHARED'
done > "$OUT/resource_usage.txt"
find "$TRITON_CACHE_DIR" -name '*.cubin' | while read -r c; do cuobjdump -sass "$c" > "${c%.cubin}.sass" 2>&1; done
(cd "$TRITON_CACHE_DIR" && tar czf "$OUT/sass.tgz" $(find . -name '*.sass' -o -name '*.ptx' -o -name '*.json')) 2>/dev/null
rm -rf "$TRITON_CACHE_DIR"
# the device returns a bounded number of files: the ncu texts travel as one archive
(cd "$OUT" && tar czf ncu.tgz ncu && rm -rf ncu)
