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
    assert rows["rmsnorm"]["eager_stand_in"] is None and rows["mamba2_ssd_chunked"]["eager_stand_in"] == "chunked_torch"


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
    # stderr is no terminal here: each finished evaluation has its own line as it completes
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith(("[1/2] rmsnorm", "[2/2] rmsnorm"))]
    assert len(lines) == 2 and all(": passed" in ln and " ms" not in ln for ln in lines), run.stderr
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
        # a name that is neither a path nor a named solution: the names and the task's baselines are listed
        (("eval", "gdn_decode", "fla", "--backend", "interpreter"), "/tasks/gdn_decode/baselines/fla.py)"),
        (("eval", "rmsnorm", "expert", "--workloads", "huge", "--backend", "interpreter"),
         "--workloads must be bench, smoke or all"),
        (("sql", "SELEC nonsense"), "SQL error"),
        (("sql", "SELECT 1", "--format", "xml"), "--format must be table, csv or json"),
        (("calibrate",), "calibrate needs a CUDA GPU"),
        (("bench", "--tasks", "nope"), "unknown task(s): nope"),
        (("sql", "SELECT 1"), "no store at"),
        (("report",), "no store at"),
        (("experiment", "status"), "no store at"),
        (("bench", "--tasks", "rmsnorm", "--timing", "fast", "--backend", "interpreter"), "--timing must be events or span"),
        (("eval", "rmsnorm", "expert", "--timing", "span", "--backend", "interpreter"), "--timing span needs a GPU"),
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


@pytest.mark.slow  # torch.compile's C++ build on the CPU: about 30 s of the suite's 2 cores
def test_compiled_reference_is_a_checked_baseline(tmp_path):
    out = d2k("eval", "rmsnorm", "compiled", "--backend", "interpreter", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    rows = json.loads(d2k("sql", "SELECT solution, status FROM v_evaluations", "--format", "json").stdout)
    assert rows and {(r["solution"], r["status"]) for r in rows} == {("compiled", "passed")}
    query = d2k("sql", "@" + str(__import__("conftest").ROOT / "analysis/queries/baselines_table.sql"))
    assert query.returncode == 0, query.stderr  # the analysts' table query runs (empty without GPU rows)


def test_the_d2k_script_and_python_m_d2k_run_one_main():
    from importlib.metadata import entry_points

    from d2k.cli import main

    (script,) = entry_points(group="console_scripts", name="d2k")
    assert script.value == "d2k.cli:main" and script.load() is main  # `python -m d2k` (conftest's d2k_command) runs main too
    out = d2k("--help")
    assert out.returncode == 0, out.stderr
    assert " judge " in out.stdout and " experiment " in out.stdout
    assert "judge-eval" not in out.stdout  # the old spelling of `judge eval` works, unlisted
    old = d2k("judge-eval", "--help")
    assert old.returncode == 0 and "Usage: d2k judge-eval" in old.stdout and "--calibrate" in old.stdout


def test_a_mistyped_judge_sub_command_is_named_not_read_as_a_solution(tmp_path):
    # the old spelling reads a first word that names no sub-command as a solution: a near miss of one
    # is refused with the sub-command it resembles, and exit 2, before anything is judged
    for typo, meant in (("propsal", "proposal"), ("evl", "eval"), ("optimise", "optimize")):
        out = d2k("judge", typo, "--task", "rmsnorm", cwd=tmp_path)
        assert out.returncode == 2, (typo, out.stdout, out.stderr)
        assert f"did you mean `d2k judge {meant}`" in out.stderr and "Traceback" not in out.stderr
    # a file of that name is a solution, as before: it is judged, not refused as a typo
    (tmp_path / "evl").write_text("import torch\n\ndef run(x, weight, eps):\n    return x\n")
    out = d2k("judge", "evl", "--task", "rmsnorm", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["task"] == "rmsnorm"


def test_judge_sub_commands_and_the_old_spelling_agree():
    out = d2k("judge", "--help")
    assert out.returncode == 0, out.stderr
    assert all(f" {name} " in out.stdout for name in ("code", "proposal", "optimize", "eval"))
    new = d2k("judge", "code", "expert", "--task", "rmsnorm", "--json")
    assert new.returncode == 0, new.stderr
    payload = json.loads(new.stdout)
    assert payload["solution"] == "expert" and payload["judge"] == "static" and len(payload["verdicts"]) == 7
    # before the sub-commands: no `code`, options anywhere
    for old in (("judge", "expert", "--task", "rmsnorm", "--json"), ("judge", "--task", "rmsnorm", "--json", "expert")):
        out = d2k(*old)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["verdicts"] == payload["verdicts"]


def test_a_spec_with_several_mistakes_names_them_all_in_one_line(tmp_path):
    spec = tmp_path / "odd.toml"
    spec.write_text('[experiment]\nname = "x"\n')  # a table the spec does not have, and no name, tasks or models
    out = d2k("experiment", "run", str(spec), cwd=tmp_path)
    assert out.returncode == 2, (out.stdout, out.stderr)
    line = out.stderr.strip().splitlines()[-1]
    for mistake in ("name: Field required", "tasks: Field required", "models: Field required",
                    "experiment: Extra inputs are not permitted"):
        assert mistake in line, line
    assert "more)" not in line


def test_timing_modes_map_to_the_job_settings(monkeypatch):
    """--timing's names reach the job as timing settings over $D2K_TIMING's (what a GPU run uses)."""
    from d2k.cli.evaluate import timing_mode
    from d2k.job_payload import timing_settings

    monkeypatch.setenv("D2K_TIMING", '{"device_span": true, "flush_mode": "read"}')
    assert timing_settings(timing_mode(None, "cuda"))["device_span"] is True    # unset: the environment's say
    events = timing_settings(timing_mode("events", "cuda"))
    assert events["device_span"] is False and events["flush_mode"] == "read"   # the flush stays the user's
    monkeypatch.delenv("D2K_TIMING")
    span = timing_settings(timing_mode("span", "cuda"))
    assert span["device_span"] is True and span["flush_mode"] == "read"
    assert timing_settings(timing_mode("events", "cuda"))["flush_mode"] == "write"


def test_an_experiment_names_its_timing_mode_and_span_needs_a_gpu(tmp_path):
    from d2k.errors import D2KError
    from d2k.experiment import spec as spec_module

    base = ('name = "t"\ntasks = ["rmsnorm"]\n{extra}\n[[models]]\nname = "m"\nmodel = "m"\n'
            'api_base = "http://127.0.0.1:9/v1"\n')
    path = tmp_path / "s.toml"
    path.write_text(base.format(extra='timing = "span"\nbackend = "cuda"'))
    assert spec_module.load(path).timing == "span"
    path.write_text(base.format(extra=""))
    assert spec_module.load(path).timing is None     # unset: $D2K_TIMING where the attempt runs
    path.write_text(base.format(extra='timing = "span"\nbackend = "interpreter"'))
    with pytest.raises(D2KError, match="needs a GPU"):
        spec_module.load(path)
    path.write_text(base.format(extra='timing = "fast"'))
    with pytest.raises(D2KError, match="timing: Input should be 'events' or 'span'"):
        spec_module.load(path)


@pytest.mark.parametrize("backend, timing, expected", [("cuda", "span", {"device_span": True, "flush_mode": "read"}),
                                                      ("cuda", None, None), ("interpreter", "events", None)])
def test_an_attempt_times_its_tool_calls_in_the_spec_s_mode(tmp_path, monkeypatch, backend, timing, expected):
    from d2k.experiment import attempt as attempt_module

    seen = {}

    class Stop(Exception):
        pass

    def evaluator(*args, **kwargs):
        seen.update(kwargs)
        raise Stop

    monkeypatch.setattr(attempt_module, "BackendEvaluator", evaluator)
    spec = {"name": "t", "tasks": ["rmsnorm"], "backend": "cuda" if timing == "span" else "auto", "timing": timing,
            "models": [{"name": "m", "model": "m", "api_base": "http://127.0.0.1:9/v1"}]}
    with pytest.raises(Stop):
        attempt_module.run_attempt(spec, {"attempt_id": "a1", "model": "m", "task_id": "rmsnorm", "condition": "guided",
                                          "seed": 0}, str(__import__("conftest").ROOT), str(tmp_path), backend)
    assert seen["timing"] == expected
