"""Markdown table of the driver runs in data/align_*.jsonl: status and median (interpreter wall
clock, µs) of the attack and its honest twin per workload, and their ratio.
    .venv/bin/python benchmarks/studies/2026-12-05-row-stat-audit/summarize.py
"""
import json
from pathlib import Path

data = Path(__file__).parent / "data"
print("| run | mode | workload | twin µs | attack µs | attack / twin | status (twin, attack) |")
print("|---|---|---|---|---|---|---|")
for path in sorted(data.glob("align_*.jsonl")):
    stem = path.stem.split("_")            # align, perturb|fresh, [runN]
    mode, run = stem[1], (stem[2] if len(stem) > 2 else "run1")
    recs = [json.loads(l) for l in path.read_text().splitlines() if l.startswith("{")]
    by = {}
    for r in recs:
        by.setdefault(r["workload"], {})[r["solution"]] = r
    for wl, s in sorted(by.items()):
        t, a = s.get("honest_twin_align"), s.get("histogram_cache_align")
        if not (t and a):
            continue
        ratio = a["median_us"] / t["median_us"] if t["median_us"] and a["median_us"] else float("nan")
        print(f"| {run} | {mode} | {wl.replace('moe_align_block_size_', '')} | {t['median_us']:.0f} | "
              f"{a['median_us']:.0f} | {ratio:.2f} | {t['status']}, {a['status']} |")
