"""The CLI through its real entry point (`python -m d2k`, the same `main` the `d2k` script runs)."""

import json
import subprocess

import pytest
from conftest import d2k_command


def d2k(*args, cwd=None, timeout=300):
    return subprocess.run(d2k_command(*args), capture_output=True, text=True, cwd=cwd, timeout=timeout)


def test_tasks_lists_the_content():
    out = d2k("tasks", "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["task"]: r for r in json.loads(out.stdout)}
    assert rows["rmsnorm"]["bench"] == 4 and rows["rmsnorm"]["smoke"] >= 1
    assert {"rmsnorm", "bf16_gemm", "flash_attention_prefill"} <= set(rows)


def test_validate_ok_and_broken(content_copy):
    ok = d2k("validate")
    assert ok.returncode == 0 and "valid:" in ok.stdout
    (content_copy / "design_rubrics/rmsnorm.toml").write_text("task = 'rmsnorm'\n[[items]]\nid = 'bad id'\n")
    bad = d2k("validate")
    assert bad.returncode == 1
    assert "design_rubrics/rmsnorm.toml: items.bad id" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_eval_smoke_then_sql_formats(tmp_path):
    run = d2k("eval", "rmsnorm", "expert", "--backend", "interpreter", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "rmsnorm" in run.stdout and "interpreter" in run.stdout
    again = d2k("eval", "rmsnorm", "expert", "--backend", "interpreter", cwd=tmp_path)
    assert again.returncode == 0 and "skipped 2 evaluation(s)" in again.stderr
    as_json = d2k("sql", "SELECT workload_id, status FROM v_evaluations ORDER BY workload_id", "--format", "json")
    rows = json.loads(as_json.stdout)
    assert len(rows) == 2 and {r["status"] for r in rows} == {"passed"}
    as_csv = d2k("sql", "SELECT status, count(*) AS n FROM evaluations GROUP BY status", "--format", "csv")
    assert as_csv.stdout.splitlines() == ["status,n", "passed,2"]


def test_eval_wrong_solution_exits_1_with_reason(tmp_path):
    wrong = tmp_path / "wrong.py"
    wrong.write_text("import torch\ndef run(x, w, eps):\n    return x.clone()\n")
    out = d2k("eval", "rmsnorm", str(wrong), "--backend", "interpreter", "--workloads", "smoke", cwd=tmp_path)
    assert out.returncode == 1
    assert "failed" in out.stderr and "outside tolerance" in out.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (("eval", "no_such_task", "expert"), "unknown task(s): no_such_task"),
        (("eval", "rmsnorm", "/nonexistent/solution.py", "--backend", "interpreter"), "solution file not found"),
        (("eval", "rmsnorm", "expert", "--workloads", "huge", "--backend", "interpreter"),
         "--workloads must be bench, smoke or all"),
        (("sql", "SELEC nonsense"), "SQL error"),
        (("sql", "SELECT 1", "--format", "xml"), "--format must be table, csv or json"),
        (("calibrate",), "calibrate needs a CUDA GPU"),
        (("bench", "--tasks", "nope"), "unknown task(s): nope"),
        (("sql", "SELECT 1"), "no store at"),
        (("report",), "no store at"),
        (("experiment", "status"), "no store at"),
    ],
)
def test_user_mistakes_are_one_line_errors(args, message, tmp_path):
    if "no store" not in message:
        from d2k.store import Store

        Store().close()  # an empty store at $D2K_DB, so the mistake under test is the only one
    out = d2k(*args, cwd=tmp_path)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert message in out.stderr
    assert "Traceback" not in out.stderr


def test_compiled_reference_is_a_checked_baseline(tmp_path):
    out = d2k("eval", "rmsnorm", "compiled", "--backend", "interpreter", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    rows = json.loads(d2k("sql", "SELECT solution, status FROM v_evaluations", "--format", "json").stdout)
    assert rows and {(r["solution"], r["status"]) for r in rows} == {("compiled", "passed")}
    query = d2k("sql", "@" + str(__import__("conftest").ROOT / "analysis/queries/baselines_table.sql"))
    assert query.returncode == 0, query.stderr  # the analysts' table query runs (empty without GPU rows)
