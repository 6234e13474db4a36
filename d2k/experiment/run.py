"""``d2k experiment run``: create the attempts of a spec, run the unfinished ones, store each outcome.

Attempts are rows in the store from the start (``pending``); an attempt is ``running`` while an
executor has it and ``finished`` (or ``failed``) once its outcome is stored. A re-run keeps
finished and failed attempts and restarts the rest from a clean workspace, so an interrupted
experiment resumes with nothing lost and nothing run twice. After each attempt the submission's
evaluations are stored and it is judged (static; the LLM judge too where one is configured), and
DESIGN.md is graded by the proposal judge where one is configured.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

from d2k.content import Benchmark
from d2k.errors import D2KError
from d2k.experiment.spec import ExperimentSpec
from d2k.solutions import Solution
from d2k.store import Store

DONE = ("finished", "failed")


def _ts(value):
    if value is None:
        return None
    return dt.datetime.fromtimestamp(value, tz=dt.UTC).replace(tzinfo=None)


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
    store.con.execute("INSERT INTO blobs VALUES (?,?,?) ON CONFLICT (blob_id) DO NOTHING", [blob_id, str(path), len(data)])
    return blob_id


def register(store: Store, spec: ExperimentSpec, spec_path: Path) -> list[dict]:
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    store.con.execute("INSERT INTO experiments VALUES (?,?,?,?,?) ON CONFLICT (experiment_id) DO UPDATE SET spec = excluded.spec",
                      [spec.experiment_id, spec.name, spec.model_dump_json(), str(spec_path), now])
    attempts = spec.attempts()
    models = {m.name: m.model for m in spec.models}
    for a in attempts:
        store.con.execute(
            "INSERT INTO attempts (attempt_id, experiment_id, model, model_id, task_id, condition, seed, status) "
            "VALUES (?,?,?,?,?,?,?, 'pending') ON CONFLICT (attempt_id) DO NOTHING",
            [a["attempt_id"], spec.experiment_id, a["model"], models[a["model"]], a["task_id"], a["condition"], a["seed"]])
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
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    attempt_id = outcome["attempt_id"]
    if outcome.get("error"):
        store.con.execute("UPDATE attempts SET status = 'failed', detail = ?, finished_at = ? WHERE attempt_id = ?",
                          [outcome["error"], now, attempt_id])
        return "failed"
    store.con.execute("DELETE FROM turns WHERE attempt_id = ?", [attempt_id])
    rows = []
    for t in outcome["turns"]:
        rows.append([attempt_id, t["index"], put_blob(store, work_dir, t["role_content"]), json.dumps(t["tool_calls"]),
                     put_blob(store, work_dir, json.dumps(t["tool_results"])), t["prompt_tokens"], t["completion_tokens"],
                     t["latency_s"], t["harness_s"], t["note"]])
    if rows:
        store.con.executemany("INSERT INTO turns VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
    submission = None
    for key in ("submission", "reference_solution"):
        sub = outcome.get(key)
        if sub:
            kind = "reference" if key == "reference_solution" else "file"
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
        from d2k.judge.run import judge_proposal_text, store_proposal

        result = judge_proposal_text(bench, outcome["task_id"], outcome["design"], judge_context, store)
        store_proposal(store, result, f"{spec.name}/{attempt_id}/DESIGN.md", outcome["workspace"], outcome["design"])
        proposal_id = result.proposal_id
    if submission:
        from d2k.judge.run import judge_solution, store_judgement

        store_judgement(store, judge_solution(bench, submission, "static"))
        if judge_context is not None:
            store_judgement(store, judge_solution(bench, submission, "hybrid", judge_context, store))
    prompt_tokens = sum(t["prompt_tokens"] or 0 for t in outcome["turns"])
    completion_tokens = sum(t["completion_tokens"] or 0 for t in outcome["turns"])
    harness = sum(t["harness_s"] or 0 for t in outcome["turns"])
    store.con.execute(
        """UPDATE attempts SET status = 'finished', detail = ?, agent_status = ?, submission_id = ?,
               submission_choice = ?, proposal_id = ?, workspace = ?, turns = ?, prompt_tokens = ?,
               completion_tokens = ?, harness_s = ?, started_at = ?, finished_at = ?, worker = ?
           WHERE attempt_id = ?""",
        [outcome.get("detail"), outcome["agent_status"], submission_id, outcome["choice"], proposal_id,
         outcome["workspace"], len(outcome["turns"]), prompt_tokens, completion_tokens, harness,
         _ts(outcome.get("started_at")), _ts(outcome.get("finished_at")),
         "cpu" if outcome.get("gpu") is None else f"gpu{outcome['gpu']}", attempt_id])
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
    store.con.execute("UPDATE attempts SET status = 'pending' WHERE experiment_id = ? AND status NOT IN ('finished', 'failed')",
                      [spec.experiment_id])
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
    for a in todo:
        store.con.execute("UPDATE attempts SET status = 'running' WHERE attempt_id = ?", [a["attempt_id"]])
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
