#!/usr/bin/env bash
# One device call that runs two of the scripts beside it with their outputs in one archive (a call
# brings back at most 8 files): the reward-hack corpus on the GPU (trusted_h200.sh, its other stages
# skipped) and then content B (content_b_h200.sh) for $TASKS. Budgets: CORPUS_SECONDS, BENCH_SECONDS.
set -uo pipefail
FINAL=$OUT
mkdir -p /tmp/o/t /tmp/o/b
OUT=/tmp/o/t OVERHEAD_IMPLS= SKIP_REPLAY=1 SPAN_RUNS=0 SECONDS_BUDGET=$(( ${CORPUS_SECONDS:-200} + 30 )) \
  bash benchmarks/trusted_h200.sh > /tmp/o/t/main.log 2>&1
OUT=/tmp/o/b D2K_DB=/tmp/content_b.duckdb bash benchmarks/content_b_h200.sh > /tmp/o/b/main.log 2>&1
cp /tmp/o/t/corpus_gpu.jsonl /tmp/o/b/evaluations.json /tmp/o/b/table.txt "$FINAL/" 2>/dev/null
tar czf "$FINAL/all.tgz" -C /tmp/o .
