"""Load runs and calibrations made elsewhere (``results.jsonl``, ``calibration.json``) into the store.

Ingesting one file is all-or-nothing: every line is read and checked first (JSON object, known
record type, required fields of the right types, references to an environment and a solution the
file or the store holds, solution ids that are the hash of their source), then everything is
inserted in one transaction; any error names ``file:line`` and the field, and leaves the store as it
was. Ingesting is idempotent: a record the store already holds is skipped, and one that would
change a stored evaluation (same id, other values) is refused as an edited or forged file.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
from pathlib import Path

import duckdb

from d2k.content import Benchmark
from d2k.errors import D2KError
from d2k.solutions import COMPILED_PREFIX, Solution, sha256
from d2k.store import Store, _ts

RECORD_TYPES = ("environment", "solution", "evaluation", "calibration", "sandbox")
INT32, INT64 = 2**31 - 1, 2**63 - 1


# -- field kinds: (test, description) ----------------------------------------------------------
def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and (not isinstance(v, int) or abs(v) <= INT64)


def _is_int(limit):
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= limit


def _is_time(v) -> bool:
    if _is_number(v):
        try:
            _ts(v)
        except (OverflowError, ValueError, OSError):
            return False
        return math.isfinite(v)
    if isinstance(v, str):
        try:
            dt.datetime.fromisoformat(v)
        except ValueError:
            return False
        return True
    return False


def _is_numbers(v) -> bool:
    return isinstance(v, list) and all(_is_number(x) for x in v)


STR = (lambda v: isinstance(v, str), "a string")
NUM = (_is_number, "a number")
I32 = (_is_int(INT32), f"an integer from 0 to {INT32}")
I64 = (_is_int(INT64), f"an integer from 0 to {INT64}")
OBJ = (lambda v: isinstance(v, dict), "an object")
NUMS = (_is_numbers, "a list of numbers")
TIME = (_is_time, "a time (seconds since 1970, or ISO 8601 text)")
STR_OR_NUM = (lambda v: isinstance(v, str) or _is_number(v), "a string or a number")
BOOL = (lambda v: isinstance(v, bool), "true or false")
ANY = (lambda v: True, "any JSON value")

# field -> (kind, required); other fields are kept in the environment's info, or ignored
SCHEMAS: dict[str, dict[str, tuple]] = {
    "environment": {
        "env_id": (STR, True), "backend": (STR, False), "gpu_name": (STR, False),
        "compute_capability": (STR_OR_NUM, False), "driver": (STR_OR_NUM, False), "cuda": (STR_OR_NUM, False),
        "torch": (STR, False), "triton": (STR, False), "sm_count": (I32, False), "l2_bytes": (I64, False),
        "time": (TIME, False),
    },
    "solution": {
        "solution_id": (STR, True), "task_id": (STR, True), "label": (STR, True), "kind": (STR, True),
        "path": (STR, True), "source": (STR, True),
    },
    "evaluation": {
        "eval_id": (STR, True), "run_id": (STR, True), "solution_id": (STR, True), "task_id": (STR, True),
        "workload_id": (STR, True), "env_id": (STR, True), "backend": (STR, True), "status": (STR, True),
        "reason": (STR, False), "median_ms": (NUM, False), "q1_ms": (NUM, False), "q3_ms": (NUM, False),
        "iqr_ms": (NUM, False), "mean_ms": (NUM, False), "std_ms": (NUM, False), "min_ms": (NUM, False),
        "max_ms": (NUM, False), "n_samples": (I32, False), "timing_method": (STR, False), "samples_ms": (NUMS, False),
        "correctness": (OBJ, False), "timing": (OBJ, False), "traceback": (STR, False), "seconds": (NUM, False),
        "created_at": (TIME, False), "event_median_ms": (NUM, False), "span_median_ms": (NUM, False),
        "kernel_sum_median_ms": (NUM, False), "kernels_per_call": (NUM, False), "kernel_less": (BOOL, False),
        "flags": (OBJ, False),
    },
    "calibration": {
        "calibration_id": (STR, True), "env": (OBJ, True), "time": (TIME, False),
        "copy_bytes_per_s": (NUM, False), "bf16_flops_per_s": (NUM, False), "fp8_flops_per_s": (NUM, False),
        "fp32_flops_per_s": (NUM, False), "details": (ANY, False),
    },
    # the sandbox layers the run had (free-form metadata of the run, kept in runs.sandbox)
    "sandbox": {},
}
# what two rows of the same eval_id must agree on to be the same measurement
EVAL_IDENTITY = ("run_id", "solution_id", "workload_id", "env_id", "status", "median_ms", "n_samples")
# what a solution's id may hash before its source, by kind (d2k.solutions)
SOLUTION_ID_PREFIXES = {"file": ("",), "reference": ("reference:",), "compiled": tuple(COMPILED_PREFIX.values())}


def _json_type(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}" if len(repr(value)) <= 24 else "a number out of range"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _unicode_ok(value) -> bool:
    """False for text DuckDB cannot store (lone surrogates from a forged \\ud800 escape)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, list):
        return all(_unicode_ok(v) for v in value)
    if isinstance(value, dict):
        return all(_unicode_ok(k) and _unicode_ok(v) for k, v in value.items())
    return True


def check_record(record: dict, where: str) -> str:
    """The record's type, after checking its fields; a D2KError naming ``where`` and the field."""
    kind = record.get("record")
    if kind is None:
        raise D2KError(f"{where}: record: missing (one of {', '.join(RECORD_TYPES)})")
    if not isinstance(kind, str) or kind not in SCHEMAS:
        shown = kind if isinstance(kind, str) and len(kind) <= 40 else _json_type(kind)
        raise D2KError(f"{where}: record: unknown record type {shown!r} (one of {', '.join(RECORD_TYPES)})")
    for name, ((test, description), required) in SCHEMAS[kind].items():
        value = record.get(name)
        if value is None:
            if required:
                raise D2KError(f"{where}: {kind}.{name}: missing (expected {description})")
            continue
        if not test(value):
            raise D2KError(f"{where}: {kind}.{name}: expected {description}, got {_json_type(value)}")
        if not _unicode_ok(value):
            raise D2KError(f"{where}: {kind}.{name}: text with an unpaired surrogate (not valid Unicode)")
    if kind == "solution":
        prefixes = SOLUTION_ID_PREFIXES.get(record["kind"])
        if prefixes is not None and record["solution_id"] not in {sha256(p + record["source"]) for p in prefixes}:
            raise D2KError(f"{where}: solution.solution_id: not the sha256 of its source (an edited or forged record)")
    if kind == "calibration":
        env_id = record["env"].get("env_id")
        if not isinstance(env_id, str):
            raise D2KError(f"{where}: calibration.env.env_id: expected a string, got {_json_type(env_id)}")
    if kind in ("environment", "sandbox"):
        for name, value in record.items():  # the whole record is kept (the environment's info, the run's sandbox)
            if not _unicode_ok(value):
                raise D2KError(f"{where}: environment.{name}: text with an unpaired surrogate (not valid Unicode)")
    return kind


def read_records(path: Path) -> list[tuple[int, str, dict]]:
    """Every record of a ``results.jsonl``: (line number, type, fields), all checked; nothing is
    stored yet."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise D2KError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise D2KError(f"{path}:{line}: not UTF-8 text (a binary file?)") from None
    records = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        if "\x00" in line:
            raise D2KError(f"{where}: a NUL byte (a binary file?)")
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            reason = re.sub(r"( starting)? at$", "", exc.msg)
            raise D2KError(f"{where}: not JSON at column {exc.colno}: {reason} (a truncated file?)") from None
        except RecursionError:
            raise D2KError(f"{where}: not JSON that can be read (nested too deeply)") from None
        if not isinstance(record, dict):
            raise D2KError(f"{where}: {_json_type(record)} where a JSON object (one record) was expected")
        kind = check_record(record, where)
        fields = dict(record)
        fields.pop("record")
        records.append((lineno, kind, fields))
    return records


def _stored(store: Store, table: str, column: str, ids: set[str]) -> set[str]:
    if not ids:
        return set()
    rows = store.con.execute(f"SELECT {column} FROM {table} WHERE list_contains(?, {column})", [sorted(ids)]).fetchall()
    return {r[0] for r in rows}


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return a == b or (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12)
        except TypeError:
            return False
    return a == b


def _check_references(store: Store, path: Path, records: list[tuple[int, str, dict]]) -> dict[str, dict]:
    """Evaluations must name an environment and a solution that the file or the store holds, of the
    same task; a stored evaluation of the same id must be the same measurement. Returns the stored
    evaluations (by id) this file repeats."""
    envs = {f["env_id"] for _, k, f in records if k == "environment"}
    solutions = {f["solution_id"]: f["task_id"] for _, k, f in records if k == "solution"}
    evals = [(n, f) for n, k, f in records if k == "evaluation"]
    want_envs = {f["env_id"] for _, f in evals} - envs
    known_envs = envs | _stored(store, "environments", "env_id", want_envs)
    want_solutions = {f["solution_id"] for _, f in evals} - set(solutions)
    if want_solutions:
        rows = store.con.execute("SELECT solution_id, task_id FROM solutions WHERE list_contains(?, solution_id)",
                                 [sorted(want_solutions)]).fetchall()
        solutions.update(dict(rows))
    stored_evals: dict[str, dict] = {}
    ids = sorted({f["eval_id"] for _, f in evals})
    if ids:
        cursor = store.con.execute(f"SELECT eval_id, {', '.join(EVAL_IDENTITY)} FROM evaluations "
                                   "WHERE list_contains(?, eval_id)", [ids])
        for row in cursor.fetchall():
            stored_evals[row[0]] = dict(zip(EVAL_IDENTITY, row[1:]))
    seen: dict[str, dict] = {}
    for lineno, f in evals:
        where = f"{path}:{lineno}"
        if f["env_id"] not in known_envs:
            raise D2KError(f"{where}: evaluation.env_id: environment {f['env_id'][:40]!r} is neither in this file "
                           "nor in the store")
        if f["solution_id"] not in solutions:
            raise D2KError(f"{where}: evaluation.solution_id: solution {f['solution_id'][:16]!r}… is neither in this file "
                           "nor in the store")
        if solutions[f["solution_id"]] != f["task_id"]:
            raise D2KError(f"{where}: evaluation.task_id: {f['task_id'][:40]!r} is not the task of its solution "
                           f"({solutions[f['solution_id']][:40]!r})")
        earlier = stored_evals.get(f["eval_id"]) or seen.get(f["eval_id"])
        if earlier is not None:
            differs = [k for k in EVAL_IDENTITY if not _same(earlier.get(k), f.get(k))]
            if differs:
                origin = "the store" if f["eval_id"] in stored_evals else "an earlier line"
                raise D2KError(f"{where}: evaluation.{differs[0]}: evaluation {f['eval_id'][:40]!r} is already in {origin} "
                               f"with another {differs[0]} (an edited or forged file?)")
        seen[f["eval_id"]] = {k: f.get(k) for k in EVAL_IDENTITY}
    return stored_evals


def _insert(store: Store, where: str, kind: str, action) -> None:
    try:
        action()
    except (duckdb.Error, UnicodeError, OverflowError, ValueError, TypeError) as exc:
        message = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise D2KError(f"{where}: cannot store this {kind} record: {message}") from None


def _ingest_calibration(store: Store, bench: Benchmark | None, path: Path, counts: dict) -> dict:
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise D2KError(f"{path}: not UTF-8 text (a binary file?)") from None
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise D2KError(f"{path}: not a calibration.json of d2k calibrate (not JSON; a truncated file?)") from None
    if not isinstance(data, dict) or not isinstance(data.get("env"), dict) or not isinstance(data.get("calibration"), dict):
        raise D2KError(f"{path}: not a calibration.json of d2k calibrate (expected the objects 'env' and 'calibration')")
    env, cal = data["env"], data["calibration"]
    check_record({"record": "environment", **env}, f"{path}: env")
    # the id is the file's hash, so ingesting the same file twice keeps one row
    calibration_id = hashlib.sha256(text.encode()).hexdigest()[:32]
    check_record({"record": "calibration", **cal, "calibration_id": calibration_id, "env": env}, f"{path}: calibration")
    new_env = env["env_id"] not in _stored(store, "environments", "env_id", {env["env_id"]})
    new_cal = calibration_id not in _stored(store, "calibrations", "calibration_id", {calibration_id})
    with store.transaction():  # a file is stored whole or not at all
        if bench is not None:
            store.sync_content(bench)
        _insert(store, f"{path}: env", "environment", lambda: store.add_environment(env))
        _insert(store, f"{path}: calibration", "calibration", lambda: store.add_calibration(calibration_id, env, cal))
    counts["environment"] += new_env
    counts["calibration"] += new_cal
    counts["unchanged"] += (not new_env) + (not new_cal)
    return counts


def ingest(store: Store, bench: Benchmark | None, path: Path) -> dict:
    """Load a run's ``results.jsonl`` or a ``calibration.json`` of ``d2k calibrate`` (e.g. produced
    on a GPU node) into the store, whole or not at all. Returns the rows added per kind, and
    ``unchanged``: records the store already held."""
    if not path.is_file():
        raise D2KError(f"results file not found: {path}")
    counts = {"environment": 0, "solution": 0, "evaluation": 0, "calibration": 0, "sandbox": 0, "unchanged": 0}
    if path.suffix == ".json":
        return _ingest_calibration(store, bench, path, counts)
    records = read_records(path)
    stored_evals = _check_references(store, path, records)
    stored = {
        "environment": _stored(store, "environments", "env_id", {f["env_id"] for _, k, f in records if k == "environment"}),
        "solution": _stored(store, "solutions", "solution_id", {f["solution_id"] for _, k, f in records if k == "solution"}),
        "calibration": _stored(store, "calibrations", "calibration_id",
                               {f["calibration_id"] for _, k, f in records if k == "calibration"}),
        "evaluation": set(stored_evals),
    }
    key = {"environment": "env_id", "solution": "solution_id", "calibration": "calibration_id", "evaluation": "eval_id"}
    run_ids = sorted({f["run_id"] for _, k, f in records if k == "evaluation"})
    new_runs = sorted(set(run_ids) - _stored(store, "runs", "run_id", set(run_ids)))
    sandboxes = []
    for _, k, f in records:
        if k == "sandbox" and f not in sandboxes:
            sandboxes.append(f)
    with store.transaction():  # a file is stored whole or not at all
        if bench is not None:
            store.sync_content(bench)
        done: set[tuple[str, str]] = set()
        for lineno, kind, record in records:
            if kind == "sandbox":
                continue  # applied to the run below
            ident = record[key[kind]]
            if ident in stored[kind] or (kind, ident) in done:
                counts["unchanged"] += 1
                continue
            where = f"{path}:{lineno}"
            if kind == "environment":
                _insert(store, where, kind, lambda r=record: store.add_environment(r))
            elif kind == "solution":
                _insert(store, where, kind, lambda r=record: store.add_solution(
                    Solution(r["solution_id"], r["task_id"], r["label"], r["kind"], Path(r["path"]), r["source"])))
            elif kind == "evaluation":
                _insert(store, where, kind, lambda r=record: store.add_evaluation(r))
            else:
                _insert(store, where, kind, lambda r=record: store.add_calibration(r["calibration_id"], r["env"], r))
            done.add((kind, ident))
            counts[kind] += 1
        if run_ids:
            # one row per run not yet known; a run whose evaluations span two environments (or
            # backends) takes its first one's, so a second environment never duplicates the run
            _insert(store, f"{path}", "run", lambda: store.add_ingested_runs(run_ids, str(path)))
        if sandboxes and new_runs:  # as the sweep records it: one summary, or the variants seen
            sandbox = sandboxes[0] if len(sandboxes) == 1 else {"variants": sandboxes}
            _insert(store, f"{path}", "sandbox", lambda: store.set_missing_run_sandbox(new_runs, sandbox))
    n_sandbox = sum(1 for _, k, _ in records if k == "sandbox")
    counts["sandbox" if new_runs else "unchanged"] += n_sandbox
    return counts
