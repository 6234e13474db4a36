"""``d2k experiment run``: create the attempts of a spec, run the unfinished ones, store each outcome.

Attempts are rows in the store from the start (``pending``); an attempt is ``running`` while an
executor has it and ``finished`` (or ``failed``) once its outcome is stored. A re-run keeps
finished and failed attempts and restarts the rest from a clean workspace, so an interrupted
experiment resumes with nothing lost and nothing run twice. After each attempt the submission's
evaluations are stored and it is judged (static; the LLM judge too where one is configured), and
DESIGN.md is graded by the proposal judge where one is configured.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from d2k.content import Benchmark
from d2k.errors import D2KError
from d2k.experiment.spec import ExperimentSpec
from d2k.solutions import Solution
from d2k.store import Store


def put_blob(store: Store, work_dir: Path, text: str | None) -> str | None:
    """Large texts live in files named by their sha256; the store keeps the reference."""
    if text is None:
        return None
    data = text.encode("utf-8", "replace")
    blob_id = hashlib.sha256(data).hexdigest()
    path = work_dir / "blobs" / blob_id[:2] / blob_id
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    store.add_blob(blob_id, str(path), len(data))
    return blob_id


def register(store: Store, spec: ExperimentSpec, spec_path: Path) -> list[dict]:
    store.upsert_experiment(spec.experiment_id, spec.name, spec.model_dump_json(), str(spec_path))
    attempts = spec.attempts()
    models = {m.name: m.model for m in spec.models}
    store.add_attempts(spec.experiment_id, [{**a, "model_id": models[a["model"]]} for a in attempts])
    return attempts


def status_rows(store: Store, experiment_id: str | None = None) -> tuple[list[str], list[tuple]]:
    where = "WHERE a.experiment_id = ?" if experiment_id else ""
    return store.query(
        f"""SELECT e.name AS experiment, a.model, a.task_id, a.condition,
                   count(*) AS attempts,
                   count(*) FILTER (WHERE a.status = 'finished') AS finished,
                   count(*) FILTER (WHERE a.status = 'failed') AS failed,
                   count(*) FILTER (WHERE a.status NOT IN ('finished', 'failed')) AS remaining
            FROM attempts a JOIN experiments e USING (experiment_id) {where}
            GROUP BY ALL ORDER BY ALL""", [experiment_id] if experiment_id else [])


def store_outcome(store: Store, spec: ExperimentSpec, work_dir: Path, outcome: dict, bench: Benchmark,
                  judge_context=None) -> str:
    attempt_id = outcome["attempt_id"]
    if outcome.get("error"):
        store.mark_attempt_failed(attempt_id, outcome["error"])
        return "failed"
    turns = [{"turn": t["index"], "content_blob": put_blob(store, work_dir, t["role_content"]),
              "tool_calls": t["tool_calls"], "tool_results_blob": put_blob(store, work_dir, json.dumps(t["tool_results"])),
              "prompt_tokens": t["prompt_tokens"], "completion_tokens": t["completion_tokens"],
              "latency_s": t["latency_s"], "harness_s": t["harness_s"], "note": t["note"]} for t in outcome["turns"]]
    store.replace_turns(attempt_id, turns)
    submission = None
    for key in ("submission", "reference_solution"):
        sub = outcome.get(key)
        if sub:
            kind = sub.get("kind", "reference") if key == "reference_solution" else "file"
            solution = Solution(sub["solution_id"], outcome["task_id"], sub["label"], kind, Path(sub["path"]), sub["source"])
            store.add_solution(solution)
            if key == "submission":
                submission = solution
    submission_id = submission.solution_id if submission else None
    for record in outcome.get("evaluations", []):
        store.add_evaluation({**record, "run_id": f"experiment:{spec.name}",
                              "env_id": outcome.get("env_id") or record.get("env_id")})
    proposal_id = None
    if outcome.get("design") and judge_context is not None and spec.judge_proposals:
        from d2k.judge.pipeline import judge_proposal_text, store_proposal

        result = judge_proposal_text(bench, outcome["task_id"], outcome["design"], judge_context, store)
        store_proposal(store, result, f"{spec.name}/{attempt_id}/DESIGN.md", outcome["workspace"], outcome["design"])
        proposal_id = result.proposal_id
    if submission:
        from d2k.judge.pipeline import judge_solution, store_judgement

        store_judgement(store, judge_solution(bench, submission, "static"))
        if judge_context is not None:
            store_judgement(store, judge_solution(bench, submission, "hybrid", judge_context, store))
    prompt_tokens = sum(t["prompt_tokens"] or 0 for t in outcome["turns"])
    completion_tokens = sum(t["completion_tokens"] or 0 for t in outcome["turns"])
    harness = sum(t["harness_s"] or 0 for t in outcome["turns"])
    store.finish_attempt(
        attempt_id, detail=outcome.get("detail"), agent_status=outcome["agent_status"], submission_id=submission_id,
        submission_choice=outcome["choice"], proposal_id=proposal_id, workspace=outcome["workspace"],
        turns=len(outcome["turns"]), prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, harness_s=harness,
        started_at=outcome.get("started_at"), finished_at=outcome.get("finished_at"),
        worker="cpu" if outcome.get("gpu") is None else f"gpu{outcome['gpu']}")
    return "finished"


def visible_gpus(backend: str) -> list[int]:
    if backend != "cuda":
        return []
    import torch

    return list(range(torch.cuda.device_count()))


def run_experiment(spec: ExperimentSpec, spec_path: Path, store: Store, bench: Benchmark, work_dir: Path,
                   backend: str, executor: str | None = None, address: str | None = None, progress=None,
                   client=None, judge_context=None) -> dict:
    from d2k.execution.probe import probe_environment
    from d2k.experiment.executors import LocalExecutor, RayExecutor

    unknown = [t for t in spec.tasks if t not in bench.tasks]
    if unknown:
        raise D2KError(f"unknown task(s) in the spec: {', '.join(unknown)}")
    register(store, spec, spec_path)
    env = probe_environment(backend, work_dir)
    store.add_environment(env)
    store.sync_content(bench)
    # interrupted attempts restart from scratch
    store.requeue_unfinished_attempts(spec.experiment_id)
    _, rows = store.query("SELECT attempt_id FROM attempts WHERE experiment_id = ? AND status = 'pending'", [spec.experiment_id])
    todo_ids = {r[0] for r in rows}
    todo = [a for a in spec.attempts() if a["attempt_id"] in todo_ids]
    kind = executor or spec.executor.kind
    gpus = visible_gpus(backend)
    runner_ = RayExecutor(address or spec.executor.address, len(gpus), spec.executor.workers) if kind == "ray" \
        else LocalExecutor(gpus, spec.executor.workers)
    counts = {"finished": 0, "failed": 0, "skipped": len(spec.attempts()) - len(todo)}
    if progress:
        progress.start(len(todo))
    store.mark_attempts_running([a["attempt_id"] for a in todo])
    try:
        for outcome in runner_.run(spec.model_dump(), todo, str(bench.root), str(work_dir), backend, client=client):
            outcome["env_id"] = env["env_id"]
            status = store_outcome(store, spec, work_dir, outcome, bench, judge_context)
            counts[status] += 1
            if progress:
                progress.workload(f"{outcome['model']} · {outcome['task_id']} · {outcome['condition']} · seed {outcome['seed']}")
                progress.advance()
    finally:
        if kind == "ray" and not (address or spec.executor.address):
            runner_.shutdown()
    counts["executor"] = runner_.label
    return counts
