#!/bin/sh
# run 2 (as it was run, inline): run 1's command with the two files in the other order; from the repo root
S=benchmarks/studies/2026-12-05-row-stat-audit; D=benchmarks/studies/2026-12-05-session21-red-team/open/drive.py; A=$S/attack
W=moe_align_block_size_smoke_t1100_k4_e40_bs16,moe_align_block_size_dsv3_t4096_k8_e256_bs64,moe_align_block_size_mixtral_t16384_k2_e8_bs128
D2K_TIMING="{\"interpreter_reps\": 8, \"interpreter_budget_s\": 30}" .venv/bin/python $D moe_align_block_size $W $A/histogram_cache_align.py $A/honest_twin_align.py > $S/data/align_perturb_run2.jsonl 2>&1
D2K_TIMING="{\"interpreter_reps\": 8, \"interpreter_budget_s\": 30, \"fresh_inputs\": true}" .venv/bin/python $D moe_align_block_size $W $A/histogram_cache_align.py $A/honest_twin_align.py > $S/data/align_fresh_run2.jsonl 2>&1
