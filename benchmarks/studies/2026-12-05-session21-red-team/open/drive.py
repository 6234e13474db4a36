import json, os, sys, tempfile, time
from pathlib import Path
os.environ.setdefault("D2K_WORKDIR", tempfile.mkdtemp(prefix="s21_rowcache_", dir="/tmp"))
from d2k.content import Benchmark
from d2k.solutions import resolve
from d2k.store import Store
from d2k.supervisor import Limits
from d2k.sweep import Plan, run_sweep
task, ids, files = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
bench = Benchmark.load(only=[task])
wl = [w for w in bench.select_workloads(task, "all") if w.id in ids or w.tag in ids]
plans = [Plan(resolve(bench, task, f), wl) for f in files]
store = Store(Path(os.environ["D2K_WORKDIR"]) / "r.duckdb")
res = run_sweep(bench, store, plans, "interpreter", "rowcache", {}, limits=Limits(per_workload_s=600))
for r in res.records:
    name = next(Path(p.solution.path).stem for p in plans if p.solution.solution_id == r["solution_id"])
    print(json.dumps({"solution": name, "workload": r["workload_id"], "status": r["status"],
                      "median_us": r.get("median_ms") and round(r["median_ms"] * 1e3, 1),
                      "samples_us": [round(x * 1e3, 1) for x in (r.get("samples_ms") or [])],
                      "reason": (r.get("reason") or "")[:200]}))
