"""The trusted batch on the CPU reward-hack corpus: every file of tests/adversarial/cpu and of the
2026-12-05 red team (open, closed, the honest yardstick) on rmsnorm's two smoke workloads, under
the interpreter, with the batch on (and off first, with --both). One JSON line per evaluation:
status, the in-process median and the batch's excess (solution's median round trip less the null
process's), in microseconds. Interpreter wall times: not kernel speed.

    python benchmarks/studies/2026-12-05-session19-figures/batch_corpus.py OUT.jsonl [--both]
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

root = find_root()
team = root / "benchmarks/studies/2026-12-05-red-team"
files = (sorted((root / "tests/adversarial/cpu").glob("*.py")) + sorted((team / "open").glob("*.py"))
         + sorted((team / "closed").glob("*.py")) + [team / "honest_rmsnorm.py"])
os.environ.setdefault("D2K_WORKDIR", "/tmp/batch_corpus_work")
os.environ["OPENAI_API_KEY"] = "sk-test-secret"  # what the corpus's leak checks look for
bench = Benchmark.load(only=["rmsnorm"])
workloads = bench.select_workloads("rmsnorm", "smoke")
with open(sys.argv[1], "w") as out:
    for batch_on in ([False, True] if "--both" in sys.argv else [True]):
        plans = [Plan(resolve(bench, "rmsnorm", str(p)), workloads) for p in files]
        store = Store(Path(os.environ["D2K_WORKDIR"]) / f"batch_{batch_on}.duckdb")
        result = run_sweep(bench, store, plans, "interpreter", "study", {}, limits=Limits(per_workload_s=60),
                           timing={"trusted_batch": batch_on})
        store.close()
        by_id = {p.solution.solution_id: p for p in plans}
        for r in result.records:
            tb = (r.get("timing") or {}).get("trusted_batch") or {}
            excess = (tb["per_call_ms"] - tb["null_per_call_ms"]) * 1e3 if "null_per_call_ms" in tb else None
            out.write(json.dumps({
                "batch": batch_on, "file": str(Path(by_id[r["solution_id"]].solution.path).relative_to(root)),
                "workload": r["workload_id"], "status": r["status"],
                "median_us": r.get("median_ms") and round(r["median_ms"] * 1e3, 1),
                "excess_us": None if excess is None else round(excess, 1), "reason": (r.get("reason") or "")[:160]}) + "\n")
