"""The table of one sweep_cost_h200.sh call: issue 17's cost target, event mode against span mode.

    python3 benchmarks/sweep_cost_table.py [--exclude TASK ...] OUT_DIR [OUT_DIR ...]

Reads each OUT_DIR/cost.jsonl (one row per task and timing mode: the wall seconds of the expert's
`d2k bench` over the task's bench workloads, and its exit code) and, where present,
OUT_DIR/evaluations_{events,span}.json. Prints per task the wall seconds in each mode, their ratio,
and how many evaluations passed in each; then the totals over the tasks that ran to the end in both
modes (exit code 0 twice). A task with one row (the deadline cut its second run) or a failed run is
listed and left out of the totals. Several OUT_DIRs (calls covering different tasks) add up; where
two hold the same task and mode, the later one counts. ``--exclude TASK`` keeps a task out of the
totals (listed, marked excluded): a pair the study found invalid for a reason the files do not show.
Where the extracts hold each evaluation's phases (check_s, time_s), a second table says where the
complete tasks' evaluation seconds went in each mode.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

MODES = ("events", "span")


def load(out_dirs: list[Path]) -> tuple[dict, dict]:
    """(task -> mode -> cost row) and (task -> mode -> workload -> evaluation row) over the OUT_DIRs."""
    costs: dict = defaultdict(dict)
    # task -> mode -> workload -> row: a store kept across calls lists a workload in each later extract
    evaluations: dict = defaultdict(lambda: defaultdict(dict))
    for out_dir in out_dirs:
        for line in (out_dir / "cost.jsonl").read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                costs[row["task"]][row["mode"]] = row
        for mode in MODES:
            path = out_dir / f"evaluations_{mode}.json"
            if path.exists() and path.read_text().strip():
                for row in json.loads(path.read_text()):
                    evaluations[row["task_id"]][mode][row["workload_id"]] = row
    return costs, evaluations


def main(args: list[str]) -> int:
    excluded = {args[i + 1] for i, a in enumerate(args[:-1]) if a == "--exclude"}
    dirs = [a for i, a in enumerate(args) if a != "--exclude" and (i == 0 or args[i - 1] != "--exclude")]
    if not dirs:
        print(__doc__.strip().splitlines()[2].strip())
        return 2
    missing = [d for d in dirs if not (Path(d) / "cost.jsonl").is_file()]
    if missing:
        print(f"no cost.jsonl in {', '.join(missing)} (a folder that benchmarks/sweep_cost_h200.sh wrote)")
        return 2
    costs, evaluations = load([Path(d) for d in dirs])
    print("| task | events s | span s | span / events | passed (events / span) | note |")
    print("|---|---|---|---|---|---|")
    totals = {m: 0.0 for m in MODES}
    counted = []   # the tasks in the totals
    for task in sorted(costs):
        runs = costs[task]
        passed = "/".join(str(sum(r["status"] == "passed" for r in evaluations[task][m].values())) for m in MODES)
        cells = [f"{runs[m]['wall_s']:.1f}" if m in runs else "—" for m in MODES]
        complete = all(m in runs and runs[m]["rc"] == 0 for m in MODES)
        ok = complete and task not in excluded
        note = ("excluded" if task in excluded else "" if complete else "cut off" if len(runs) < 2
                else "exit " + "/".join(str(runs[m]["rc"]) for m in MODES))
        ratio = f"{runs['span']['wall_s'] / runs['events']['wall_s']:.2f}" if ok else "—"
        if ok:
            counted.append(task)
            for m in MODES:
                totals[m] += runs[m]["wall_s"]
        print(f"| {task} | {cells[0]} | {cells[1]} | {ratio} | {passed} | {note} |")
    if counted:
        left_out = f" ({len(excluded)} excluded)" if excluded else ""
        print(f"\nTasks complete in both modes: {len(counted)}{left_out}. Wall time over them: events {totals['events']:.1f} s, "
              f"span {totals['span']:.1f} s (span / events {totals['span'] / totals['events']:.2f}).")
    else:
        print("\nNo task ran to the end in both modes.")
    print_phases(evaluations, counted)
    return 0


def print_phases(evaluations: dict, tasks: list[str]) -> None:
    """Where the complete tasks' evaluation seconds went, per mode: checks or timing, the timed calls
    and the timing's seconds a call, and how many span-mode evaluations fell back to an unprofiled
    timing. Only extracts that hold the phases (sweep_cost_h200.sh since 9d608b1) have these."""
    rows = []
    for task in tasks:
        for mode in MODES:
            evs = [e for e in evaluations[task][mode].values() if e.get("time_s") is not None]
            if not evs:
                continue
            timed = sum(int(e.get("n_samples") or 0) for e in evs)
            timing_s = sum(float(e["time_s"]) for e in evs)
            per_call = f"{timing_s / timed * 1e3:.1f}" if timed else "—"
            fallbacks = sum(1 for e in evs if e.get("profiler_slowed") is not None or e.get("span_skipped"))
            rows.append(f"| {task} | {mode} | {len(evs)} | {sum(float(e.get('seconds') or 0.0) for e in evs):.1f} "
                        f"| {sum(float(e.get('check_s') or 0.0) for e in evs):.1f} | {timing_s:.1f} | {timed} "
                        f"| {per_call} | {fallbacks} |")
    if not rows:
        return
    print("\nWhere the evaluations' seconds went (complete tasks; evaluations whose extract holds the phases):\n")
    print("| task | mode | evaluations | seconds | checks s | timing s | timed calls | timing ms a call | profiler fallbacks |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
