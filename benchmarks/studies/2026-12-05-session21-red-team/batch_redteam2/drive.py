"""Red-team driver (session 20's trusted batch): evaluate attack files on rmsnorm's smoke workloads
under the CPU interpreter with the trusted batch on, one sweep, fresh D2K_WORKDIR each run.
Appends one JSON line per record to results.jsonl beside this file.

    D2K_WORKERS=1 .venv/bin/python benchmarks/studies/2026-12-05-session20-interleaved-batch/redteam/drive.py LABEL FILE [FILE...]
"""

import json
import os
import sys
import tempfile
import time
from pathlib import Path

here = Path(__file__).resolve().parent
os.environ["D2K_WORKDIR"] = tempfile.mkdtemp(prefix="d2k_redteam_", dir="/tmp")

from d2k.content import Benchmark  # noqa: E402
from d2k.solutions import resolve  # noqa: E402
from d2k.store import Store  # noqa: E402
from d2k.supervisor import Limits  # noqa: E402
from d2k.sweep import Plan, run_sweep  # noqa: E402

label, files = sys.argv[1], sys.argv[2:]
bench = Benchmark.load(only=["rmsnorm"])
workloads = bench.select_workloads("rmsnorm", "smoke")
plans = [Plan(resolve(bench, "rmsnorm", f), workloads) for f in files]
store = Store(Path(os.environ["D2K_WORKDIR"]) / "rt.duckdb")
started = time.time()
result = run_sweep(bench, store, plans, "interpreter", "redteam", {}, limits=Limits(per_workload_s=120),
                   timing={"trusted_batch": True})
store.close()
names = {p.solution.solution_id: Path(p.solution.path).stem if p.solution.path else "expert" for p in plans}
with open(here / "results.jsonl", "a") as out:
    for r in result.records:
        tb = (r.get("timing") or {}).get("trusted_batch") or {}
        line = {
            "label": label, "when": round(started), "solution": names[r["solution_id"]],
            "workload": r["workload_id"], "status": r["status"],
            "median_us": r.get("median_ms") and round(r["median_ms"] * 1e3, 1),
            "batch_us": tb.get("per_call_ms") and round(tb["per_call_ms"] * 1e3, 1),
            "null_us": tb.get("null_per_call_ms") and round(tb["null_per_call_ms"] * 1e3, 1),
            "calls_alone": tb.get("calls_alone"), "warm_calls": tb.get("warm_calls"),
            "null_error": tb.get("null_error"), "reason": (r.get("reason") or "")[:300],
            "flags": r.get("flags"), "samples_ms": tb.get("samples_ms"),
            "null_samples_ms": tb.get("null_samples_ms"), "order": tb.get("order"),
            "output_tail": (r.get("candidate_output_tail") or "")[-300:],
        }
        out.write(json.dumps(line) + "\n")
        print(json.dumps({k: line[k] for k in ("label", "solution", "workload", "status", "median_us", "batch_us",
                                               "null_us", "calls_alone", "null_error", "reason")}))
