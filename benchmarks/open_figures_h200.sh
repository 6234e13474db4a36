#!/usr/bin/env bash
# The figures the open issues still lack, in one device call of about 560 s; each part returns one
# file (benchmarks/packed.sh), so a part cut short loses only itself:
#   b1.tgz    issue 14: the Gluon path on ragged h = 128 sequences with partial last tiles
#             (tests/execution/test_mla_gluon_gpu.py; the bench workloads hold whole pages only),
#             then through `d2k bench` the adopted mla_decode expert (its figures so far are the
#             candidate file's, same kernels) and compiled MLA, then splitkv_decode_long_context's
#             missing eager, naive and compiled cells;
#   b3.tgz    issue 16: the cells still empty: gdn_chunk_prefill's naive (re-tiled) and compiled,
#             then the eager figures of gdn_decode (b512 was not reached; the task is re-run
#             whole, it is short) and mamba2 (its chunked stand-in, a repeat beside the first);
#   gdn.tgz   issue 16 (not in the default PARTS): GDN prefill's WY-kernel candidates wy_split and
#             wy_diag_solve (benchmarks/studies/2026-12-04-gdn-prefill-candidates) against the shipped
#             expert, timed first as the control (benchmarks/variants_h200.sh);
#   w4.tgz    issue 15 (not in the default PARTS): the W4A16 study's candidates, the same way.
# Three calls: `bash benchmarks/open_figures_h200.sh`, then `PARTS=gdn ...`, then `PARTS=w4 ...` (each
# part of the last two fills its call).
# Done on 2026-12-04 (session 14) and dropped from here: the host-sync check (hs), the shipped
# causal_conv1d through d2k bench (conv), the Nsight Compute profiles (prof), the MLA candidates.
#   cells.tgz issue 14 (not in the default PARTS): compiled MLA and split-KV, each task half the time left.
# PARTS picks parts (default b1 b3, in that order); each stops at the call's deadline (SECONDS_BUDGET).
# Needs .whl carried (benchmarks/gpu_env.sh, fla-core, einops, gemlite).
set -uo pipefail
deadline=$(( $(date +%s) + ${SECONDS_BUDGET:-560} ))
left() { echo $(( deadline - $(date +%s) )); }
P="bash benchmarks/packed.sh"
for part in ${PARTS:-b1 b3}; do
  (( $(left) > 30 )) || { echo "no time left for $part"; continue; }
  case $part in
    b1) b1_seconds=$(( $(left) < 330 ? $(left) - 10 : 320 ))
        $P b1 bash -c 'source benchmarks/gpu_env.sh; python3 -m pip install -q --no-index --find-links .whl pytest
          timeout 120 python3 -m pytest -q -m gpu tests/execution/test_mla_gluon_gpu.py > "$OUT/gluon_tail_test.txt" 2>&1
          export D2K_DB=/tmp/b1.duckdb; TIMEOUT=90 TASKS=mla_decode SOLUTIONS="expert compiled" \
          BENCH_SECONDS='"$(( (b1_seconds - 120) / 2 ))"' bash benchmarks/content_b_h200.sh
          TIMEOUT=90 TASKS=splitkv_decode_long_context SOLUTIONS="reference naive compiled" SKIP_CALIBRATE=1 PASS=2 \
          BENCH_SECONDS='"$(( (b1_seconds - 120) / 2 ))"' bash benchmarks/content_b_h200.sh' ;;
    b3) b3_seconds=$(( $(left) < 300 ? $(left) - 10 : 290 ))
        $P b3 bash -c 'export D2K_DB=/tmp/b3.duckdb; TIMEOUT=90 TASKS=gdn_chunk_prefill SOLUTIONS="naive compiled" \
          BENCH_SECONDS='"$(( b3_seconds / 2 ))"' bash benchmarks/content_b_h200.sh; TIMEOUT=60 TASKS=gdn_decode,mamba2_ssd_chunked \
          SOLUTIONS=reference SKIP_CALIBRATE=1 PASS=2 TASK_SECONDS='"$(( b3_seconds / 4 ))"' BENCH_SECONDS='"$(( b3_seconds / 2 ))"' \
          bash benchmarks/content_b_h200.sh' ;;
    cells) cells_seconds=$(( $(left) - 10 ))
        # issue 14's compiled cells that session 15's b1 did not reach (MLA's, split-KV's last two)
        $P cells bash -c 'export D2K_DB=/tmp/cells.duckdb; TIMEOUT=120 TASKS=mla_decode,splitkv_decode_long_context \
          SOLUTIONS=compiled TASK_SECONDS='"$(( cells_seconds / 2 ))"' BENCH_SECONDS='"$cells_seconds"' bash benchmarks/content_b_h200.sh' ;;
    gdn) python3 benchmarks/make_candidates.py benchmarks/studies/2026-12-04-gdn-prefill-candidates/candidates.toml /tmp/gdn_c || exit 1
         # the WY candidates the profile points at; the state-walk ones and the spill-only ablation wait
         rm -f /tmp/gdn_c/gdn_chunk_prefill/{wide_state_configs,state_tuned_per_length,wy_warps8}.py
         $P gdn env VARIANTS_DIR=/tmp/gdn_c WORKLOAD_TIMEOUT=120 SWEEP_SECONDS=$(( $(left) - 20 )) bash benchmarks/variants_h200.sh ;;
    w4) python3 benchmarks/make_candidates.py benchmarks/studies/2026-12-04-w4a16-candidates/candidates.toml /tmp/w4_c || exit 1
        $P w4 env VARIANTS_DIR=/tmp/w4_c WORKLOAD_TIMEOUT=120 SWEEP_SECONDS=$(( $(left) - 20 )) bash benchmarks/variants_h200.sh ;;
    *) echo "unknown part $part" ;;
  esac
  echo "$part done, $(left) s left"
done
ls -la "${OUT:-/tmp/out}"
