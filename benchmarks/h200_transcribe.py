"""The project's H200 measurements as d2k records: analysis/data/h200/results.jsonl and calibration.json.

    python benchmarks/h200_transcribe.py [--out analysis/data/h200]

The GPU sessions of 2026-12-02 kept their tables in benchmarks/RESULTS.md, not their raw
results.jsonl files. This script transcribes the two tables that describe the shipped solutions
into records `d2k ingest` loads, so a store made on any machine shows the real GPU tables:

- "Foundation (issue 2)": rmsnorm, bf16_gemm, flash_attention_prefill (12 bench workloads; eager
  reference, naive, expert; the expert is the mean of five runs' medians);
- "The table with the shipped experts (after round 5)": the twelve content-A tasks (36 bench
  workloads; eager reference, torch.compile of the reference, naive, expert).

Each record carries the median only (no per-call samples: the tables kept none), the flush mode
the tables were timed with (write), and ``timing.source`` naming the table it came from. Solutions
are the files shipped in tasks/ now (their sha256), which are the code those tables timed: the
experts of the three foundation tasks are unchanged since, and the content-A experts are those of
round 5. A compiled entry shown as "—" is an evaluation that failed (inductor failed on that shape,
as RESULTS.md says; the error text was not kept). The environment is the one RESULTS.md names; the
calibration is the content-A session's (copy 4.299 TB/s, bf16 769 TFLOP/s) with the fp8 and fp32
peaks of the foundation session's calibration on the same machine (1351 and 50.9 TFLOP/s).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from d2k.content import Benchmark  # noqa: E402
from d2k.execution.envinfo import environment_id  # noqa: E402
from d2k.solutions import resolve  # noqa: E402

DATE = "2026-12-02"
ENV = {
    "backend": "cuda", "gpu_name": "NVIDIA H200", "compute_capability": "9.0", "driver": "580.159.04",
    "cuda": "13.0", "torch": "2.11.0+cu130", "triton": "3.6.0", "sm_count": 132, "l2_bytes": 60 * 1024 * 1024,
    "time": f"{DATE}T08:00:00",
    "source": "benchmarks/RESULTS.md (NVIDIA H200, sm 9.0, 132 SMs, 60 MB L2, driver 580.159.04, "
              "torch 2.11.0+cu130, triton 3.6.0, clocks as found)",
}
CALIBRATION = {"copy_bytes_per_s": 4.299e12, "bf16_flops_per_s": 769e12, "fp8_flops_per_s": 1351e12,
               "fp32_flops_per_s": 50.9e12, "time": f"{DATE}T12:00:00",
               "details": {"source": "benchmarks/RESULTS.md: copy and bf16 from the content-A session's d2k calibrate "
                                     "(4.299 TB/s, 769 TFLOP/s); fp8 and fp32 from the foundation session's "
                                     "(1351, 50.9 TFLOP/s), same machine, same day"}}
SESSIONS = {
    "foundation": {"heading": "## Foundation (issue 2)", "time": f"{DATE}T10:00:00",
                   "run_id": f"h200-{DATE}-foundation",
                   "columns": {"reference µs": "reference", "naive µs": "naive", "expert µs": "expert"}},
    "content": {"heading": "### The table with the shipped experts (after round 5)", "time": f"{DATE}T20:00:00",
                "run_id": f"h200-{DATE}-content-a-round5",
                "columns": {"eager µs": "reference", "compiled µs": "compiled", "naive µs": "naive",
                            "expert µs": "expert"}},
}


def table_after(text: str, heading: str) -> list[dict]:
    """The first markdown table after ``heading``, as dicts."""
    start = text.index(heading)
    lines = text[start:].splitlines()
    rows, header = [], None
    for line in lines[1:]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
            elif not set("".join(cells)) <= set("-: "):
                rows.append(dict(zip(header, cells)))
        elif header is not None:
            break
    return rows


def workload_id(bench: Benchmark, row: dict) -> tuple[str, str]:
    if "task" in row:
        task = row["task"]
        return task, f"{task}_{row['workload']}"
    wid = row["workload"]
    for task in bench.tasks:
        if any(w.id == wid for w in bench.workloads.get(task, [])):
            return task, wid
    raise SystemExit(f"unknown workload {wid!r} in RESULTS.md")


def records(results_md: Path) -> list[dict]:
    text = results_md.read_text(encoding="utf-8")
    bench = Benchmark.load(ROOT)
    env = {**ENV, "env_id": environment_id(ENV)}
    out = [{"record": "environment", **env}]
    solutions: dict[tuple[str, str], dict] = {}
    evaluations = []
    for session in SESSIONS.values():
        rows = table_after(text, session["heading"])
        if not rows:
            raise SystemExit(f"no table after {session['heading']!r}")
        for row in rows:
            task, wid = workload_id(bench, row)
            if not any(w.id == wid and w.tag == "bench" for w in bench.workloads.get(task, [])):
                raise SystemExit(f"{wid} is not a bench workload of {task}")
            for column, label in session["columns"].items():
                value = row[column]
                key = (task, label)
                if key not in solutions:
                    sol = resolve(bench, task, label)
                    solutions[key] = {"record": "solution", "solution_id": sol.solution_id, "task_id": task,
                                      "label": label, "kind": sol.kind,
                                      "path": str(sol.path.relative_to(ROOT)), "source": sol.source}
                solution_id = solutions[key]["solution_id"]
                eval_id = hashlib.sha256(f"{session['run_id']}/{solution_id}/{wid}".encode()).hexdigest()[:32]
                timing = {"l2_flush_mode": "write", "source": f"benchmarks/RESULTS.md, {session['heading'].strip('# ')}",
                          "transcribed": True}
                record = {"record": "evaluation", "eval_id": eval_id, "run_id": session["run_id"],
                          "solution_id": solution_id, "task_id": task, "workload_id": wid, "env_id": env["env_id"],
                          "backend": "cuda", "created_at": session["time"], "timing": timing}
                if re.fullmatch(r"[0-9.]+", value):
                    record.update(status="passed", median_ms=float(value) / 1e3, timing_method="cuda_events")
                else:
                    record.update(status="error", reason="torch.compile (inductor) failed on this shape "
                                                         "(benchmarks/RESULTS.md; the error text was not kept)")
                evaluations.append(record)
    out += list(solutions.values()) + evaluations
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=str(ROOT / "analysis" / "data" / "h200"))
    parser.add_argument("--results-md", default=str(HERE / "RESULTS.md"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    recs = records(Path(args.results_md))
    with open(out / "results.jsonl", "w", encoding="utf-8") as fh:
        for r in recs:
            fh.write(json.dumps(r, sort_keys=True) + "\n")
    env = {k: v for k, v in recs[0].items() if k != "record"}
    (out / "calibration.json").write_text(json.dumps({"env": env, "calibration": CALIBRATION}, indent=1, sort_keys=True) + "\n",
                                          encoding="utf-8")
    n = sum(1 for r in recs if r["record"] == "evaluation")
    print(f"{out}/results.jsonl: {n} evaluations of {sum(1 for r in recs if r['record'] == 'solution')} solutions; "
          f"{out}/calibration.json")


if __name__ == "__main__":
    main()
