"""The timing-v2 agreement table from one device call.

    python3 benchmarks/timing_agreement_table.py OUT_DIR

Reads OUT_DIR/agreement.json (d2k's evaluations in device-span mode, one row per process and
workload) and whichever independent figures the call produced:
  - OUT_DIR/ncu.csv (or .csv.gz) and OUT_DIR/ncu_cases.json: Nsight Compute's `gpu__time_duration` of every
    kernel of N calls per workload, caches flushed before each (benchmarks/ncu_calls.py);
  - OUT_DIR/graph_replay.jsonl: a CUDA-graph replay with read flushes (benchmarks/graph_replay_timing.py);
  - OUT_DIR/calibration.json (`d2k calibrate` in the same call): the kernel launch cost measured on a
    near-empty kernel (d2k/execution/calibrate.py), giving the column "span + launch": the span
    plus the launch processing that ncu and graph replays count and CUPTI's timestamps do not.
Prints, per workload, the independent figure, the medians over the processes of d2k's kernel sum,
device span and event window, their deviation from the independent figure, and the coefficient of
variation of each over the processes. The like-for-like comparison with ncu is the kernel sum
(both add up kernel durations); the span adds the gaps between a solution's kernels.
"""

from __future__ import annotations

import csv
import gzip
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

MARKER = "spin_kernel"  # torch.cuda._sleep's kernel: ncu_calls.py launches one before each call


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.mean(values) * 100 if len(values) > 1 else float("nan")


def ncu_per_call(csv_path: Path, cases_path: Path) -> tuple[dict[tuple[str, str], dict], list[float]]:
    """Median kernel-duration sum (µs) and kernel count per call of each case, from ncu's raw CSV,
    and ncu's durations of the marker kernels (near-empty: the floor ncu puts under any kernel)."""
    cases = json.loads(cases_path.read_text())
    text = gzip.decompress(csv_path.read_bytes()).decode() if csv_path.suffix == ".gz" else csv_path.read_text()
    rows = [r for r in csv.DictReader(text.splitlines()) if (r.get("ID") or "").strip().isdigit()]
    rows.sort(key=lambda r: int(r["ID"]))
    calls: list[list[float]] = []
    markers: list[float] = []
    for r in rows:
        us = float(r["gpu__time_duration.sum"].replace(",", "")) / 1e3  # ns (--print-units base), "32,992"
        if MARKER in r["Kernel Name"]:
            calls.append([])
            markers.append(us)
        elif calls:
            calls[-1].append(us)
    expected = sum(c["calls"] for c in cases)
    if len(calls) != expected:
        raise SystemExit(f"ncu.csv holds {len(calls)} marked calls, ncu_cases.json announces {expected}")
    out, at = {}, 0
    for c in cases:
        mine = calls[at:at + c["calls"]]
        at += c["calls"]
        sums = [sum(k) for k in mine]
        out[(c["task"], c["workload"])] = {"sum_us": statistics.median(sums),
                                           "kernels": statistics.median(len(k) for k in mine)}
    return out, markers


def graph_per_call(path: Path) -> dict[tuple[str, str], float | str]:
    graph = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        graph[(r["task"], r["workload"])] = r["per_call_ms"] * 1e3 if "error" not in r else r["error"]
    return graph


def deviation(value: float, ref: float | None) -> str:
    return f"{(value / ref - 1) * 100:+.1f} %" if isinstance(ref, float) else "—"


def main(out: str) -> int:
    out_dir = Path(out)
    rows = json.loads((out_dir / "agreement.json").read_text())
    csv_path = next((p for p in (out_dir / "ncu.csv", out_dir / "ncu.csv.gz") if p.exists()), None)
    ncu, markers = ncu_per_call(csv_path, out_dir / "ncu_cases.json") if csv_path else ({}, [])
    graph = graph_per_call(out_dir / "graph_replay.jsonl") if (out_dir / "graph_replay.jsonl").exists() else {}
    launch = None
    if (out_dir / "calibration.json").exists():
        launch = json.loads((out_dir / "calibration.json").read_text()).get("calibration", {}).get("launch_cost_us")
    runs = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r["status"] != "passed" or r["span_median_ms"] is None:
            continue
        run = runs[(r["task_id"], r["workload_id"])]
        run["span"].append(r["span_median_ms"] * 1e3)
        run["sum"].append(r["kernel_sum_median_ms"] * 1e3)
        run["event"].append(r["event_median_ms"] * 1e3)
        run["kernels"].append(r["kernels_per_call"])
    if markers:
        print(f"(ncu's duration of the marker kernel, a 100-cycle spin: median {statistics.median(markers):.2f} µs "
              f"over {len(markers)})\n")
    if launch is not None:
        print(f"(kernel launch cost from the calibration, on a near-empty kernel: {launch:.2f} µs)\n")
    print("| task | workload | ncu µs (kernels) | d2k kernel sum µs | vs ncu | d2k span µs | vs ncu | span + launch µs "
          "| vs ncu | event µs | graph replay µs | span CV % | event CV % | processes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(runs):
        r = runs[key]
        n = ncu.get(key)
        ref = n["sum_us"] if n else None
        ksum, span, event = (statistics.median(r[k]) for k in ("sum", "span", "event"))
        g = graph.get(key)
        gs = f"{g:.2f}" if isinstance(g, float) else (f"— ({str(g)[:30]})" if g else "—")
        ns = f"{ref:.2f} ({n['kernels']:.0f})" if n else "—"
        with_launch = (f"{span + launch:.2f} | {deviation(span + launch, ref)}" if launch is not None else "— | —")
        print(f"| {key[0]} | {key[1]} | {ns} | {ksum:.2f} | {deviation(ksum, ref)} | {span:.2f} | {deviation(span, ref)} "
              f"| {with_launch} | {event:.2f} | {gs} | {cv(r['span']):.2f} | {cv(r['event']):.2f} | {len(r['span'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
