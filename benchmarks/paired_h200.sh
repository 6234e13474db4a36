#!/usr/bin/env bash
# The paired-experiment issue's GPU run in one device call: the scripted two-task experiment
# (benchmarks/paired_scripted.py) with the benchmark calls on the GPU. Writes under $OUT.
set -uo pipefail
source benchmarks/gpu_env.sh
start=$(date +%s)
timeout "${PAIRED_SECONDS:-200}" python3 benchmarks/paired_scripted.py --backend cuda --out /tmp/paired 2>&1 | tee "$OUT/paired.log"
echo "paired experiment wall time: $(( $(date +%s) - start )) s" | tee -a "$OUT/paired.log"
cp /tmp/paired/d2k.duckdb "$OUT/paired.duckdb"
