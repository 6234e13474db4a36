"""Synthetic inputs for the fault and property tests: a genuine-looking ``results.jsonl`` (no worker
needed), a small content root copied from the checkout, and row counts of a store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb

from d2k.solutions import sha256

ROOT = Path(__file__).resolve().parents[2]  # tests/support/ -> the repository root
SOURCE = "import torch\n\n\ndef run(x, w, eps):\n    return x\n"
TABLES = ("environments", "solutions", "runs", "evaluations", "calibrations", "tasks", "workloads", "design_items")


def results_records(n_evals: int = 6, env_id: str = "env-a", run_id: str = "run-1", tag: str = "") -> list[dict]:
    """An environment, a solution and ``n_evals`` evaluations of one run, as a sweep writes them."""
    env = {"record": "environment", "env_id": env_id, "backend": "interpreter", "torch": "2.13.0", "triton": "3.9.0",
           "gpu_name": None, "time": 1_796_000_000.0}
    solution = {"record": "solution", "solution_id": sha256(SOURCE), "task_id": "rmsnorm", "label": "expert",
                "kind": "file", "path": "/somewhere/expert.py", "source": SOURCE}
    evals = []
    for i in range(n_evals):
        evals.append({"record": "evaluation", "eval_id": f"eval-{tag}{env_id}-{i}", "run_id": run_id,
                      "solution_id": solution["solution_id"], "task_id": "rmsnorm", "env_id": env_id,
                      "backend": "interpreter", "solution": "expert", "workload_id": f"rmsnorm_smoke_{i}",
                      "status": "passed", "reason": None, "median_ms": 1.0 + i, "q1_ms": 0.9, "q3_ms": 1.1,
                      "iqr_ms": 0.2, "mean_ms": 1.0, "std_ms": 0.1, "min_ms": 0.8, "max_ms": 1.2, "n_samples": 3,
                      "timing_method": "interpreter_wall", "samples_ms": [0.9, 1.0, 1.1],
                      "correctness": {"trials": []}, "timing": {"method": "interpreter_wall"},
                      "traceback": None, "seconds": 0.3, "created_at": 1_796_000_100.0 + i})
    return [env, solution, *evals]


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def counts(db: Path) -> dict[str, int]:
    """Rows per table, read without d2k (a read-only DuckDB connection, nothing auto-loaded)."""
    con = duckdb.connect(str(db), read_only=True,
                         config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        con.close()


def small_content(dest: Path, tasks=("rmsnorm",)) -> Path:
    """A content root with only ``tasks`` (the checkout may hold half-written tasks of others)."""
    for task in tasks:
        shutil.copytree(ROOT / "tasks" / task, dest / "tasks" / task, ignore=shutil.ignore_patterns("__pycache__"))
        (dest / "workloads").mkdir(parents=True, exist_ok=True)
        (dest / "design_rubrics").mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "workloads" / f"{task}.jsonl", dest / "workloads")
        shutil.copy(ROOT / "design_rubrics" / f"{task}.toml", dest / "design_rubrics")
    shutil.copytree(ROOT / "analysis", dest / "analysis", ignore=shutil.ignore_patterns("__pycache__"))
    return dest
