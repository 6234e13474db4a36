#!/usr/bin/env bash
# The figures the open issues still lack, in device calls of about 560 s; each part returns one
# file (benchmarks/packed.sh), so a part cut short loses only itself:
#   trust.tgz the timing-loop changes of session 17 (offline there) on the GPU first: the reward-hack
#             corpus (new: restart_window, fake_call_range, flush_shadow, and the span-mode run of the
#             span attacks), then rmsnorm's and silu_and_mul's experts in events and span mode, to set
#             against the published figures (the protocol now sends seeds and kept outputs per call);
#   ship.tgz  issue 15: the two experts adopted in session 16 as shipped files through `d2k bench`
#             (span mode) beside their production baselines (cuBLAS `_scaled_mm`, gemlite), after
#             the GPU test of the FP8 Gluon path on ragged M and N (tests/execution/test_fp8_gluon_gpu.py);
#   fla.tgz   issue 16: gdn_chunk_prefill's and gdn_decode's experts and fla-core in one call, twice
#             (two processes, two stores), the clocks recorded beside each evaluation (session 16's
#             part b3 spent its time in the chunked eager stand-in and never reached fla-core);
#   moe.tgz   issue 15: fused_moe_experts' empty cells (the torch-grouped baseline, naive, compiled),
#             baseline first, the expert again beside them;
#   merge.tgz issue 14: the merge_attn_states candidates (benchmarks/studies/2026-12-04-merge-candidates)
#             against the shipped expert and the compiled reference, span mode;
#   c14.tgz   issue 14: torch.compile of paged_decode_gqa's reference (never reached) and of MLA's
#             last three workloads, 240 s per workload;
#   w4b.tgz   issue 15: the W4A16 bandwidth candidates (benchmarks/studies/2026-12-04-w4a16-bandwidth)
#             against the shipped expert, span mode.
#   tb.tgz    issue 17: the trusted batch (d2k/execution/batch.py) on the GPU for the first time,
#             rmsnorm, silu_and_mul and fp8_blockwise_gemm experts in span mode: its per-call excess
#             against the span, before its flag can be trusted there; then restart_window.py (an
#             emptied event window, caught by the probe check today) to see the batch catch it too;
#             then leftover_sleep_gpu.py (session 20: a 1-ms kernel left on a side stream after each
#             call), whose excess against the expert's shows whether leftover GPU work slows the
#             pricing calls more than the solution's own (the batch is shuffled since session 20);
#   recheck.tgz session 23's changes on the GPU: the corpus files it changed (and helper_process_race),
#             the span attacks in span mode (cut off in session 23), and compiled paged_decode_gqa,
#             whose first workload the other-processes reader flagged before the settle wait, and the
#             three tasks that now draw fresh inputs per timed call (expert and eager; compare with
#             RESULTS.md's H200 rows only as orders of magnitude on an H100);
#   cmla.tgz  issue 14: compiled mla_decode, 240 s per workload (three of four never reached);
#   gdnc.tgz  issue 16: the gdn_chunk_prefill candidates (benchmarks/studies/2026-12-05-gdn-prefill-candidates:
#             the WY kernel split so its solve runs on 2 warps, a 16-wide state walk) against the
#             shipped expert, fla-core last in the same call;
#   gdnprof.tgz issue 16: Nsight Compute on one call of the 1x32768 prefill for the expert, the
#             `wy_split_w2` candidate and fla-core (benchmarks/profile_h200.sh): which kernel the
#             1.73x goes to, read from code so far (the fused WY kernel);
#   cmerge.tgz issue 14: compiled merge_attn_states (failed at import on 2026-12-05: the refused
#             sys.addaudithook, since fixed).
#   fresh.tgz fresh-input tasks' expert and eager (FRESH_TASKS; default the two that opted in late in
#             session 24 and top_k_top_p_sampling, which its run did not reach);
#   cmoe.tgz  issue 15: compiled fused_moe_experts alone, 420 s per workload (the moe part never
#             reached it; since session 26 it compiles with dynamic shapes, task.toml
#             performance.compile_dynamic: one compile of the 128-expert loop, not one per routing).
#   gdnsf.tgz gdn_chunk_prefill with its chunk table built on the device (benchmarks/studies/
#             2026-12-05-gdn-syncfree): the expert's call reads cu_seqlens on the host, and session 25
#             found 0.5-0.8 ms of host gaps in the 1x32768 spans; fla-core last;
#   roof.tgz  issue 15: how much of the calibrated copy bandwidth any kernel reaches on the W4A16
#             workloads' bytes (benchmarks/read_roof.py: a Triton read of every byte over five grid
#             shapes, torch's sum, torch's copy of the same bytes; span mode, read flush): the roof
#             under the 0.7-of-copy target;
#   w4loads.tgz issue 15: the W4A16 M = 1 GEMV with its activation and scale loads fixed, and with a
#             cheaper decode (benchmarks/studies/2026-12-05-w4a16-loads), beside the expert;
#   gdntinv.tgz gdn_chunk_prefill's triangular inverse on one warp (benchmarks/studies/2026-12-05-gdn-tinv:
#             tf32x3 / tf32 block products, BK 32), two of them also with the device-built chunk table;
#   cost.tgz  issue 17's third target (the full expert sweep no slower than today): each task's expert
#             sweep in the default event mode and in span mode back to back, order alternating,
#             each mode with its own cold Triton cache (benchmarks/sweep_cost_h200.sh);
#   w4fw.tgz  issue 15: the W4A16 M = 1 candidates of benchmarks/studies/2026-12-05-w4a16-fullwave
#             (stream-K over all SMs, a split fitted to the SM count, stream-K with pipelined loads)
#             beside the shipped expert;
# Session 19 (2026-12-05) ran trust, fla, ship, merge and moe on `20e323e` and found two harness
# defects (a timing-loop leak, an audit-hook refusal that failed compiled, fla-core and gemlite),
# fixed offline since: run `trust fla` again first; it checks both fixes (silu i14336 and gdn_decode
# b256 ran out of memory; fla-core failed at import). Then `PARTS="c14 cmerge w4b"`, then
# `PARTS="tb ship"` (ship re-times gemlite).
# (trust takes up to ~380 s: the corpus, 8 at a time, then two short benches; fla gets the rest and
# is run again alone if it is cut short.) Session 20 got no device.
# Session 22 (2026-12-05) got an H100 for 274 s after 12 refused starts: fla ran once (PROCESSES=1;
# fla-core reached one prefill workload of three), see benchmarks/studies/2026-12-05-session22-h100.
# Next: `PARTS="trust c14 cmerge"`, then `PARTS="w4b ship"`, then `PROCESSES=2 PARTS=fla` alone.
# Session 23 (2026-12-05) got an H100 at once: trust, c14, w4b, ship and fla (PROCESSES=2) ran, see
# benchmarks/studies/2026-12-05-session23-h100. Next: `PARTS="recheck gdnc"` (the corpus files changed
# after that run, the span attacks in span mode, compiled paged_decode_gqa under the settle fix, the
# gdn prefill candidates), then `PARTS="gdnprof cmla"`, then `PARTS="tb moe"` (tb now records where
# each side's round trips go: timing.trusted_batch.phases_ms).
# Session 24 (2026-12-05), an H100: recheck, tb and fresh ran; gdnc timed only its expert control
# (evaluations take 17-38 s each), moe reached 10 of 16 evaluations, cmoe 1 of 4; see
# benchmarks/studies/2026-12-05-session24-h100. Next: `PARTS=w4fw` alone (issue 15's one open target),
# then `PARTS="fresh gdnc"` (gdnc gets what fresh leaves, ~380 s), then `PARTS="cmoe gdnprof"`,
# then `PARTS="moe cmla"`.
# Session 25 (2026-12-05), an H100: w4fw, fresh, gdnc, cmoe (1 of 4: the 128-expert compiled
# reference recompiles on every routing and exceeds the 240-s limit) and gdnprof ran; see
# benchmarks/studies/2026-12-05-session25-h100. Next: `PARTS="roof w4loads"` (issue 15's open target),
# then `PARTS=gdnsf` (with fla-core), then `PARTS=gdntinv`, then `PARTS="moe cmla"`.
# Session 26 (2026-12-05) had no device time left (CPU only). Its new parts to run after the four
# above: `PARTS=cmoe` (the dynamic-shape compile; a CPU probe compiled once at T = 512, E = 128),
# and `FRESH_TASKS=cross_entropy_fwd_bwd PARTS=fresh` (a fresh draw now goes from the arena straight
# into the set: session 24's llama3 v128256 n4096 expert evaluation took 23.3 s for 10 timed calls).
# Done and dropped from here: session 15's and 16's parts b1, b2, b3, cells, gdn, w4 and fp8
# (benchmarks/studies/2026-12-04-session15-figures, 2026-12-04-session16-figures).
# Session 27 (2026-12-05, H100): ran `PARTS="roof w4loads"`, `PARTS=gdnsf`, `PARTS=gdntinv`,
# `FRESH_TASKS=cross_entropy_fwd_bwd PARTS="fresh cmoe"` and a fused_moe_experts pass
# (benchmarks/studies/2026-12-05-session27-h100), and adopted two winners into the experts.
# Session 28 (2026-12-05/06) got no machine: 18 calls were refused or failed to start, which spent the
# device time. Session 29 (H100) ran `ADOPT_TASKS=gdn_chunk_prefill PARTS="w4m16 adopt"`, `PARTS=w4ship`
# and `PARTS=decomp` three times (benchmarks/studies/2026-12-06-session29-h100). Session 30 (H100) ran
# `PARTS="decomp cost"` and two more `PARTS=cost` calls (benchmarks/studies/2026-12-06-session30).
# Next, on an H200: `PARTS=w4ship` (~160 s), then `SPAN_PROCESSES=5 PARTS=decomp` (~430 s), then
# `PARTS=moe`; on either card, `PARTS=cost` with COST_TASKS set to the tasks still unpaired. Session 31
# (H100) ran three `PARTS=cost` calls (benchmarks/studies/2026-12-06-session31): 21 of 26 tasks paired.
# One command covers both cards: `H200_PARTS="w4ship decomp" SPAN_PROCESSES=5 PARTS=cost
# COST_TASKS="silu_and_mul softmax_vocab splitkv_decode_long_context top_k_top_p_sampling w4a16_gemm"`.
# Session 32 (H100) ran that command (the five tasks; all 26 now paired), then `SPAN_PROCESSES=5
# PARTS=decomp`, `PARTS=w4ship` and `PARTS=moe` on the H100 (benchmarks/studies/2026-12-06-session32).
# Issues 15 and 17 ended there; what no run has shown yet is an H200 figure of the W4A16 experts
# adopted in sessions 27 and 29: `PARTS=w4ship` on an H200.
# PARTS picks parts (default "trust fla"); each stops at the call's deadline (SECONDS_BUDGET);
# FLA_SECONDS caps fla's share, and trust's corpus gets what is left less the two benches' 150 s.
# Needs .whl carried (benchmarks/gpu_env.sh, fla-core, einops, gemlite). Run it on a snapshot made
# by benchmarks/snapshot.sh (carry `snap` and `.whl`; command `cd snap && ln -sfn ../.whl .whl &&
# ... bash benchmarks/open_figures_h200.sh`): the candidate parts read their pinned base files from
# snap/.bases, since a snapshot has no git history (session 27's review: without it every pinned
# part would print "no candidates" and skip itself).
set -uo pipefail
deadline=$(( $(date +%s) + ${SECONDS_BUDGET:-560} ))
left() { echo $(( deadline - $(date +%s) )); }
P="bash benchmarks/packed.sh"
# candidate sweeps: variants_h200.sh on a folder of candidates (sweep_dir PART DIR [ENV=VALUE ...];
# a later SWEEP_SECONDS overrides the default share), or on a study's edits written out first
# (sweep PART SPEC DIR [ENV=VALUE ...]; fails, and the part is skipped, if they cannot be written)
sweep_dir() {
  local part=$1 dir=$2; shift 2
  $P "$part" env VARIANTS_DIR="$dir" SWEEP_SECONDS=$(( $(left) - 20 )) "$@" bash benchmarks/variants_h200.sh
}
sweep() {
  local part=$1 spec=$2 dir=$3; shift 3
  python3 benchmarks/make_candidates.py "$spec" "$dir" || { echo "$part: no candidates"; return 1; }
  sweep_dir "$part" "$dir" "$@"
}
# H200_PARTS, where set, replaces PARTS when the card is an H200 (the parts that only an H200 figure
# settles; the device often lends an H100 for a call that asks for an H200)
card=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
[[ -n ${H200_PARTS:-} && $card == *H200* ]] && PARTS=$H200_PARTS
echo "card: ${card:-none}; parts: ${PARTS:-trust fla}"
for part in ${PARTS:-trust fla}; do
  (( $(left) > 30 )) || { echo "no time left for $part"; continue; }
  case $part in
    trust) corpus_seconds=$(( $(left) - 150 < 260 ? $(left) - 150 : 260 ))   # the two benches keep their 2 min
          $P trust bash -c 'export D2K_DB=/tmp/trust.duckdb; source benchmarks/gpu_env.sh
          python3 -m pip install -q --no-index --find-links .whl pytest
          D2K_GPU_SHARE=8 D2K_CORPUS_TABLE=$OUT/corpus_gpu.jsonl timeout '"$corpus_seconds"' python3 -m pytest -q -m gpu \
            tests/adversarial/test_corpus_gpu.py -p no:cacheprovider > "$OUT/corpus_gpu.log" 2>&1
          timeout 60 python3 -m d2k bench --tasks rmsnorm,silu_and_mul --solution expert > "$OUT/bench_events.log" 2>&1
          D2K_TIMING={\"device_span\":true} D2K_DB=/tmp/trust_span.duckdb timeout 60 python3 -m d2k bench \
            --tasks rmsnorm,silu_and_mul --solution expert > "$OUT/bench_span.log" 2>&1
          for db in /tmp/trust.duckdb /tmp/trust_span.duckdb; do D2K_DB=$db python3 -m d2k sql \
            "SELECT workload_id, status, median_ms, event_median_ms, span_median_ms, flags FROM v_evaluations ORDER BY 1" \
            --format json > "$OUT/$(basename $db .duckdb).json"; done
          D2K_DB=/tmp/trust_span.duckdb python3 -m d2k sql "SELECT workload_id, timing FROM evaluations ORDER BY 1" \
            --format json > "$OUT/trust_span_timing.json"' ;;
    ship) $P ship bash -c 'export D2K_DB=/tmp/ship.duckdb; source benchmarks/gpu_env.sh
          python3 -m pip install -q --no-index --find-links .whl pytest
          timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider tests/execution/test_fp8_gluon_gpu.py \
            > "$OUT/gluon_ragged_test.txt" 2>&1
          TIMEOUT=90 TASKS=fp8_blockwise_gemm,w4a16_gemm SOLUTIONS="expert baselines" BENCH_SECONDS=150 \
            bash benchmarks/content_b_h200.sh' ;;
    w4ship) # issue 15: the w4a16 expert with the Gluon 2 <= M <= 16 path adopted (session 29): the
          # path's ragged-shape GPU test first, then the expert beside gemlite (the baselines) and
          # the eager reference, span mode; the m16 row is the adopted kernel's first shipped figure
          $P w4ship bash -c 'export D2K_DB=/tmp/w4ship.duckdb; source benchmarks/gpu_env.sh
          python3 -m pip install -q --no-index --find-links .whl pytest
          timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/execution/test_w4a16_m16_gpu.py \
            > "$OUT/gluon_m16_ragged_test.txt" 2>&1
          TIMEOUT=120 TASKS=w4a16_gemm SOLUTIONS="expert baselines reference" \
            BENCH_SECONDS='"$(( $(left) - 175 ))"' bash benchmarks/content_b_h200.sh' ;;
    fla) fla_seconds=$(( $(left) - 15 < ${FLA_SECONDS:-9999} ? $(left) - 15 : ${FLA_SECONDS:-9999} ))
         $P fla env SECONDS_TOTAL=$fla_seconds bash benchmarks/fla_same_call_h200.sh ;;
    moe) moe_seconds=$(( $(left) - 10 < 260 ? $(left) - 10 : 260 ))   # leaves merge and w4b their share
         $P moe bash -c 'export D2K_DB=/tmp/moe.duckdb; TIMEOUT=120 TASKS=fused_moe_experts \
           SOLUTIONS="baselines naive expert compiled" BENCH_SECONDS='"$moe_seconds"' bash benchmarks/content_b_h200.sh' ;;
    fresh) fresh_seconds=$(( $(left) - 10 < 180 ? $(left) - 10 : 180 ))
         # the fresh-input tasks' expert and eager under the bytes budget (worker.FRESH_BYTES_BUDGET):
         # session 24's first try spent 98 s on one 1-GB cross_entropy workload, 200 draws
         $P fresh bash -c 'export D2K_DB=/tmp/fresh.duckdb; source benchmarks/gpu_env.sh
          timeout '"$fresh_seconds"' python3 -m d2k bench --tasks '"${FRESH_TASKS:-moe_grouped_topk_routing,moe_align_block_size,top_k_top_p_sampling}"' \
            --solution expert --solution reference > "$OUT/fresh_inputs.log" 2>&1
          python3 -m d2k sql "SELECT workload_id, solution_id, status, median_ms, timing->>'"'"'fresh_inputs'"'"' AS fresh,
            n_samples AS n, timing->'"'"'phases_s'"'"' AS phases, substr(reason, 1, 200) AS reason FROM evaluations ORDER BY 1" \
            --format json > "$OUT/fresh_inputs.json"' ;;
    cmoe) $P cmoe bash -c 'export D2K_DB=/tmp/cmoe.duckdb; TIMEOUT=420 TASKS=fused_moe_experts SOLUTIONS=compiled \
           BENCH_SECONDS='"$(( $(left) - 10 ))"' bash benchmarks/content_b_h200.sh' ;;
    roof) $P roof bash -c 'source benchmarks/gpu_env.sh
          timeout '"$(( $(left) - 10 < 150 ? $(left) - 10 : 150 ))"' python3 benchmarks/read_roof.py \
            > "$OUT/read_roof.jsonl" 2> "$OUT/read_roof.err"' ;;
    decomp) # issue 17's short-kernel offset term by term (span_decompose.py, ncu with and without cache
          # control, d2k's span): the agreement target is missed on every short kernel
          $P decomp env SECONDS_BUDGET=$(( $(left) - 10 )) bash benchmarks/decompose_h200.sh ;;
    cost) # issue 17's cost target: every task's expert sweep in event mode and in span mode, task by
          # task, same machine (benchmarks/sweep_cost_h200.sh; COST_TASKS narrows and orders it)
          $P cost env SECONDS_BUDGET=$(( $(left) - 10 )) bash benchmarks/sweep_cost_h200.sh ;;
    adopt) # session 27's adopted experts timed whole for the first time: gdn_chunk_prefill's
          # (tinv_w1_x3_syncfree) beside the tf32 form that was timed, fla-core and itself again
          # (the EXTRA pass repeats it: a same-call noise check), and w4a16_gemm's beside gemlite
          # (ADOPT_TASKS=gdn_chunk_prefill leaves w4a16 out where w4m16 times its expert in the call)
          mkdir -p /tmp/adopt/gdn_chunk_prefill
          python3 benchmarks/make_candidates.py benchmarks/studies/2026-12-05-gdn-tinv/candidates.toml /tmp/gdn_ti \
            && cp /tmp/gdn_ti/gdn_chunk_prefill/tinv_w1_tf32_syncfree.py /tmp/adopt/gdn_chunk_prefill/ \
            || { echo "adopt: no candidate"; continue; }
          sweep_dir adopt /tmp/adopt WORKLOAD_TIMEOUT=120 \
            EXTRA="--tasks ${ADOPT_TASKS:-w4a16_gemm,gdn_chunk_prefill} --solution expert --solution baselines" ;;
    w4m16) # issue 15's open target (W4A16 M = 16 at 0.7 of copy): mma.sync from registers in Gluon,
          # never run; the m1/m128 rows run shipped code (the call's noise check)
          sweep w4m16 benchmarks/studies/2026-12-05-w4a16-m16-gluon/candidates.toml /tmp/w4m16 WORKLOAD_TIMEOUT=180 ;;
    w4loads) # issue 15's open target again: the M = 1 GEMV's loads fixed (groupload) and its decode cut
          # to a LOP3 and an FFMA a code (subnormal); the m16/m128 rows run shipped code (noise check)
          sweep w4loads benchmarks/studies/2026-12-05-w4a16-loads/candidates.toml /tmp/w4loads WORKLOAD_TIMEOUT=180 ;;
    w4fw) # issue 15's open target (W4A16 M = 1 at 0.7 of copy): stream-K / fitted-split GEMVs, the
          # autotuner's picks printed; the m16/m128 rows are the shipped paths (the call's noise check)
          sweep w4fw benchmarks/studies/2026-12-05-w4a16-fullwave/candidates.toml /tmp/w4fw \
            TRITON_PRINT_AUTOTUNING=1 WORKLOAD_TIMEOUT=180 ;;
    merge) sweep merge benchmarks/studies/2026-12-04-merge-candidates/candidates.toml /tmp/merge_c WORKLOAD_TIMEOUT=60 \
             SWEEP_SECONDS=$(( $(left) - 20 < 130 ? $(left) - 20 : 130 )) \
             EXTRA="--tasks merge_attn_states --solution compiled --workloads bench" ;;
    w4b) python3 benchmarks/make_candidates.py benchmarks/studies/2026-12-04-w4a16-bandwidth/candidates.toml /tmp/w4b_c \
           || { echo "w4b: no candidates"; continue; }
         # the adoptable ones first (files run in name order): gemv_h2's fp16 dot breaks the task's
         # fp32-accumulation contract and is timed last, only to size what that math would buy
         for f in gemv_h2 gemv_h2_pairs; do mv /tmp/w4b_c/w4a16_gemm/$f.py /tmp/w4b_c/w4a16_gemm/zz_$f.py; done
         sweep_dir w4b /tmp/w4b_c WORKLOAD_TIMEOUT=120 ;;
    c14) c14_seconds=$(( $(left) - 10 ))
         # issue 14's compiled cells: paged_decode_gqa's were never reached (sessions 8-15), MLA's last
         # three did not finish in ~150 s; a 240 s limit per workload, half the time each
         $P c14 bash -c 'export D2K_DB=/tmp/c14.duckdb; TIMEOUT=240 TASKS=paged_decode_gqa,mla_decode \
           SOLUTIONS=compiled TASK_SECONDS='"$(( c14_seconds / 2 ))"' BENCH_SECONDS='"$c14_seconds"' bash benchmarks/content_b_h200.sh' ;;
    tb) $P tb bash -c 'export D2K_DB=/tmp/tb.duckdb; source benchmarks/gpu_env.sh
          D2K_TIMING={\"device_span\":true,\"flush_mode\":\"read\",\"trusted_batch\":true} timeout 150 python3 -m d2k bench \
            --tasks rmsnorm,silu_and_mul,fp8_blockwise_gemm --solution expert > "$OUT/bench.log" 2>&1
          D2K_TIMING={\"device_span\":true,\"flush_mode\":\"read\",\"trusted_batch\":true} timeout 60 python3 -m d2k bench \
            --tasks rmsnorm --solution tests/adversarial/gpu/restart_window.py >> "$OUT/bench.log" 2>&1
          D2K_TIMING={\"device_span\":true,\"flush_mode\":\"read\",\"trusted_batch\":true} timeout 60 python3 -m d2k bench \
            --tasks rmsnorm --solution benchmarks/studies/2026-12-05-session20-interleaved-batch/leftover_sleep_gpu.py \
            >> "$OUT/bench.log" 2>&1
          python3 -m d2k sql "SELECT solution_id, workload_id, status, median_ms, event_median_ms, timing->>'"'"'trusted_batch'"'"' AS batch,
            substr(reason, 1, 200) AS reason FROM evaluations ORDER BY 1" --format json > "$OUT/evaluations.json"' ;;
    recheck) $P recheck bash -c 'export D2K_DB=/tmp/recheck.duckdb; source benchmarks/gpu_env.sh
          python3 -m pip install -q --no-index --find-links .whl pytest
          D2K_CORPUS_ONLY=audit_defer_work,thread_filename_bool_defer,thread_filename_bool_defer_cuda,thread_exec_audit_veto_cuda,helper_process_race \
            D2K_CORPUS_TABLE=$OUT/corpus_gpu.jsonl timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider \
            tests/adversarial/test_corpus_gpu.py -k reward_hack > "$OUT/corpus_gpu.log" 2>&1
          D2K_CORPUS_TABLE=$OUT/span.jsonl timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider \
            tests/adversarial/test_corpus_gpu.py -k span_attack > "$OUT/corpus_span.log" 2>&1
          timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider tests/execution/test_fresh_inputs.py \
            > "$OUT/fresh_inputs_test.txt" 2>&1
          timeout 150 python3 -m d2k bench --tasks paged_decode_gqa --solution compiled > "$OUT/compiled_gqa.log" 2>&1
          D2K_DB=/tmp/fresh.duckdb timeout 150 python3 -m d2k bench --tasks top_k_top_p_sampling,softmax_vocab,cross_entropy_fwd_bwd \
            --solution expert --solution reference > "$OUT/fresh_inputs.log" 2>&1
          D2K_DB=/tmp/fresh.duckdb python3 -m d2k sql "SELECT workload_id, solution_id, status, median_ms, timing->>'"'"'fresh_inputs'"'"' AS fresh,
            n_samples AS n, substr(reason, 1, 200) AS reason FROM evaluations ORDER BY 1" --format json > "$OUT/fresh_inputs.json"
          python3 -m d2k sql "SELECT workload_id, status, median_ms, timing->>'"'"'settle_ms'"'"' AS settle_ms,
            timing->>'"'"'settle_cpu_ms'"'"' AS settle_cpu_ms, timing->>'"'"'other_processes_cpu_ms'"'"' AS other_ms,
            substr(reason, 1, 200) AS reason FROM evaluations ORDER BY 1" --format json > "$OUT/compiled_gqa.json"' ;;
    cmla) $P cmla bash -c 'export D2K_DB=/tmp/cmla.duckdb; TIMEOUT=240 TASKS=mla_decode SOLUTIONS=compiled \
           BENCH_SECONDS='"$(( $(left) - 10 ))"' bash benchmarks/content_b_h200.sh' ;;
    gdnc) sweep gdnc benchmarks/studies/2026-12-05-gdn-prefill-candidates/candidates.toml /tmp/gdn_c WORKLOAD_TIMEOUT=120 \
            EXTRA="--tasks gdn_chunk_prefill --solution tasks/gdn_chunk_prefill/baselines/fla.py" ;;
    gdnsf) sweep gdnsf benchmarks/studies/2026-12-05-gdn-syncfree/candidates.toml /tmp/gdn_sf WORKLOAD_TIMEOUT=120 \
            EXTRA="--tasks gdn_chunk_prefill --solution tasks/gdn_chunk_prefill/baselines/fla.py" ;;
    gdntinv) sweep gdntinv benchmarks/studies/2026-12-05-gdn-tinv/candidates.toml /tmp/gdn_ti WORKLOAD_TIMEOUT=120 ;;
    gdnprof) python3 benchmarks/make_candidates.py benchmarks/studies/2026-12-05-gdn-prefill-candidates/candidates.toml /tmp/gdn_c \
            || { echo "gdnprof: no candidates"; continue; }
          w=gdn_chunk_prefill:gdn_prefill_qk16_v32_d128_k_last_1x32768
          $P gdnprof env PROFILE_SECONDS=$(( $(left) - 60 )) bash benchmarks/profile_h200.sh $w:expert \
            $w:/tmp/gdn_c/gdn_chunk_prefill/wy_split_w2.py $w:tasks/gdn_chunk_prefill/baselines/fla.py ;;
    cmerge) $P cmerge bash -c 'export D2K_DB=/tmp/cmerge.duckdb; TIMEOUT=120 TASKS=merge_attn_states \
           SOLUTIONS=compiled BENCH_SECONDS=150 bash benchmarks/content_b_h200.sh' ;;
    *) echo "unknown part $part" ;;
  esac
  echo "$part done, $(left) s left"
done
ls -la "${OUT:-/tmp/out}"
