"""The shuffled trusted batch on every task's expert and naive (their first smoke workload), under
the interpreter: the honest yardstick on 25 tasks whose calls were never looked at while the
protocol was designed (rmsnorm, which was, is left out). One JSON line per evaluation: status,
in-process median, the batch's two warm medians and their difference, in µs. Interpreter wall
times, not kernel speed.

    D2K_WORKERS=1 python benchmarks/studies/2026-12-05-session20-interleaved-batch/held_out_tasks.py OUT.jsonl
"""

import json
import os
import sys
from pathlib import Path

from d2k.content import Benchmark
from d2k.solutions import resolve
from d2k.store import Store
from d2k.supervisor import Limits
from d2k.sweep import Plan, run_sweep

os.environ.setdefault("D2K_WORKDIR", "/tmp/held_out_work")
bench = Benchmark.load()
plans, kinds = [], {}
for task_id in sorted(bench.tasks):
    if task_id == "rmsnorm":
        continue
    workloads = bench.select_workloads(task_id, "smoke")[:1]
    for kind in ("expert", "naive"):
        plans.append(Plan(resolve(bench, task_id, kind), workloads))
        kinds[plans[-1].solution.solution_id] = (task_id, kind)
store = Store(Path(os.environ["D2K_WORKDIR"]) / "held_out.duckdb")
result = run_sweep(bench, store, plans, "interpreter", "study", {}, limits=Limits(per_workload_s=300),
                   timing={"trusted_batch": True})
store.close()
with open(sys.argv[1], "w") as out:
    for r in result.records:
        tb = (r.get("timing") or {}).get("trusted_batch") or {}
        task_id, kind = kinds[r["solution_id"]]
        excess = (tb["per_call_ms"] - tb["null_per_call_ms"]) * 1e3 if "null_per_call_ms" in tb else None
        out.write(json.dumps({
            "task": task_id, "solution": kind, "workload": r["workload_id"], "status": r["status"],
            "median_us": r.get("median_ms") and round(r["median_ms"] * 1e3, 1),
            "batch_us": tb.get("per_call_ms") and round(tb["per_call_ms"] * 1e3, 1),
            "null_us": tb.get("null_per_call_ms") and round(tb["null_per_call_ms"] * 1e3, 1),
            "excess_us": None if excess is None else round(excess, 1), "calls": tb.get("calls"),
            "warm_calls": tb.get("warm_calls"), "calls_alone": tb.get("calls_alone"),
            "null_error": tb.get("null_error"), "reason": (r.get("reason") or "")[:200]}) + "\n")
