"""One attempt (model × task × condition × seed), run where an executor puts it.

Pure with respect to the store: it works in its own directory, appends its transcript there as it
goes, and returns an outcome (a plain dict) that the driver stores. The same function runs in a
local worker thread and inside a Ray actor.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict
from pathlib import Path

from d2k import supervisor
from d2k.agent import prompts
from d2k.agent.evaluator import BackendEvaluator, select_workloads
from d2k.agent.loop import ModelConfig, run_agent
from d2k.agent.tools import DESIGN_FILE, Tools
from d2k.agent.workspace import Workspace
from d2k.content import Benchmark
from d2k.job_payload import TIMING_MODES, evaluation_job
from d2k.solutions import Solution, eager, sha256


def attempt_dir(work_dir: Path, experiment: str, attempt_id: str) -> Path:
    return Path(work_dir) / "experiments" / experiment / attempt_id


def run_attempt(spec: dict, attempt: dict, root: str, work_dir: str, backend: str, gpu: int | None = None,
                client=None) -> dict:
    """Run the agent, then evaluate its submission on the spec's workloads; return the outcome."""
    from d2k.experiment.spec import ExperimentSpec

    spec_obj = ExperimentSpec.model_validate(spec)
    bench = Benchmark.load(Path(root), only=[attempt["task_id"]])
    model = next(m for m in spec_obj.models if m.name == attempt["model"])
    base = attempt_dir(Path(work_dir), spec_obj.name, attempt["attempt_id"])
    if base.exists():
        shutil.rmtree(base)  # an unfinished earlier try restarts cleanly
    workspace = Workspace(base / "workspace")
    env = {"CUDA_VISIBLE_DEVICES": str(gpu)} if gpu is not None else {}
    limits = supervisor.Limits(per_workload_s=600, total_s=3600)
    # the spec's timing mode, on a GPU (an "auto" backend that found none times wall clock, as ever)
    timing = TIMING_MODES[spec_obj.timing] if spec_obj.timing and backend == "cuda" else None
    evaluator = BackendEvaluator(bench, attempt["task_id"], backend, base / "tool-evals", limits, timing=timing, env=env)
    tools = Tools(workspace, evaluator)
    config = ModelConfig(name=model.name, model=model.model, api_base=model.api_base, api_key=model.api_key(),
                         temperature=model.temperature, top_p=model.top_p, max_tokens=model.max_tokens,
                         context_window=model.context_window, timeout_s=model.timeout_s,
                         max_retries=model.max_retries)
    transcript = open(base / "transcript.jsonl", "a", encoding="utf-8")

    def on_turn(turn):
        transcript.write(json.dumps(asdict(turn), default=str) + "\n")
        transcript.flush()

    started = time.time()
    guided = attempt["condition"] == "guided"
    try:
        result = run_agent(config, prompts.system_prompt(spec_obj.budget),
                           prompts.task_prompt(bench, attempt["task_id"], guided), tools, spec_obj.budget,
                           on_turn=on_turn, client=client)
    finally:
        transcript.close()
    outcome = {
        **attempt, "agent_status": result.status, "detail": result.detail, "choice": result.choice,
        "turns": [asdict(t) for t in result.turns], "started_at": started, "workspace": str(workspace.root),
        "submission": None, "design": None, "evaluations": [], "gpu": gpu,
    }
    design_path = workspace.root / DESIGN_FILE
    if design_path.is_file():
        outcome["design"] = design_path.read_text(encoding="utf-8", errors="replace")
    if result.submission:
        path = workspace.root / result.submission
        source = path.read_text(encoding="utf-8", errors="replace")
        solution = Solution(sha256(source), attempt["task_id"], f"{spec_obj.name}/{attempt['attempt_id']}/{result.submission}",
                            "file", path, source)
        outcome["submission"] = {"solution_id": solution.solution_id, "path": str(path), "source": source,
                                 "label": solution.label}
        workloads, _ = select_workloads(bench, attempt["task_id"], spec_obj.workloads, backend)
        # the eager figure: the reference, or the baseline a task names in its place (performance.eager_stand_in)
        eager_figure = eager(bench, attempt["task_id"])
        for sol in ([solution, eager_figure] if backend == "cuda" else [solution]):
            job = evaluation_job(bench, sol, workloads, backend, events_path="", timing=timing,
                                 check=sol is solution, time=True)
            job["env"] = env
            context = {"solution_id": sol.solution_id, "task_id": attempt["task_id"], "backend": backend,
                       "solution": sol.label}
            records = supervisor.run_solution(job, base / f"final-{sol.kind}", context, limits, lambda r: None)
            outcome["evaluations"].extend(records)
            if sol is eager_figure:
                outcome["reference_solution"] = {"solution_id": sol.solution_id, "path": str(sol.path),
                                                 "source": sol.source, "label": sol.label, "kind": sol.kind}
    outcome["finished_at"] = time.time()
    return outcome
