"""The trusted batch's pricing against work a solution leaves running (leftover_burner.py), beside
the honest expert and the plain ctypes rebind (no leftover work), under the interpreter on this
machine's CPUs. One JSON line per evaluation: status, in-process median, the batch's two medians.
Interpreter wall times, not kernel speed. Run it once on each protocol's checkout:

    python benchmarks/studies/2026-12-05-session20-interleaved-batch/compare.py OUT.jsonl LABEL [REPEATS]
"""

import json
import os
import sys
from pathlib import Path

from d2k.content import Benchmark, find_root
from d2k.solutions import resolve
from d2k.store import Store
from d2k.supervisor import Limits
from d2k.sweep import Plan, run_sweep

here = Path(__file__).resolve().parent
root = find_root()
files = ["expert", str(here / "leftover_burner.py"),
         str(root / "benchmarks/studies/2026-12-05-red-team/open/ctypes_rebind_t0.py")]
os.environ.setdefault("D2K_WORKDIR", "/tmp/interleave_work")
bench = Benchmark.load(only=["rmsnorm"])
workloads = bench.select_workloads("rmsnorm", "smoke")
repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 1
with open(sys.argv[1], "a") as out:
    for rep in range(repeats):
        plans = [Plan(resolve(bench, "rmsnorm", f), workloads) for f in files]
        store = Store(Path(os.environ["D2K_WORKDIR"]) / f"{sys.argv[2]}_{rep}.duckdb")
        result = run_sweep(bench, store, plans, "interpreter", "study", {}, limits=Limits(per_workload_s=120),
                           timing={"trusted_batch": True})
        store.close()
        names = {p.solution.solution_id: Path(p.solution.path).stem if p.solution.path else "expert" for p in plans}
        for r in result.records:
            tb = (r.get("timing") or {}).get("trusted_batch") or {}
            out.write(json.dumps({
                "protocol": sys.argv[2], "repeat": rep, "solution": names[r["solution_id"]],
                "workload": r["workload_id"], "status": r["status"],
                "median_us": r.get("median_ms") and round(r["median_ms"] * 1e3, 1),
                "batch_us": tb.get("per_call_ms") and round(tb["per_call_ms"] * 1e3, 1),
                "null_us": tb.get("null_per_call_ms") and round(tb["null_per_call_ms"] * 1e3, 1),
                "calls_alone": tb.get("calls_alone"), "reason": (r.get("reason") or "")[:160],
                **{k: tb[k] for k in ("samples_ms", "null_samples_ms", "null_first") if k in tb}}) + "\n")
