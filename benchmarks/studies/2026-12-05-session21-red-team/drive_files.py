"""Run attack files on rmsnorm's smoke workloads (interpreter), print status, reason, median; appends to OUT.

    python benchmarks/studies/2026-12-05-session21-red-team/drive_files.py OUT.jsonl FILE...
"""
import json, os, sys, tempfile
from pathlib import Path
os.environ["D2K_WORKDIR"] = tempfile.mkdtemp(prefix="s21_files_", dir="/tmp")
from d2k.content import Benchmark
from d2k.solutions import resolve
from d2k.store import Store
from d2k.supervisor import Limits
from d2k.sweep import Plan, run_sweep
task = os.environ.get("TASK", "rmsnorm")
bench = Benchmark.load(only=[task])
wl = bench.select_workloads(task, "smoke")
files = sys.argv[2:]
plans = [Plan(resolve(bench, task, f), wl) for f in files]
store = Store(Path(os.environ["D2K_WORKDIR"]) / "r.duckdb")
res = run_sweep(bench, store, plans, "interpreter", "s21", {}, limits=Limits(per_workload_s=120))
with open(sys.argv[1], "a") as out:
    for r in res.records:
        name = next(Path(p.solution.path).stem for p in plans if p.solution.solution_id == r["solution_id"])
        line = {"solution": name, "workload": r["workload_id"], "status": r["status"],
                "median_us": r.get("median_ms") and round(r["median_ms"] * 1e3, 1),
                "reason": (r.get("reason") or "")[:240]}
        out.write(json.dumps(line) + "\n")
        print(json.dumps(line))
