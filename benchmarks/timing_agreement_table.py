"""The timing-v2 agreement table from one trusted_h200.sh call.

    python3 benchmarks/timing_agreement_table.py OUT_DIR

Reads OUT_DIR/agreement.json (d2k's evaluations in device-span mode: five processes per workload)
and OUT_DIR/graph_replay.jsonl (the independent CUDA-graph-replay figure) and prints, per workload,
the graph-replay time, the medians over the five processes of d2k's device span and event window,
their deviation from the graph replay, and the coefficient of variation of each over the processes.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.mean(values) * 100 if len(values) > 1 else float("nan")


def main(out: str) -> int:
    out_dir = Path(out)
    rows = json.loads((out_dir / "agreement.json").read_text())
    graph = {}
    for line in (out_dir / "graph_replay.jsonl").read_text().splitlines():
        r = json.loads(line)
        graph[(r["task"], r["workload"])] = r.get("per_call_ms") if "error" not in r else r["error"]
    runs = defaultdict(lambda: {"span": [], "event": [], "kernels": []})
    for r in rows:
        if r["status"] != "passed" or r["span_median_ms"] is None:
            continue
        key = (r["task_id"], r["workload_id"])
        runs[key]["span"].append(r["span_median_ms"] * 1e3)
        runs[key]["event"].append(r["event_median_ms"] * 1e3)
        runs[key]["kernels"].append(r["kernels_per_call"])
    print("| task | workload | graph replay µs | span µs (median of runs) | span vs graph | event µs | event vs graph "
          "| span CV % | event CV % | runs | kernels/call |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(runs):
        r = runs[key]
        g = graph.get(key)
        span, event = statistics.median(r["span"]), statistics.median(r["event"])
        if isinstance(g, (int, float)):
            g_us = g * 1e3
            gs, d_span, d_event = f"{g_us:.2f}", f"{(span / g_us - 1) * 100:+.1f} %", f"{(event / g_us - 1) * 100:+.1f} %"
        else:
            gs, d_span, d_event = f"— ({str(g)[:40]})" if g else "—", "—", "—"
        print(f"| {key[0]} | {key[1]} | {gs} | {span:.2f} | {d_span} | {event:.2f} | {d_event} | {cv(r['span']):.2f} "
              f"| {cv(r['event']):.2f} | {len(r['span'])} | {statistics.median(r['kernels']):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
