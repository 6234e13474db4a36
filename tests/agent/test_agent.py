"""The agent and paired experiments, offline: a scripted OpenAI-compatible server on 127.0.0.1."""

import json
import subprocess
import textwrap

import agent_script
import pytest
from conftest import d2k_command
from fake_openai import Failure, FakeOpenAI

from d2k.agent.tools import Tools
from d2k.agent.workspace import Workspace


def write_spec(path, base_url, name="t", budget=20, tasks=("rmsnorm",), conditions=("guided", "unguided"),
               executor="local", timeout_s=30, max_retries=2, seeds=(0,)):
    path.write_text(textwrap.dedent(f"""
        name = "{name}"
        tasks = {json.dumps(list(tasks))}
        conditions = {json.dumps(list(conditions))}
        seeds = {json.dumps(list(seeds))}
        budget = {budget}
        backend = "interpreter"
        workloads = "smoke"

        [[models]]
        name = "scripted"
        model = "scripted-model"
        api_base = "{base_url}"
        timeout_s = {timeout_s}
        max_retries = {max_retries}

        [executor]
        kind = "{executor}"
        workers = 2
    """))
    return path


def d2k(*args, env=None):
    import os

    return subprocess.run(d2k_command(*args), capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})})


def sql(query):
    out = d2k("sql", query, "--format", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_paired_experiment_end_to_end_and_resume(tmp_path):
    with FakeOpenAI(agent_script.full_attempt) as server:
        spec = write_spec(tmp_path / "spec.toml", server.base_url)
        out = d2k("experiment", "run", str(spec))
        assert out.returncode == 0, out.stderr + out.stdout
        assert len(server.requests) == 12  # 2 attempts x 6 turns
        first_user = [r["messages"][1]["content"] for r in server.requests if len(r["messages"]) == 2]
        assert sum("Expert design guidance" in m for m in first_user) == 1  # only the guided condition
        assert all(r["tools"] and r["temperature"] == 0.0 for r in server.requests)
        # resuming a finished experiment runs nothing again
        again = d2k("experiment", "run", str(spec))
        assert again.returncode == 0 and "0 finished, 0 failed, 2 already done" in again.stderr
        assert len(server.requests) == 12
    rows = sql("SELECT condition, status, agent_status, turns, correct, passed, workloads, submission_choice "
               "FROM v_attempts ORDER BY condition")
    assert [r["condition"] for r in rows] == ["guided", "unguided"]
    for r in rows:
        assert (r["status"], r["agent_status"], r["turns"], r["correct"], r["submission_choice"]) == \
            ("finished", "submitted", 6, True, "submitted")
        assert r["passed"] == r["workloads"] >= 1
    turns = sql("SELECT count(*) AS n, count(content_blob) AS with_text, sum(prompt_tokens) > 0 AS tokens FROM turns")
    assert turns == [{"n": 12, "with_text": 12, "tokens": True}]
    # the failing check the agent saw is in its transcript
    results = sql("SELECT b.path FROM turns t JOIN blobs b ON b.blob_id = t.tool_results_blob WHERE t.turn = 2 LIMIT 1")
    from pathlib import Path

    assert "outside tolerance" in Path(results[0]["path"]).read_text()
    status = d2k("experiment", "status", str(spec), env={"COLUMNS": "200"})
    assert status.returncode == 0 and "scripted" in status.stdout
    paired = sql("SELECT guided_correct, unguided_correct FROM v_paired")
    assert paired == [{"guided_correct": 1.0, "unguided_correct": 1.0}]


def test_budget_exhaustion_takes_the_last_written_file(tmp_path):
    with FakeOpenAI(agent_script.wastes_budget) as server:
        spec = write_spec(tmp_path / "spec.toml", server.base_url, budget=4, conditions=("unguided",))
        out = d2k("experiment", "run", str(spec))
        assert out.returncode == 0, out.stderr
        assert len(server.requests) == 4
    rows = sql("SELECT agent_status, turns, submission_choice, correct FROM v_attempts")
    assert rows == [{"agent_status": "budget_exhausted", "turns": 4, "submission_choice": "last written file", "correct": True}]


def test_malformed_and_unknown_tool_calls_are_tool_errors(tmp_path):
    with FakeOpenAI(agent_script.misbehaves) as server:
        spec = write_spec(tmp_path / "spec.toml", server.base_url, conditions=("unguided",))
        out = d2k("experiment", "run", str(spec))
        assert out.returncode == 0, out.stderr
        tool_msgs = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert "not valid JSON" in tool_msgs[0]
    assert "unknown tool 'rm_rf'" in tool_msgs[1]
    assert "before any other file" in tool_msgs[2]
    assert "outside the workspace" in tool_msgs[3]
    assert not (tmp_path / "escape.py").exists()
    rows = sql("SELECT agent_status, turns, correct FROM v_attempts")
    assert rows == [{"agent_status": "submitted", "turns": 8, "correct": True}]
    notes = sql("SELECT note FROM turns WHERE turn = 2")
    assert notes == [{"note": "no tool call: nudged"}]


def test_endpoint_errors_and_timeouts_are_retried(tmp_path):
    def flaky(body, n):
        if n == 0:
            return Failure(503)
        if n == 1:
            return Failure(200, delay_s=3.0, body="{}")  # the client times out at 1 s and retries
        return agent_script.straight_submit(body, n)  # the retries are the subject: no checks

    with FakeOpenAI(flaky) as server:
        spec = write_spec(tmp_path / "spec.toml", server.base_url, conditions=("unguided",), timeout_s=1, max_retries=3)
        out = d2k("experiment", "run", str(spec))
        assert out.returncode == 0, out.stderr
        assert len(server.requests) == 5  # 3 turns + 2 retried failures
    assert sql("SELECT agent_status FROM v_attempts") == [{"agent_status": "submitted"}]


def test_an_endpoint_that_keeps_failing_ends_the_attempt_cleanly(tmp_path):
    with FakeOpenAI(lambda body, n: Failure(500)) as server:
        spec = write_spec(tmp_path / "spec.toml", server.base_url, conditions=("unguided",), max_retries=1)
        out = d2k("experiment", "run", str(spec))
        assert out.returncode == 0, out.stderr
    rows = sql("SELECT status, agent_status, turns, submission_choice FROM v_attempts")
    assert rows == [{"status": "finished", "agent_status": "endpoint_error", "turns": 0, "submission_choice": "nothing written"}]


def test_interrupted_experiment_resumes_without_rerunning_finished_attempts(tmp_path):
    from d2k.content import Benchmark
    from d2k.experiment import spec as spec_mod
    from d2k.experiment.driver import register, run_experiment
    from d2k.store import Store

    with FakeOpenAI(agent_script.full_attempt) as server:
        path = write_spec(tmp_path / "spec.toml", server.base_url)
        spec = spec_mod.load(path)
        store = Store(tmp_path / "r.duckdb")
        bench = Benchmark.load(only=["rmsnorm"])
        attempts = register(store, spec, path)
        guided = next(a for a in attempts if a["condition"] == "guided")
        unguided = next(a for a in attempts if a["condition"] == "unguided")
        # a finished attempt, and one a crashed run left 'running' with a half-written workspace
        store.con.execute("UPDATE attempts SET status = 'finished' WHERE attempt_id = ?", [guided["attempt_id"]])
        store.con.execute("UPDATE attempts SET status = 'running' WHERE attempt_id = ?", [unguided["attempt_id"]])
        stale = tmp_path / "work" / "experiments" / spec.name / unguided["attempt_id"] / "workspace"
        stale.mkdir(parents=True)
        (stale / "half_written.py").write_text("def run(")
        counts = run_experiment(spec, path, store, bench, tmp_path / "work", "interpreter")
        assert counts["finished"] == 1 and counts["skipped"] == 1
        assert len(server.requests) == 6  # only the interrupted attempt ran, once
        assert not (stale / "half_written.py").exists()
        _, rows = store.query("SELECT status FROM attempts ORDER BY condition")
        assert rows == [("finished",), ("finished",)]


@pytest.mark.slow  # a Ray cluster's start-up (raylet, GCS, workers): about 25 s of the suite's 2 cores
def test_ray_executor_in_local_mode(tmp_path):
    pytest.importorskip("ray")
    with FakeOpenAI(agent_script.full_attempt) as server:
        spec = write_spec(tmp_path / "spec.toml", server.base_url, conditions=("unguided",), executor="ray")
        out = d2k("experiment", "run", str(spec))
        assert out.returncode == 0, out.stderr + out.stdout
        assert "ray (" in out.stderr
    assert sql("SELECT status, agent_status, correct FROM v_attempts") == [
        {"status": "finished", "agent_status": "submitted", "correct": True}]


def test_workspace_refuses_paths_outside(tmp_path):
    ws = Workspace(tmp_path / "ws")
    (tmp_path / "secret.txt").write_text("s")
    tools = Tools(ws, evaluator=None)
    for bad in ("../secret.txt", "/etc/passwd", "a/../../secret.txt"):
        ok, text = tools.call("read_file", json.dumps({"path": bad}))
        assert not ok and "outside the workspace" in text
    (ws.root / "link").symlink_to(tmp_path)
    ok, text = tools.call("read_file", json.dumps({"path": "link/secret.txt"}))
    assert not ok and "outside the workspace" in text
