"""Every row the d2k store writes: the methods ``Store`` (d2k/store.py) takes from ``StoreWrites``.

The SQL that changes the store's tables lives here and in d2k/store.py (schema migrations and the
``meta`` rows of the schema and views versions) and nowhere else in d2k: callers call these methods
(tests/test_store.py checks it). Each method keeps the atomicity its caller had: one statement, or
several in one transaction where the caller made them one; ``transaction()`` makes a caller's
several calls one (an ingested file is stored whole or not at all).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid
from typing import TYPE_CHECKING

import duckdb

from d2k.errors import D2KError

if TYPE_CHECKING:  # imported where used: `d2k sql` opens a store without loading pydantic models
    from d2k.content import Benchmark
    from d2k.judge.static import Verdict
    from d2k.solutions import Solution

# the tables `d2k analyze` replaces whole (replace_analysis_table)
ANALYSIS_TABLES = ("analysis_bootstrap", "analysis_attribution")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def _ts(value) -> dt.datetime | None:
    """A stored timestamp (naive UTC) from epoch seconds; a datetime or None as it is."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return dt.datetime.fromtimestamp(value, tz=dt.UTC).replace(tzinfo=None)
    return value


def _json(value) -> str | None:
    """A JSON column's text (None stays NULL)."""
    return None if value is None else json.dumps(value, default=str)


class _Transaction:
    """BEGIN … COMMIT, or ROLLBACK on any error."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con

    def __enter__(self):
        self.con.execute("BEGIN TRANSACTION")
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            try:
                self.con.execute("COMMIT")
            except duckdb.Error as error:
                self.con.execute("ROLLBACK")
                raise D2KError(f"cannot commit: {str(error).splitlines()[0]}") from None
        else:
            try:
                self.con.execute("ROLLBACK")
            except duckdb.Error:
                pass
        return False


class StoreWrites:
    con: duckdb.DuckDBPyConnection

    def transaction(self) -> _Transaction:
        """``with store.transaction():`` the writes inside are stored together or not at all; a
        failed COMMIT is a D2KError ("cannot commit: …")."""
        return _Transaction(self.con)

    def set_meta(self, key: str, value: str) -> None:
        self.con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [key, value])

    # -- content -----------------------------------------------------------------------------
    def sync_content(self, bench: Benchmark) -> None:
        """Upsert the loaded tasks, workloads and design items."""
        from d2k import perf
        from d2k.solutions import sha256

        now = _now()
        con = self.con
        for task_id, task in bench.tasks.items():
            con.execute(
                "INSERT OR REPLACE INTO tasks (task_id, catalog, title, category, description, entry_point, signature, "
                "tolerance, flops_formula, bytes_formula, peak, content_hash, updated_at, eager_stand_in) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [task.id, task.catalog, task.title, task.category, task.description, task.entry_point,
                 task.signature.model_dump_json(), task.tolerance.model_dump_json(),
                 str(task.performance.flops), str(task.performance.bytes), task.performance.peak,
                 sha256(task.model_dump_json()), now, task.performance.eager_stand_in],
            )
            rows = []
            for w in bench.workloads.get(task_id, []):
                rows.append([w.id, task_id, w.tag, json.dumps(w.axes), json.dumps(w.dtypes), json.dumps(w.params),
                             w.seed, w.note, perf.workload_flops(task, w), perf.workload_bytes(task, w)])
            if rows:
                con.executemany("INSERT OR REPLACE INTO workloads VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
            items = [[task_id, i.id, i.level, i.title, i.guidance, i.criterion, list(i.depends_on), list(i.related),
                      i.weight, i.signal_hint, json.dumps(i.signals)] for i in bench.items(task_id)]
            con.execute("DELETE FROM design_items WHERE task_id = ?", [task_id])
            if items:
                con.executemany("INSERT INTO design_items VALUES (?,?,?,?,?,?,?,?,?,?,?)", items)

    def add_solution(self, solution: Solution) -> None:
        self.con.execute(
            # the same bytes first stored under a path and later shipped as a task's expert (a
            # promoted candidate) take the shipped name, so the views find the expert by its label
            "INSERT INTO solutions VALUES (?,?,?,?,?,?,?) ON CONFLICT (solution_id) DO UPDATE "
            "SET label = excluded.label, kind = excluded.kind, path = excluded.path "
            "WHERE excluded.label IN ('expert', 'naive') AND solutions.label NOT IN ('expert', 'naive')",
            [solution.solution_id, solution.task_id, solution.label, solution.kind, str(solution.path),
             solution.source, _now()],
        )

    # -- environments and runs ---------------------------------------------------------------
    def add_environment(self, env: dict) -> str:
        self.con.execute(
            "INSERT INTO environments VALUES (?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (env_id) DO NOTHING",
            [env["env_id"], env.get("backend"), env.get("gpu_name"), env.get("compute_capability"), env.get("driver"),
             env.get("cuda"), env.get("torch"), env.get("triton"), env.get("sm_count"), env.get("l2_bytes"),
             _json(env), _ts(env.get("time"))],
        )
        return env["env_id"]

    def add_calibration(self, calibration_id: str, env: dict, cal: dict) -> None:
        clocks = {k: env.get(k) for k in ("sm_clock_mhz", "mem_clock_mhz", "max_sm_clock_mhz", "max_mem_clock_mhz")}
        self.con.execute(
            "INSERT OR REPLACE INTO calibrations VALUES (?,?,?,?,?,?,?,?,?)",
            [calibration_id, env["env_id"], _ts(cal.get("time")), cal.get("copy_bytes_per_s"), cal.get("bf16_flops_per_s"),
             cal.get("fp8_flops_per_s"), cal.get("fp32_flops_per_s"), _json(clocks), _json(cal.get("details"))],
        )

    def start_run(self, run_id: str, command: str, args: dict, env: dict, results_path: str) -> None:
        import socket

        clocks = {k: env.get(k) for k in ("sm_clock_mhz", "mem_clock_mhz", "temperature_c")}
        self.con.execute(
            "INSERT OR REPLACE INTO runs (run_id, command, args, env_id, backend, started_at, finished_at, status, "
            "clocks, results_path, owner_pid, owner_host) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            [run_id, command, _json(args), env["env_id"], env.get("backend"),
             _now(), None, "running", _json(clocks), results_path,
             os.getpid(), socket.gethostname()],
        )

    def set_run_sandbox(self, run_id: str, sandbox: dict) -> None:
        self.con.execute("UPDATE runs SET sandbox = ? WHERE run_id = ?", [_json(sandbox), run_id])

    def recover_stale_runs(self) -> int:
        """Mark runs left ``running`` by a process of this host that no longer exists as
        ``interrupted`` (a killed d2k cannot do it itself); returns how many."""
        import socket

        rows = self.con.execute(
            "SELECT run_id, owner_pid FROM runs WHERE status = 'running' AND owner_host = ?", [socket.gethostname()]
        ).fetchall()
        stale = []
        for run_id, pid in rows:
            if pid is None or pid == os.getpid():
                continue
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                stale.append(run_id)
            except PermissionError:
                pass
        for run_id in stale:
            self.con.execute("UPDATE runs SET status = 'interrupted', finished_at = ? WHERE run_id = ?",
                             [_now(), run_id])
        return len(stale)

    def finish_run(self, run_id: str, status: str) -> None:
        self.con.execute(
            "UPDATE runs SET finished_at = ?, status = ? WHERE run_id = ?",
            [_now(), status, run_id],
        )

    def add_ingested_runs(self, run_ids: list[str], results_path: str) -> None:
        """One ``ingested`` row per run of ``run_ids`` not yet known, from its stored evaluations
        (d2k ingest). A run whose evaluations span two environments (or backends) takes its first
        one's, so a second environment never duplicates the run."""
        self.con.execute(
            "INSERT INTO runs (run_id, command, args, env_id, backend, started_at, finished_at, status, clocks, "
            "results_path) "
            "SELECT run_id, 'ingest', NULL, first(env_id ORDER BY created_at NULLS LAST, eval_id), "
            "first(backend ORDER BY created_at NULLS LAST, eval_id), "
            "min(created_at), max(created_at), 'ingested', NULL, ? FROM evaluations "
            "WHERE list_contains(?, run_id) AND run_id NOT IN (SELECT run_id FROM runs) GROUP BY run_id",
            [results_path, run_ids])

    def set_missing_run_sandbox(self, run_ids: list[str], sandbox: dict) -> None:
        """Record ``sandbox`` on those of ``run_ids`` that have none yet (d2k ingest)."""
        self.con.execute("UPDATE runs SET sandbox = ? WHERE list_contains(?, run_id) AND sandbox IS NULL",
                         [_json(sandbox), run_ids])

    # -- evaluations -------------------------------------------------------------------------
    EVAL_COLUMNS = (
        "eval_id", "run_id", "solution_id", "task_id", "workload_id", "env_id", "backend", "status", "reason",
        "median_ms", "q1_ms", "q3_ms", "iqr_ms", "mean_ms", "std_ms", "min_ms", "max_ms", "n_samples",
        "timing_method", "samples_ms", "correctness", "timing", "traceback", "seconds", "created_at",
        "event_median_ms", "span_median_ms", "kernel_sum_median_ms", "kernels_per_call", "kernel_less", "flags",
    )

    def add_evaluation(self, record: dict) -> None:
        values = []
        for col in self.EVAL_COLUMNS:
            value = record.get(col)
            if col in ("correctness", "timing", "flags"):
                value = _json(value)
            elif col == "created_at":
                value = _ts(value)
            values.append(value)
        placeholders = ",".join("?" * len(values))
        self.con.execute(f"INSERT OR REPLACE INTO evaluations ({', '.join(self.EVAL_COLUMNS)}) VALUES ({placeholders})", values)

    # -- experiments (d2k experiment run) ------------------------------------------------------
    def add_blob(self, blob_id: str, path: str, size: int) -> None:
        """Reference a large text stored in a file named by its sha256 (kept if already known)."""
        self.con.execute("INSERT INTO blobs VALUES (?,?,?) ON CONFLICT (blob_id) DO NOTHING", [blob_id, path, size])

    def upsert_experiment(self, experiment_id: str, name: str, spec_json: str, spec_path: str) -> None:
        """Record an experiment; a known one keeps its name and creation time and takes the new spec."""
        self.con.execute(
            "INSERT INTO experiments VALUES (?,?,?,?,?) ON CONFLICT (experiment_id) DO UPDATE SET spec = excluded.spec",
            [experiment_id, name, spec_json, spec_path, _now()])

    def add_attempts(self, experiment_id: str, attempts: list[dict]) -> None:
        """Add the experiment's attempts not yet stored, as ``pending``. Each attempt: ``attempt_id``,
        ``model``, ``model_id``, ``task_id``, ``condition``, ``seed``; a stored one is left as it is."""
        for a in attempts:
            self.con.execute(
                "INSERT INTO attempts (attempt_id, experiment_id, model, model_id, task_id, condition, seed, status) "
                "VALUES (?,?,?,?,?,?,?, 'pending') ON CONFLICT (attempt_id) DO NOTHING",
                [a["attempt_id"], experiment_id, a["model"], a["model_id"], a["task_id"], a["condition"], a["seed"]])

    def requeue_unfinished_attempts(self, experiment_id: str) -> None:
        """Every attempt of the experiment neither finished nor failed goes back to ``pending``
        (interrupted attempts restart from scratch)."""
        self.con.execute(
            "UPDATE attempts SET status = 'pending' WHERE experiment_id = ? AND status NOT IN ('finished', 'failed')",
            [experiment_id])

    def mark_attempts_running(self, attempt_ids: list[str]) -> None:
        for attempt_id in attempt_ids:
            self.con.execute("UPDATE attempts SET status = 'running' WHERE attempt_id = ?", [attempt_id])

    def mark_attempt_failed(self, attempt_id: str, detail: str) -> None:
        self.con.execute("UPDATE attempts SET status = 'failed', detail = ?, finished_at = ? WHERE attempt_id = ?",
                         [detail, _now(), attempt_id])

    def replace_turns(self, attempt_id: str, turns: list[dict]) -> None:
        """Replace the attempt's stored turns. Each turn: ``turn`` (its index), ``content_blob``,
        ``tool_calls`` (a list, stored as JSON), ``tool_results_blob``, ``prompt_tokens``,
        ``completion_tokens``, ``latency_s``, ``harness_s``, ``note``."""
        self.con.execute("DELETE FROM turns WHERE attempt_id = ?", [attempt_id])
        rows = [[attempt_id, t["turn"], t["content_blob"], _json(t["tool_calls"]), t["tool_results_blob"],
                 t["prompt_tokens"], t["completion_tokens"], t["latency_s"], t["harness_s"], t["note"]] for t in turns]
        if rows:
            self.con.executemany("INSERT INTO turns VALUES (?,?,?,?,?,?,?,?,?,?)", rows)

    def finish_attempt(self, attempt_id: str, *, detail: str | None, agent_status: str | None,
                       submission_id: str | None, submission_choice: str | None, proposal_id: str | None,
                       workspace: str | None, turns: int, prompt_tokens: int, completion_tokens: int,
                       harness_s: float, started_at, finished_at, worker: str) -> None:
        """Store a finished attempt's outcome; ``started_at`` and ``finished_at`` are epoch seconds."""
        self.con.execute(
            """UPDATE attempts SET status = 'finished', detail = ?, agent_status = ?, submission_id = ?,
                   submission_choice = ?, proposal_id = ?, workspace = ?, turns = ?, prompt_tokens = ?,
                   completion_tokens = ?, harness_s = ?, started_at = ?, finished_at = ?, worker = ?
               WHERE attempt_id = ?""",
            [detail, agent_status, submission_id, submission_choice, proposal_id, workspace, turns, prompt_tokens,
             completion_tokens, harness_s, _ts(started_at), _ts(finished_at), worker, attempt_id])

    # -- judges --------------------------------------------------------------------------------
    def replace_verdicts(self, verdicts: list[Verdict], task_id: str, judge: str, version: str,
                         solution_id: str | None = None, proposal_id: str | None = None) -> None:
        """Replace this judge's (and version's) stored verdicts on the solution (or the proposal),
        per model the new verdicts carry, with ``verdicts``."""
        key_col, key = ("solution_id", solution_id) if solution_id else ("proposal_id", proposal_id)
        for model in {v.model for v in verdicts}:
            self.con.execute(
                f"DELETE FROM verdicts WHERE {key_col} = ? AND judge = ? AND judge_version = ? "
                "AND model IS NOT DISTINCT FROM ?", [key, judge, version, model])
        rows = [[uuid.uuid4().hex, solution_id, proposal_id, task_id, v.item_id, judge, version, v.model, v.prompt_hash,
                 v.verdict, v.strength, v.confidence, v.reason, _json(v.evidence), _json(v.usage) if v.usage else None,
                 _now()] for v in verdicts]
        if rows:
            self.con.executemany("INSERT INTO verdicts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)

    def put_judge_score(self, solution_id: str, task_id: str, judge: str, judge_version: str, status: str,
                        detail: str, scores: dict) -> None:
        """A judge's scores of a solution (``scores``: graph.Scores.as_dict(), or {} when not scored)."""
        s = scores
        self.con.execute(
            "INSERT OR REPLACE INTO judge_scores VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [solution_id, task_id, judge, judge_version, status, detail, s.get("l1"), s.get("l2"), s.get("l3"),
             s.get("combined"), s.get("dependency_aware"), s.get("coverage"), _json(s.get("flags", [])), _now()],
        )

    def put_proposal(self, proposal_id: str, task_id: str, label: str, path: str, text: str) -> None:
        self.con.execute("INSERT OR REPLACE INTO proposals VALUES (?,?,?,?,?,?)",
                         [proposal_id, task_id, label, path, text, _now()])

    def put_proposal_score(self, proposal_id: str, task_id: str, judge: str, judge_version: str, model: str,
                           prompt_hash: str, scores: dict) -> None:
        """A judge's coverage scores of a proposal (``scores``: graph.Scores.as_dict())."""
        s = scores
        self.con.execute("INSERT OR REPLACE INTO proposal_scores VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                         [proposal_id, task_id, judge, judge_version, model, prompt_hash,
                          s["l1"], s["l2"], s["l3"], s["combined"], s["coverage"], _now()])

    def replace_judge_metrics(self, judge: str, version: str, gold: str, results: list[dict]) -> None:
        """Replace the agreement metrics of a judge (and version) on a gold set with ``results``."""
        self.con.execute("DELETE FROM judge_metrics WHERE judge = ? AND judge_version = ? AND gold = ?",
                         [judge, version, gold])
        self.con.executemany(
            "INSERT INTO judge_metrics VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [[judge, version, gold, r["scope"], r["key"], r["n"], r["decided"], r["accuracy"], r["precision"],
              r["recall"], r["f1"], r["kappa"], _now()] for r in results],
        )

    # -- analysis (d2k analyze) ----------------------------------------------------------------
    def replace_analysis_table(self, table: str, columns: tuple | list, rows: list[tuple]) -> None:
        """Replace the rows of an analysis table with ``rows`` (one transaction)."""
        if table not in ANALYSIS_TABLES:
            raise ValueError(f"not an analysis table: {table!r} (one of {', '.join(ANALYSIS_TABLES)})")
        con = self.con
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(f"DELETE FROM {table}")
            if rows:
                placeholders = ",".join("?" * len(columns))
                con.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders})",
                                [list(r) for r in rows])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
