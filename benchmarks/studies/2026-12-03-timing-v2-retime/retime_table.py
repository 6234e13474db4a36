"""The re-timed shipped table (issue 17): 2026-12-02's figures beside the device span.

    python3 benchmarks/studies/2026-12-03-timing-v2-retime/retime_table.py

Old: analysis/data/h200/results.jsonl (event window, zeroing flush, in-process worker). New: this
study's data (device span and event window of the same evaluation, read flush, the sandboxed
candidate): retime_call2.json and retime_call3.json for the experts and references of ten tasks and
the references of five, agreement.json (the median over five processes) for the experts of the
five agreement tasks. Prints per workload the old and new expert and reference times and speedups,
then per task the geomean speedup old and new.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def old_figures() -> dict[tuple[str, str, str], float]:
    recs = [json.loads(line) for line in (ROOT / "analysis/data/h200/results.jsonl").read_text().splitlines()]
    label = {r["solution_id"]: r["label"] for r in recs if r["record"] == "solution"}
    return {(r["task_id"], r["workload_id"], label[r["solution_id"]]): r["median_ms"] * 1e3
            for r in recs if r["record"] == "evaluation" and r["status"] == "passed" and r.get("median_ms")}


def new_figures() -> tuple[dict, dict]:
    span, event = {}, {}
    for name in ("retime_call2.json", "retime_call3.json"):
        for r in json.loads((HERE / "data" / name).read_text()):
            if r["status"] == "passed":
                key = (r["task_id"], r["workload_id"], r["label"])
                span[key], event[key] = r["span_median_ms"] * 1e3, r["event_median_ms"] * 1e3
    runs = defaultdict(lambda: ([], []))
    for r in json.loads((HERE / "data" / "agreement.json").read_text()):
        if r["status"] == "passed":
            s, e = runs[(r["task_id"], r["workload_id"], "expert")]
            s.append(r["span_median_ms"] * 1e3)
            e.append(r["event_median_ms"] * 1e3)
    for key, (s, e) in runs.items():
        span[key], event[key] = statistics.median(s), statistics.median(e)
    return span, event


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main() -> int:
    old = old_figures()
    span, event = new_figures()
    workloads = sorted({(t, w) for t, w, lab in span if lab == "expert"})
    print("| task | workload | expert old µs | expert span µs | change | ref old µs | ref span µs | speedup old "
          "| speedup span | speedup event (same run) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    per_task = defaultdict(lambda: ([], [], []))
    for t, w in workloads:
        eo, es, ee = old.get((t, w, "expert")), span[(t, w, "expert")], event[(t, w, "expert")]
        ro, rs, re_ = old.get((t, w, "reference")), span.get((t, w, "reference")), event.get((t, w, "reference"))
        so = ro / eo if eo and ro else None
        ss = rs / es if rs else None
        se = re_ / ee if re_ else None
        if so and ss and se:
            for bucket, v in zip(per_task[t], (so, ss, se)):
                bucket.append(v)
        fmt = lambda v, p=2: f"{v:.{p}f}" if v else "—"  # noqa: E731
        change = f"{(es / eo - 1) * 100:+.1f} %" if eo else "—"
        print(f"| {t} | {w.removeprefix(t + '_')} | {fmt(eo)} | {fmt(es)} | {change} | {fmt(ro)} | {fmt(rs)} "
              f"| {fmt(so)} | {fmt(ss)} | {fmt(se)} |")
    print("\n| task | workloads | geomean speedup old | span | event (same run) |")
    print("|---|---|---|---|---|")
    for t, (so, ss, se) in sorted(per_task.items()):
        print(f"| {t} | {len(so)} | {geomean(so):.2f} | {geomean(ss):.2f} | {geomean(se):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
