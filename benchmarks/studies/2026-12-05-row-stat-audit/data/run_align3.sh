#!/bin/sh
# run 3: the two multi-chunk bench workloads, 12 timed calls, each mode; from the repo root
S=benchmarks/studies/2026-12-05-row-stat-audit; D=benchmarks/studies/2026-12-05-session21-red-team/open/drive.py; A=$S/attack
W=moe_align_block_size_dsv3_t4096_k8_e256_bs64,moe_align_block_size_mixtral_t16384_k2_e8_bs128
uptime > $S/data/align_run3.load
D2K_TIMING='{"interpreter_reps": 12, "interpreter_budget_s": 60}' .venv/bin/python $D moe_align_block_size $W $A/honest_twin_align.py $A/histogram_cache_align.py > $S/data/align_perturb_run3.jsonl 2>&1
uptime >> $S/data/align_run3.load
D2K_TIMING='{"interpreter_reps": 12, "interpreter_budget_s": 60, "fresh_inputs": true}' .venv/bin/python $D moe_align_block_size $W $A/honest_twin_align.py $A/histogram_cache_align.py > $S/data/align_fresh_run3.jsonl 2>&1
uptime >> $S/data/align_run3.load
