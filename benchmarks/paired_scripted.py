"""A full paired experiment on two tasks against the scripted OpenAI-compatible server.

    python benchmarks/paired_scripted.py [--backend auto|cuda|interpreter] [--out DIR]

Starts the scripted tool-calling 'model' of the test suite on 127.0.0.1, writes a spec for
rmsnorm and silu_and_mul in both conditions, runs `d2k experiment run` through the real entry
point, and prints the paired tables and the harness overhead per turn from the store.

The script plays the test suite's attempt (DESIGN.md, a wrong solution, a failing check, the fix,
a passing check, submit), except that its fix is a Triton kernel: the task's expert.py when the
prompt carries the expert guidance, its naive.py when it does not. So the tables compare two
known kernels through the whole pipeline (evaluation, static judge, paired views); the numbers
say nothing about any real model.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "support"))

import agent_script  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402

ROOT = HERE.parent


def kernel_attempt(body: dict, n: int):
    """agent_script.full_attempt with a Triton fix: expert.py if guided, naive.py if not."""
    reply = agent_script.full_attempt(body, n)
    if agent_script.turn_index(body) == 3:          # the script's fix: write the right solution.py
        call = reply["tool_calls"][0]
        args = json.loads(call["function"]["arguments"])
        guided = any("## Expert design guidance" in str(m.get("content") or "") for m in body["messages"])
        source = ROOT / "tasks" / agent_script.task_of(body) / ("expert.py" if guided else "naive.py")
        args["content"] = source.read_text()
        call["function"]["arguments"] = json.dumps(args)
    return reply


def d2k(*args, env):
    out = subprocess.run([sys.executable, "-m", "d2k", *args], capture_output=True, text=True, env=env)
    print(out.stdout, end="")
    if out.returncode not in (0,):
        print(out.stderr, file=sys.stderr)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--out", default=".d2k/paired-scripted")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "D2K_DB": str(out / "d2k.duckdb"), "D2K_WORKDIR": str(out / "work"), "COLUMNS": "200"}
    with FakeOpenAI(kernel_attempt) as server:
        spec = out / "spec.toml"
        spec.write_text(textwrap.dedent(f"""
            name = "paired-scripted"
            tasks = ["rmsnorm", "silu_and_mul"]
            conditions = ["guided", "unguided"]
            seeds = [0]
            budget = 350
            backend = "{args.backend}"
            workloads = "bench"
            [[models]]
            name = "scripted"
            model = "scripted-model"
            api_base = "{server.base_url}"
        """))
        d2k("experiment", "run", str(spec), env=env)
        print(f"{len(server.requests)} chat requests served")
    d2k("sql", "SELECT model, task_id, guided_correct, unguided_correct, round(guided_speedup, 3) AS guided_speedup, "
               "round(unguided_speedup, 3) AS unguided_speedup, guided_impl_score, unguided_impl_score "
               "FROM v_paired ORDER BY ALL", env=env)
    d2k("sql", """SELECT json_extract_string(tool_calls, '$[0].name') AS tool, count(*) AS turns,
                         round(median(harness_s) * 1000, 2) AS median_harness_ms, """
               """round(max(harness_s) * 1000, 2) AS max_harness_ms,
                         round(median(latency_s) * 1000, 2) AS median_endpoint_ms
                  FROM turns GROUP BY ALL ORDER BY tool""", env=env)


if __name__ == "__main__":
    main()
