"""Fault injection for ingest, the store and the command line: each case asserts the exact outcome
(exit code, the one line on stderr, the rows before and after, the file's bytes)."""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
import subprocess
import sys

import duckdb
import pytest
from conftest import d2k_command
from faults_data import SOURCE, counts, results_records, small_content, write_jsonl

from d2k.store import Store


def d2k(*args, cwd=None, env=None, timeout=120):
    return subprocess.run(d2k_command(*args), capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env)


def one_line_error(out) -> str:
    """stderr is exactly one line, starting with `error:`, and no traceback anywhere."""
    assert "Traceback" not in out.stderr + out.stdout, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("error: "), out.stderr
    return lines[0]


def sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def db(tmp_path, monkeypatch):
    """An empty store at $D2K_DB, and content of its own (ingest syncs the content: the checkout's
    may change under a test while others edit it)."""
    monkeypatch.setenv("D2K_ROOT", str(small_content(tmp_path / "content")))
    path = tmp_path / "d2k.duckdb"  # = $D2K_DB of conftest
    Store(path).close()
    return path


# -- ingest ------------------------------------------------------------------------------------
def test_bad_line_in_the_middle_stores_nothing(tmp_path, db):
    records = results_records(6)
    records[6]["median_ms"] = "fast"  # the 5th of 6 evaluations, line 7
    path = write_jsonl(tmp_path / "results.jsonl", records)
    before = counts(db)
    out = d2k("ingest", str(path))
    assert out.returncode == 2
    assert one_line_error(out) == f"error: {path}:7: evaluation.median_ms: expected a number, got a string"
    assert counts(db) == before  # not 5 of 6 evaluations and no run: nothing


@pytest.mark.parametrize("case, content, message", [
    ("truncated", None, ":5: not JSON at column 37: Unterminated string (a truncated file?)"),
    ("binary", b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", ":1: not UTF-8 text (a binary file?)"),
    ("not an object", b'[1, 2]\n', ":1: a list where a JSON object (one record) was expected"),
    ("no record type", b'{"env_id": "x"}\n',
     ":1: record: missing (one of environment, solution, evaluation, calibration, sandbox)"),
    ("unknown record type", b'{"record": "evalution"}\n',
     ":1: record: unknown record type 'evalution' (one of environment, solution, evaluation, calibration, sandbox)"),
    ("missing field", None, ":4: evaluation.run_id: missing (expected a string)"),
    ("wrong type", None, ":1: environment.env_id: expected a string, got the number 7"),
    ("NUL byte", b'{"record": "environment", "env_id": "a\x00"}\n', ":1: a NUL byte (a binary file?)"),
])
def test_malformed_ingest_files_are_one_line_and_store_nothing(tmp_path, db, case, content, message):
    path = tmp_path / "results.jsonl"
    if case == "truncated":
        text = "".join(json.dumps(r) + "\n" for r in results_records(6))
        lines = text.splitlines(keepends=True)
        path.write_text("".join(lines[:4]) + lines[4][:40])  # cut inside line 5, as a killed writer leaves it
    elif case == "missing field":
        records = results_records(3)
        del records[3]["run_id"]
        write_jsonl(path, records)
    elif case == "wrong type":
        records = results_records(3)
        records[0]["env_id"] = 7
        write_jsonl(path, records)
    else:
        path.write_bytes(content)
    before = counts(db)
    out = d2k("ingest", str(path))
    assert out.returncode == 2, out.stderr
    assert one_line_error(out) == f"error: {path}{message}"
    assert counts(db) == before


def test_forged_files_are_refused_and_change_nothing(tmp_path, db):
    genuine = write_jsonl(tmp_path / "genuine.jsonl", results_records(3))
    assert d2k("ingest", str(genuine)).returncode == 0
    before = counts(db)
    assert before["evaluations"] == 3 and before["runs"] == 1

    # the same evaluation ids with a better time: a stored measurement is never overwritten
    records = results_records(3)
    records[2]["median_ms"] = 0.001
    forged = write_jsonl(tmp_path / "forged_time.jsonl", records)
    out = d2k("ingest", str(forged))
    assert out.returncode == 2
    assert one_line_error(out) == (f"error: {forged}:3: evaluation.median_ms: evaluation 'eval-env-a-0' is already in "
                                   "the store with another median_ms (an edited or forged file?)")
    # a solution whose source was edited after its id was computed
    records = results_records(1, tag="x")
    records[1]["source"] = SOURCE + "# faster\n"
    forged_source = write_jsonl(tmp_path / "forged_source.jsonl", records)
    out = d2k("ingest", str(forged_source))
    assert out.returncode == 2
    assert one_line_error(out) == (f"error: {forged_source}:2: solution.solution_id: not the sha256 of its source "
                                   "(an edited or forged record)")
    # an evaluation of an environment nobody recorded
    records = results_records(2, tag="y")
    records[2]["env_id"] = "env-nowhere"
    orphan = write_jsonl(tmp_path / "orphan.jsonl", records)
    out = d2k("ingest", str(orphan))
    assert out.returncode == 2
    assert one_line_error(out) == (f"error: {orphan}:3: evaluation.env_id: environment 'env-nowhere' is neither in "
                                   "this file nor in the store")
    assert counts(db) == before
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT median_ms FROM evaluations WHERE eval_id = 'eval-env-a-0'").fetchone() == (1.0,)
    con.close()


def test_sandbox_records_describe_the_run(tmp_path, db):
    records = results_records(2)
    sandbox = {"record": "sandbox", "layers": ["pid", "net"], "warnings": []}
    path = write_jsonl(tmp_path / "results.jsonl", [records[0], sandbox, *records[1:]])
    out = d2k("ingest", str(path))
    assert out.returncode == 0, out.stderr
    assert "1 sandbox(s)" in out.stdout
    con = duckdb.connect(str(db), read_only=True)
    assert json.loads(con.execute("SELECT sandbox FROM runs").fetchone()[0]) == {"layers": ["pid", "net"], "warnings": []}
    con.close()
    before = counts(db)
    assert d2k("ingest", str(path)).returncode == 0
    assert counts(db) == before


def test_second_environment_and_reingest_are_idempotent(tmp_path, db):
    # one run whose evaluations span two environments (e.g. two GPUs of a node)
    both = results_records(3, env_id="env-a") + results_records(3, env_id="env-b")
    path = write_jsonl(tmp_path / "results.jsonl", both)
    before = counts(db)
    out = d2k("ingest", str(path))
    assert out.returncode == 0, out.stderr
    assert "2 environment(s), 1 solution(s), 6 evaluation(s)" in out.stdout
    after = counts(db)
    assert {k: after[k] - before[k] for k in ("environments", "solutions", "evaluations", "runs")} == \
        {"environments": 2, "solutions": 1, "evaluations": 6, "runs": 1}
    again = d2k("ingest", str(path))
    assert again.returncode == 0, again.stderr
    assert "nothing new (10 record(s) already stored)" in again.stdout
    assert counts(db) == after  # 0 duplicated rows
    # a later run of the same environment and solution: only the new evaluations and run
    later = write_jsonl(tmp_path / "later.jsonl", results_records(2, env_id="env-a", run_id="run-2", tag="later"))
    out = d2k("ingest", str(later))
    assert out.returncode == 0, out.stderr
    final = counts(db)
    assert {k: final[k] - after[k] for k in ("environments", "solutions", "evaluations", "runs")} == \
        {"environments": 0, "solutions": 0, "evaluations": 2, "runs": 1}


# -- the store ---------------------------------------------------------------------------------
def _filled_store(tmp_path, db):
    assert d2k("ingest", str(write_jsonl(tmp_path / "r.jsonl", results_records(6)))).returncode == 0
    return db


@pytest.mark.parametrize("command", [("sql", "SELECT count(*) FROM evaluations"), ("report",), ("experiment", "status"),
                                     ("ingest", "FILE")])
def test_corrupt_and_foreign_store_files(tmp_path, db, command):
    results = write_jsonl(tmp_path / "more.jsonl", results_records(2, tag="more"))
    args = [str(results) if a == "FILE" else a for a in command]
    _filled_store(tmp_path, db)

    truncated = tmp_path / "truncated.duckdb"
    data = db.read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    garbage = tmp_path / "garbage.duckdb"
    garbage.write_bytes(bytes(range(256)) * 64)
    lite = tmp_path / "lite.db"
    con = sqlite3.connect(lite)
    con.execute("CREATE TABLE evaluations (x)")
    con.commit()
    con.close()
    foreign = tmp_path / "foreign.duckdb"
    con = duckdb.connect(str(foreign))
    con.execute("CREATE TABLE evaluations (x INTEGER)")
    con.close()

    half, block = len(data) // 2, 262144
    assert (half - 12288) % block  # half a file is never DuckDB's header plus whole blocks
    expected = {
        truncated: f"error: {truncated} is truncated or damaged: {half} bytes is not DuckDB's header plus whole "
                   f"{block}-byte blocks ({(half - 12288) % block} bytes over); restore it from a copy",
        garbage: f"error: {garbage} is not a d2k store: not a DuckDB database file",
        lite: f"error: {lite} is an SQLite database, not a d2k store (DuckDB)",
        foreign: (f"error: {foreign} is a DuckDB database but not a d2k store (no meta table)" if command[0] == "ingest"
                  else f"error: {foreign} is not a d2k store (no meta table)"),
    }
    for path, message in expected.items():
        digest = sha(path)
        out = d2k(*args, "--db", str(path), cwd=tmp_path)
        assert out.returncode == 2, (path, out.stderr)
        assert one_line_error(out) == message
        assert sha(path) == digest  # not modified, not even its header
        assert not (tmp_path / f"{path.name}.wal").exists()


def test_sql_is_read_only_unless_asked(tmp_path, db):
    _filled_store(tmp_path, db)
    digest, before = sha(db), counts(db)
    out = d2k("sql", "DELETE FROM evaluations")
    assert out.returncode == 2
    assert "read-only" in one_line_error(out) and "--write" in out.stderr
    target = tmp_path / "dump.csv"
    out = d2k("sql", f"COPY (SELECT * FROM evaluations) TO '{target}'")
    assert out.returncode == 2 and "disabled by configuration" in one_line_error(out)
    assert not target.exists()
    for statement in ("INSTALL httpfs", "SET autoinstall_known_extensions = true", f"ATTACH '{tmp_path / 'x.duckdb'}'"):
        out = d2k("sql", statement)
        assert out.returncode == 2, statement
        one_line_error(out)
    out = d2k("sql", "-- how many?\nSELECT count(*) AS n FROM evaluations", "--format", "csv")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["n", "6"]
    assert sha(db) == digest and counts(db) == before  # reading changed no byte
    out = d2k("sql", "--write", "DELETE FROM evaluations WHERE eval_id = 'eval-env-a-0'")
    assert out.returncode == 0, out.stderr
    assert counts(db)["evaluations"] == 5


def test_duckdb_never_loads_extensions_on_its_own(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    settings = dict(store.con.execute(
        "SELECT name, value FROM duckdb_settings() WHERE name IN ('autoinstall_known_extensions', 'autoload_known_extensions')"
    ).fetchall())
    store.close()
    assert settings == {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}
    store = Store(tmp_path / "s.duckdb", read_only=True)
    settings = dict(store.con.execute(
        "SELECT name, value FROM duckdb_settings() WHERE name IN ('autoinstall_known_extensions', "
        "'autoload_known_extensions', 'enable_external_access')").fetchall())
    store.close()
    assert set(settings.values()) == {"false"}


# -- the command line --------------------------------------------------------------------------
@pytest.mark.parametrize("args, message", [
    ((), "error: d2k needs a command (tasks, validate, eval, bench"),
    (("benchh",), "error: No such command 'benchh'. Did you mean 'bench'?; see `d2k --help`"),
    (("eval",), "error: Missing argument 'task'; see `d2k eval --help`"),
    (("tasks", "--bogus"), "error: No such option: --bogus; see `d2k tasks --help`"),
    (("eval", "rmsnorm", "expert", "--timeout", "abc"), "error: Invalid value for '--timeout'"),
    (("eval", "rmsnorm", "expert", "--timeout", "-1"), "error: --timeout must be a positive number of seconds, not -1"),
    (("bench", "--tasks", "rmsnorm", "--timeout", "0"), "error: --timeout must be a positive number of seconds, not 0"),
    (("experiment",), "error: d2k experiment needs a command (run, status); see `d2k experiment --help`"),
    (("judge", "expert", "--task", "rmsnorm", "--judge", "bogus"),
     "error: --judge must be one of static, llm, hybrid (static needs no model; llm and hybrid need D2K_JUDGE_MODEL "
     "or [judge] in d2k.toml), not 'bogus'"),
    (("judge", "expert", "--task", "rmsnorm", "--judge", "llm"),
     "error: no judge model configured: set D2K_JUDGE_MODEL (and D2K_JUDGE_API_BASE) or a [judge] table in d2k.toml"),
    (("judge",), "error: d2k judge needs a command (code, proposal, optimize, eval); see `d2k judge --help`"),
    (("judge", "code", "--bogus"), "error: No such option: --bogus; see `d2k judge code --help`"),
    (("judge", "code", "expert", "--task", "rmsnorm", "--judge", "bogus"), "error: --judge must be one of static, llm, hybrid"),
    (("judge", "eval", "--part", "nope"), "error: --part must be dev, wild_dev, test, wild or all, not 'nope'"),
    (("judge", "eval", "--boot", "-1"), "error: --boot must be 0 (no intervals) or at least 10, not -1"),
    # the spellings from before `judge` had sub-commands: bare `judge` is `judge code`, `proposal` and
    # `optimize` may follow options, every old option is still accepted, `judge-eval` is `judge eval`
    (("judge", "--task", "rmsnorm"), "error: give either a SOLUTION (with --task) or --all"),
    (("judge", "--task", "rmsnorm", "proposal", "DESIGN.md"), "error: design file not found: DESIGN.md"),
    (("judge", "proposal", "DESIGN.md", "--task", "rmsnorm", "--judge", "bogus"), "error: --judge must be one of static"),
    (("judge", "optimize", "--task", "rmsnorm", "--all", "--json", "--db", "x.duckdb"), "error: no judge model configured"),
    (("judge-eval", "--part", "nope"), "error: --part must be dev, wild_dev, test, wild or all, not 'nope'"),
])
def test_usage_errors_are_one_line_and_exit_2(tmp_path, args, message):
    small_content(tmp_path / "content")
    env = {**__import__("os").environ, "D2K_ROOT": str(tmp_path / "content")}
    out = d2k(*args, cwd=tmp_path, env=env)
    assert out.returncode == 2, out.stderr
    assert one_line_error(out).startswith(message)


def test_cuda_backend_without_a_gpu_is_refused_before_any_worker(tmp_path, monkeypatch):
    small_content(tmp_path / "content")
    monkeypatch.setenv("D2K_ROOT", str(tmp_path / "content"))
    out = d2k("eval", "rmsnorm", "expert", "--backend", "cuda", cwd=tmp_path)
    assert out.returncode == 2
    assert one_line_error(out) == ("error: --backend cuda: torch sees no CUDA GPU on this machine "
                                   "(torch.cuda.is_available() is False); use --backend interpreter, or auto")
    assert not (tmp_path / "work").exists() and not (tmp_path / "d2k.duckdb").exists()


def run_main(args, capsys) -> tuple[int, str, str]:
    """The CLI's `main` in this process (fast: no interpreter start)."""
    from d2k import cli

    argv = sys.argv
    sys.argv = ["d2k", *args]
    try:
        cli.main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.argv = argv
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _edit(path, old, new, count=1):
    text = path.read_text()
    assert old in text, f"fixture drift: {old!r} not in {path}"
    path.write_text(text.replace(old, new, count))


def _depends(root, item, deps):
    path = root / "design_rubrics/rmsnorm.toml"
    text = path.read_text()
    start = text.index(f'id = "{item}"')
    dep = text.index("depends_on", start)
    end = text.index("\n", dep)
    path.write_text(text[:dep] + f"depends_on = {json.dumps(deps)}" + text[end:])


def _break(root, case):
    wl = root / "workloads/rmsnorm.jsonl"
    first = wl.read_text().splitlines()[0]
    if case == "cycle":
        _depends(root, "L1.fp32_one_pass", ["L2.row_per_program"])
    elif case == "unknown dependency":
        _depends(root, "L1.rsqrt_mul", ["L9.nothing"])
    elif case == "self dependency":
        _depends(root, "L1.rsqrt_mul", ["L1.rsqrt_mul"])
    elif case == "duplicate workload id":
        wl.write_text(wl.read_text() + first + "\n")
    elif case == "missing reference()":
        _edit(root / "tasks/rmsnorm/reference.py", "def reference(", "def reference_renamed(")
    elif case == "negative axis":
        record = json.loads(first)
        record["axes"]["T"] = -4
        wl.write_text(json.dumps(record) + "\n" + "\n".join(wl.read_text().splitlines()[1:]) + "\n")
    elif case == "task id differs from its folder":
        _edit(root / "tasks/rmsnorm/task.toml", 'id = "rmsnorm"', 'id = "rms_norm"')
    elif case == "undefined axis":
        _edit(root / "tasks/rmsnorm/task.toml", 'shape = ["T", "H"]', 'shape = ["T", "Q"]')


CONTENT_FAULTS = {
    "cycle": "design_rubrics/rmsnorm.toml: depends_on: dependency cycle: ",
    "unknown dependency": "design_rubrics/rmsnorm.toml: items.L1.rsqrt_mul.depends_on: unknown item 'L9.nothing' "
                          "(cross-task links go in `related`)",
    "self dependency": "design_rubrics/rmsnorm.toml: items.L1.rsqrt_mul.depends_on: an item cannot depend on itself",
    "duplicate workload id": "workloads/rmsnorm.jsonl: rmsnorm_",
    "missing reference()": "tasks/rmsnorm/reference.py: reference: no top-level function reference()",
    "negative axis": "workloads/rmsnorm.jsonl:1: axes.T: -4 is not a size: an axis is at least 1",
    "task id differs from its folder": "tasks/rmsnorm/task.toml: id: 'rms_norm' differs from its folder name",
    "undefined axis": "tasks/rmsnorm/task.toml: signature.inputs.0.shape: 'Q' is defined by no workload in "
                      "workloads/rmsnorm.jsonl (axes or params)",
}
COMMANDS = {
    "eval": ("eval", "rmsnorm", "expert", "--backend", "interpreter"),
    "bench": ("bench", "--tasks", "rmsnorm", "--backend", "interpreter"),
    "judge": ("judge", "expert", "--task", "rmsnorm"),
}


@pytest.mark.parametrize("case", sorted(CONTENT_FAULTS))
def test_invalid_content_is_refused_before_any_run(tmp_path, monkeypatch, capsys, case):
    root = small_content(tmp_path / "content")
    _break(root, case)
    monkeypatch.setenv("D2K_ROOT", str(root))
    for name, args in COMMANDS.items():
        code, out, err = run_main(args, capsys)
        assert code == 2, (name, err)
        assert "Traceback" not in err
        lines = err.strip().splitlines()
        problem_lines = [line.removeprefix("error: ").strip() for line in lines]
        assert any(line.startswith(CONTENT_FAULTS[case]) for line in problem_lines), (name, err)
        if case == "duplicate workload id":
            assert any("workload id also used in workloads/rmsnorm.jsonl" in line for line in lines), err
        assert not (tmp_path / "work").exists(), name  # no worker, no run
        assert not (tmp_path / "d2k.duckdb").exists(), name  # not even a store


# -- validate ----------------------------------------------------------------------------------
def _validate_lines(root, monkeypatch, capsys) -> list[str]:
    monkeypatch.setenv("D2K_ROOT", str(root))
    code, out, err = run_main(("validate",), capsys)
    assert code == 1 and "Traceback" not in err
    return [line.removeprefix("✗ ") for line in err.strip().splitlines()[:-1]]


def _workload_line(root, **changes):
    wl = root / "workloads/rmsnorm.jsonl"
    record = json.loads(wl.read_text().splitlines()[0])
    record["id"] = "rmsnorm_probe"
    for key, value in changes.items():
        record[key] = value
    wl.write_text(wl.read_text() + json.dumps(record) + "\n")
    return len(wl.read_text().splitlines())


@pytest.mark.parametrize("axes, message", [
    ({"T": 10**12, "H": 4096}, "axes.T: 1000000000000 is larger than the bound 2147483647 (2**31 - 1)"),
    ({"T": 0, "H": 4096}, "axes.T: 0 is not a size: an axis is at least 1"),
    ({"T": 2.5, "H": 4096}, "axes.T: Input should be a valid integer"),
])
def test_axis_bounds(tmp_path, monkeypatch, capsys, axes, message):
    root = small_content(tmp_path / "content")
    line = _workload_line(root, axes=axes)
    assert _validate_lines(root, monkeypatch, capsys) == [f"workloads/rmsnorm.jsonl:{line}: {message}"]


def test_memory_bound_per_workload(tmp_path, monkeypatch, capsys):
    root = small_content(tmp_path / "content")
    _workload_line(root, axes={"T": 2**20, "H": 2**20}, tag="bench")
    assert _validate_lines(root, monkeypatch, capsys) == [
        "workloads/rmsnorm.jsonl[rmsnorm_probe]: axes: the tensors need 4 TiB (inputs and outputs once), "
        "over the 16 GiB bound of a bench workload"]
    root = small_content(tmp_path / "content2")
    _workload_line(root, axes={"T": 2**14, "H": 4096}, tag="smoke")
    assert _validate_lines(root, monkeypatch, capsys) == [
        "workloads/rmsnorm.jsonl[rmsnorm_probe]: axes: the tensors need 256 MiB (inputs and outputs once), "
        "over the 64 MiB bound of a smoke workload"]


@pytest.mark.parametrize("old, new, message", [
    ("atol = ", "atol = 1e30 #", "tolerance.atol: Input should be less than or equal to 1"),
    ("rtol = ", "rtol = nan #", "tolerance.rtol: Input should be a finite number"),
    ("rtol = ", "rtol = -1 #", "tolerance.rtol: Input should be greater than or equal to 0"),
])
def test_tolerance_bounds(tmp_path, monkeypatch, capsys, old, new, message):
    root = small_content(tmp_path / "content")
    _edit(root / "tasks/rmsnorm/task.toml", old, new)
    assert _validate_lines(root, monkeypatch, capsys) == [f"tasks/rmsnorm/task.toml: {message}"]


def test_undefined_axis_is_one_line_on_task_toml(tmp_path, monkeypatch, capsys):
    root = small_content(tmp_path / "content")
    _break(root, "undefined axis")
    assert _validate_lines(root, monkeypatch, capsys) == [CONTENT_FAULTS["undefined axis"]]


def test_workload_ids_survive_the_terminal(tmp_path, monkeypatch, capsys):
    """`file[workload_id]` is printed as text, not read as rich markup (which would drop it)."""
    root = small_content(tmp_path / "content")
    wl = root / "workloads/rmsnorm.jsonl"
    record = json.loads(wl.read_text().splitlines()[0])
    del record["axes"]["H"]
    record["id"] = "rmsnorm_broken"
    wl.write_text(wl.read_text() + json.dumps(record) + "\n")
    monkeypatch.setenv("TERM", "xterm-256color")
    from d2k.cli import common

    monkeypatch.setattr(common, "err_console", common.Console(stderr=True, force_terminal=True, width=200))
    lines = _validate_lines(root, monkeypatch, capsys)
    assert any("workloads/rmsnorm.jsonl[rmsnorm_broken]: axes: missing axis H" in line for line in lines), lines


# -- tables ------------------------------------------------------------------------------------
def test_tables_never_cut_ids_at_80_columns(tmp_path, monkeypatch, capsys):
    from d2k.cli import common

    root = small_content(tmp_path / "content", ("fused_linear_cross_entropy", "moe_grouped_topk_routing", "rmsnorm"))
    monkeypatch.setenv("D2K_ROOT", str(root))
    monkeypatch.setattr(common, "console", common.Console(width=80, file=io.StringIO()))
    code, _, _ = run_main(("tasks",), capsys)
    assert code == 0
    text = common.console.file.getvalue()
    for task in ("fused_linear_cross_entropy", "moe_grouped_topk_routing", "rmsnorm"):
        assert task in text
    assert "…" not in text
    # a summary table whose ids alone are wider than the terminal: printed wider, not cut
    out = common.Console(width=80, file=io.StringIO())
    ids = ["fused_linear_cross_entropy", "fused_linear_cross_entropy_llama31_8b_bt4096_with_a_long_suffix"]
    common.print_table(["task_id", "workload_id", "solution", "status", "median_ms", "reason"],
                       [[*ids, "/a/long/path/to/candidate_[v2].py", "passed", 1.25, "x[3] = 4 [red]not markup[/red]"]],
                       "GPU results", out=out)
    text = out.file.getvalue()
    assert all(i in text for i in ids) and "candidate_[v2].py" in text and "…" not in text
    assert "[red]not" in text.replace("\n", " ").replace("│", " ")


def test_an_output_folder_that_cannot_be_made_is_one_line(tmp_path):
    (tmp_path / "plain").write_text("a file, not a folder")
    out = d2k("demo", "--out", str(tmp_path / "plain" / "demo"), cwd=tmp_path)
    assert out.returncode == 2
    assert one_line_error(out).startswith(f"error: cannot write the demo to {tmp_path / 'plain' / 'demo'}: Not a directory")
    assert (tmp_path / "plain").read_text() == "a file, not a folder"


def test_bench_workloads_on_the_interpreter_come_with_a_note(tmp_path):
    content = small_content(tmp_path / "content")
    tiny = {"id": "rmsnorm_tiny_bench", "tag": "bench", "axes": {"T": 4, "H": 64}, "dtypes": {"dtype": "bfloat16"},
            "params": {"eps": 1e-5}, "seed": 1, "note": "a bench workload small enough for the interpreter"}
    path = content / "workloads" / "rmsnorm.jsonl"
    smoke_lines = [line for line in path.read_text().splitlines() if '"tag": "smoke"' in line]
    path.write_text("\n".join([json.dumps(tiny), *smoke_lines]) + "\n")   # the bench shapes swapped for a tiny one
    env = {**__import__("os").environ, "D2K_ROOT": str(content)}
    out = d2k("eval", "rmsnorm", "expert", "--workloads", "bench", "--backend", "interpreter",
              "--db", str(tmp_path / "s.duckdb"), cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    note = " ".join(out.stderr.split())
    assert "note: 1 bench workload run(s) under the CPU interpreter" in note
    assert "--workloads smoke is sized for the interpreter" in note
    smoke = d2k("eval", "rmsnorm", "expert", "--backend", "interpreter", "--db", str(tmp_path / "s.duckdb"),
                cwd=tmp_path, env=env)
    assert smoke.returncode == 0 and "note:" not in smoke.stderr
