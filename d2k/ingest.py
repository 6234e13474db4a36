"""Load runs and calibrations made elsewhere (``results.jsonl``, ``calibration.json``) into the store."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from d2k.content import Benchmark
from d2k.errors import D2KError
from d2k.solutions import Solution
from d2k.store import Store


def _ingest_calibration(store: Store, path: Path, counts: dict) -> dict:
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
        env, cal = data["env"], data["calibration"]
        env["env_id"]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise D2KError(f"{path}: not a calibration.json of d2k calibrate (expected 'env' and 'calibration')") from None
    store.add_environment(env)
    # the id is the file's hash, so ingesting the same file twice keeps one row
    store.add_calibration(hashlib.sha256(text.encode()).hexdigest()[:32], env, cal)
    counts["environment"] += 1
    counts["calibration"] += 1
    return counts


def ingest(store: Store, bench: Benchmark | None, path: Path) -> dict:
    """Load a run's ``results.jsonl`` or a ``calibration.json`` of ``d2k calibrate`` (e.g. produced
    on a GPU node) into the store."""
    if not path.is_file():
        raise D2KError(f"results file not found: {path}")
    if bench is not None:
        store.sync_content(bench)
    counts = {"environment": 0, "solution": 0, "evaluation": 0, "calibration": 0, "sandbox": 0}
    if path.suffix == ".json":
        return _ingest_calibration(store, path, counts)
    env = None
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise D2KError(f"{path}:{lineno}: not JSON (truncated file?)") from None
        kind = record.pop("record", None)
        if kind == "environment":
            env = record
            store.add_environment(record)
        elif kind == "solution":
            store.add_solution(Solution(record["solution_id"], record["task_id"], record["label"], record["kind"],
                                        Path(record["path"]), record["source"]))
        elif kind == "evaluation":
            store.add_evaluation(record)
        elif kind == "calibration":
            store.add_calibration(record["calibration_id"], record["env"], record)
        elif kind == "sandbox":
            pass  # the sandbox layers a run had: metadata of the run, not a row of its own
        else:
            raise D2KError(f"{path}:{lineno}: unknown record type {kind!r}")
        counts[kind] += 1
    if env is not None and counts["evaluation"]:
        store.con.execute(
            "INSERT INTO runs (run_id, command, args, env_id, backend, started_at, finished_at, status, clocks, results_path) "
            "SELECT DISTINCT run_id, 'ingest', NULL, env_id, backend, min(created_at), max(created_at), "
            "'ingested', NULL, ? FROM evaluations WHERE run_id NOT IN (SELECT run_id FROM runs) GROUP BY run_id, env_id, backend",
            [str(path)],
        )
    return counts
