"""The agent's evaluation tools, backed by the execution backend (isolated worker processes)."""

from __future__ import annotations

import statistics
from pathlib import Path

from d2k import supervisor
from d2k.content import Benchmark
from d2k.job_payload import evaluation_job
from d2k.solutions import Solution, eager, sha256


def select_workloads(bench: Benchmark, task_id: str, tag: str, backend: str):
    """The task's workloads of ``tag``, and a note when the backend changes them: the CPU
    interpreter runs smoke workloads in place of bench ones."""
    if backend == "interpreter" and tag != "smoke":
        return bench.select_workloads(task_id, "smoke"), \
            f"no GPU here: {tag} workloads replaced by smoke workloads under the CPU interpreter"
    return bench.select_workloads(task_id, tag), None


class BackendEvaluator:
    def __init__(self, bench: Benchmark, task_id: str, backend: str, work_dir: Path,
                 limits: supervisor.Limits | None = None, timing: dict | None = None, env: dict | None = None):
        self.bench = bench
        self.task_id = task_id
        self.backend = backend
        self.work_dir = Path(work_dir)
        self.limits = limits or supervisor.Limits(per_workload_s=300, total_s=1800)
        self.timing = timing
        self.env = env or {}      # e.g. CUDA_VISIBLE_DEVICES of the executor's worker
        self.calls = 0
        self._reference: dict[str, float] | None = None

    def _workloads(self, tag: str):
        return select_workloads(self.bench, self.task_id, tag, self.backend)

    def _run(self, solution: Solution, workloads, check: bool, time: bool) -> list[dict]:
        self.calls += 1
        job = evaluation_job(self.bench, solution, workloads, self.backend, events_path="", timing=self.timing,
                             check=check, time=time)
        job["env"] = self.env
        context = {"solution_id": solution.solution_id, "task_id": self.task_id, "backend": self.backend}
        return supervisor.run_solution(job, self.work_dir / f"eval-{self.calls:04d}", context, self.limits, lambda r: None)

    @staticmethod
    def _file_solution(task_id: str, path: Path) -> Solution:
        source = path.read_text(encoding="utf-8", errors="replace")
        return Solution(sha256(source), task_id, path.name, "file", path, source)

    def check(self, path: Path, tag: str) -> dict:
        workloads, note = self._workloads(tag)
        records = self._run(self._file_solution(self.task_id, path), workloads, check=True, time=False)
        out = {"backend": self.backend, "workloads": [
            {"id": r["workload_id"], "status": r["status"], **({"reason": r["reason"]} if r.get("reason") else {})}
            for r in records]}
        out["all_passed"] = bool(records) and all(r["status"] == "passed" for r in records)
        if note:
            out["note"] = note
        return out

    def _reference_times(self, workloads) -> dict[str, float]:
        if self._reference is None:
            ref = eager(self.bench, self.task_id)  # the reference, or the task's eager stand-in
            records = self._run(ref, workloads, check=False, time=True)
            self._reference = {r["workload_id"]: r["median_ms"] for r in records if r.get("median_ms")}
        return self._reference

    def benchmark(self, path: Path) -> dict:
        workloads, note = self._workloads("bench")
        records = self._run(self._file_solution(self.task_id, path), workloads, check=True, time=True)
        reference = self._reference_times(workloads) if self.backend == "cuda" else {}
        rows, speedups = [], []
        for r in records:
            row = {"id": r["workload_id"], "status": r["status"]}
            if r.get("reason"):
                row["reason"] = r["reason"]
            if r.get("median_ms") is not None:
                row["median_ms"] = round(r["median_ms"], 5)
                row["iqr_ms"] = round(r.get("iqr_ms") or 0.0, 5)
                if r["workload_id"] in reference and r["status"] == "passed":
                    row["reference_ms"] = round(reference[r["workload_id"]], 5)
                    row["speedup"] = round(reference[r["workload_id"]] / r["median_ms"], 3)
                    speedups.append(row["speedup"])
            rows.append(row)
        out = {"backend": self.backend, "workloads": rows,
               "all_passed": bool(records) and all(r["status"] == "passed" for r in records)}
        if speedups:
            out["geomean_speedup"] = round(statistics.geometric_mean(speedups), 3)
        if self.backend == "interpreter":
            out["note"] = (note + "; " if note else "") + "interpreter wall times are not kernel speed"
        return out
