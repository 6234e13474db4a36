"""``d2k demo``: a demo store built by the real pipeline, offline, in well under a minute.

A scripted OpenAI-compatible server on 127.0.0.1 plays two "models" and an LLM judge. The models
run a paired experiment through ``d2k experiment run``'s code (the agent loop over HTTP, the
tools, isolated evaluation of each submission under the CPU Triton interpreter, the static judge,
the hybrid LLM judge and the proposal judge of DESIGN.md), on two tasks, guided and unguided:

- ``demo-diligent`` writes DESIGN.md from the guidance it is given (generic prose without it) and
  submits the task's expert kernel when guided, its naive kernel when not;
- ``demo-hasty`` lists only the L1 properties when guided, submits rmsnorm's expert and
  silu_and_mul's naive kernel; unguided it submits a wrong rmsnorm (incorrect), and its
  silu_and_mul attempt is made to fail inside the harness on purpose (the demo injects the fault)
  so the tables show how a harness failure is counted.

The scripted judge echoes the static verdict where the static judge decided one and says
``partial`` where it could not; on proposals it answers ``covered`` when DESIGN.md names the
property. Nothing here measures a model, a judge or a GPU: the store is flagged as a demo (meta
key ``demo``; the ``demo`` column of v_headline and v_attempts) and the report says so at the top.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import textwrap
import time
from pathlib import Path

from d2k.errors import D2KError
from d2k.loopback import ChatServer

TASKS = ("rmsnorm", "silu_and_mul")
MODELS = ("demo-diligent", "demo-hasty")
JUDGE_MODEL = "demo-judge"
DEMO_NOTE = ("demo store built by `d2k demo`: a scripted model and a scripted judge on the CPU interpreter; "
             "no number in it measures a model, a judge or a GPU")
WRONG_RMSNORM = "import torch\n\n\ndef run(x, w, eps):\n    return x.clone()\n"
FAULT = ("demo-hasty", "silu_and_mul", "unguided")


# -- the scripted endpoint --------------------------------------------------------------------
def _task_of(body: dict) -> str:
    for m in body.get("messages", []):
        found = re.search(r"^# Task: (\S+)", str(m.get("content") or ""), re.M)
        if found:
            return found.group(1)
    return TASKS[0]


def _guided(body: dict) -> bool:
    return any("## Expert design guidance" in str(m.get("content") or "") for m in body.get("messages", []))


def _guidance_items(body: dict) -> list[tuple[str, str]]:
    text = "\n".join(str(m.get("content") or "") for m in body.get("messages", []) if m.get("role") == "user")
    return re.findall(r"^- \*\*(L\d\.[^*]+)\*\* (.+?)(?: \(builds on [^)]*\))?: ", text, re.M)


def _call(name: str, args: dict, n: int) -> dict:
    return {"id": f"call_{n}_{name}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _design(body: dict, model: str) -> str:
    items = _guidance_items(body)
    if not items:
        return ("# Design\n\nOne program per row: load the row, compute in fp32, write the result in the "
                "input's dtype. Launch enough programs to fill the GPU.\n")
    if model == "demo-hasty":
        items = [i for i in items if i[0].startswith("L1.")]
    lines = "\n".join(f"- {item_id}: {title}" for item_id, title in items)
    return f"# Design\n\nThe kernel follows these properties of the guidance:\n\n{lines}\n"


def _solution(root: Path, model: str, task: str, guided: bool) -> str:
    if model == "demo-hasty" and not guided and task == "rmsnorm":
        return WRONG_RMSNORM
    kernel = "expert" if guided and (model == "demo-diligent" or task == "rmsnorm") else "naive"
    return (root / "tasks" / task / f"{kernel}.py").read_text(encoding="utf-8")


def agent_reply(body: dict, root: Path) -> dict:
    """The scripted model: DESIGN.md, the solution, submit."""
    model, task, guided = body.get("model", ""), _task_of(body), _guided(body)
    turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    steps = [
        ("write_file", {"path": "DESIGN.md", "content": _design(body, model)}),
        ("write_file", {"path": "solution.py", "content": _solution(root, model, task, guided)}),
        ("submit", {"path": "solution.py"}),
    ]
    name, args = steps[min(turn, len(steps) - 1)]
    return {"content": f"step {turn}", "tool_calls": [_call(name, args, turn)]}


def _field(text: str, name: str) -> str:
    found = re.search(r"\[\[ ## " + name + r" ## \]\]\s*(.*?)(?=\n\[\[ ## |\Z)", text, re.S)
    return found.group(1).strip() if found else ""


def judge_reply(body: dict) -> str:
    """The scripted judge, in DSPy's chat-adapter format."""
    user = [m for m in body.get("messages", []) if m.get("role") == "user"]
    text = str(user[-1]["content"]) if user else ""
    item = _field(text, "item")
    item_id = item.split(":", 1)[0].split()[-1] if item else "?"
    if "[[ ## design ## ]]" in text:
        design = _field(text, "design")
        line = next((ln.strip() for ln in design.splitlines() if item_id in ln), None)
        verdict, quotes = ("covered", [line]) if line else ("missing", [])
        return (f"[[ ## verdict ## ]]\n{verdict}\n\n[[ ## quotes ## ]]\n{json.dumps(quotes)}\n\n"
                f"[[ ## rationale ## ]]\nScripted demo judge: the design {'names' if line else 'does not name'} "
                f"{item_id}.\n\n[[ ## confidence ## ]]\n0.9\n\n[[ ## completed ## ]]")
    static = _field(text, "static_verdict").split(" ", 1)[0]
    verdict = static if static in ("implemented", "partial", "missing") else "partial"
    return (f"[[ ## verdict ## ]]\n{verdict}\n\n[[ ## cited_lines ## ]]\n[]\n\n[[ ## rationale ## ]]\n"
            f"Scripted demo judge: {'agrees with the static judge' if verdict == static else 'no static evidence'}."
            f"\n\n[[ ## confidence ## ]]\n0.6\n\n[[ ## completed ## ]]")


def scripted_server(root: Path) -> ChatServer:
    """The loopback endpoint of the scripted models (requests with tools) and judge (without)."""
    return ChatServer(lambda body, n: agent_reply(body, root) if body.get("tools") else judge_reply(body))


class FaultyClient:
    """The OpenAI client of the attempts, except that the chosen attempt's harness fails on purpose
    (an exception the agent loop does not catch), as a crashed worker would."""

    def __init__(self, base_url: str):
        import openai

        self._client = openai.OpenAI(base_url=base_url, api_key="demo", max_retries=0, timeout=60)
        self.chat = self
        self.completions = self

    def create(self, **request):
        if (request.get("model"), _task_of(request), "guided" if _guided(request) else "unguided") == FAULT:
            raise RuntimeError("the demo injects a harness failure into this attempt")
        return self._client.chat.completions.create(**request)


# -- building the store -----------------------------------------------------------------------
def is_demo_store(path: Path) -> bool:
    import duckdb

    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error:
        return False
    try:
        return bool(con.execute("SELECT count(*) FROM meta WHERE key = 'demo'").fetchone()[0])
    except duckdb.Error:
        return False
    finally:
        con.close()


def build(out: Path, db: Path | None = None, workers: int = 2, progress=None) -> dict:
    """Build the demo store (``out/demo.duckdb`` unless ``db``) and return what was made."""
    from d2k.content import Benchmark, find_root
    from d2k.experiment import spec as spec_mod
    from d2k.experiment.driver import run_experiment
    from d2k.judge.pipeline import LLMContext
    from d2k.judge.settings import JudgeSettings
    from d2k.store import Store

    started = time.perf_counter()
    root = find_root()
    out = out.resolve()
    db = (db or out / "demo.duckdb").resolve()
    if db.exists():
        if not is_demo_store(db):
            raise D2KError(f"{db} exists and is not a demo store: choose another --db or --out")
        db.unlink()
        for suffix in (".wal",):
            Path(str(db) + suffix).unlink(missing_ok=True)
    work = out / "work"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    bench = Benchmark.load(root, only=list(TASKS))
    store = Store(db)
    try:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        store.set_meta("demo", json.dumps({"note": DEMO_NOTE, "built": stamp, "command": "d2k demo"}))
        with scripted_server(root) as server:
            spec_path = out / "demo-spec.toml"
            models = "\n".join(textwrap.dedent(f"""
                [[models]]
                name = "{m}"
                model = "{m}"
                api_base = "{server.base_url}"
                max_retries = 0
            """) for m in MODELS)
            spec_path.write_text(textwrap.dedent(f"""
                # the spec `d2k demo` ran (a scripted endpoint on a port of its own; not for re-use)
                name = "demo"
                tasks = {json.dumps(list(TASKS))}
                conditions = ["guided", "unguided"]
                seeds = [0]
                budget = 6
                backend = "interpreter"
                workloads = "smoke"
                judge_proposals = true
                [executor]
                kind = "local"
                workers = {workers}
            """) + models, encoding="utf-8")
            spec = spec_mod.load(spec_path)
            settings = JudgeSettings(model=JUDGE_MODEL, api_base=server.base_url, api_key="demo", retries=0,
                                     concurrency=4, cache_dir=str(work / "dspy-cache"))
            judge = LLMContext(bench, settings)
            counts = run_experiment(spec, spec_path, store, bench, work, "interpreter", "local",
                                    client=FaultyClient(server.base_url), judge_context=judge, progress=progress)
            requests = len(server.requests)
        from d2k.analysis import analyze

        analyzed = analyze(store, n_boot=1000)
    finally:
        store.close()
    return {"store": db, "spec": spec_path, "work": work, "counts": counts, "requests": requests,
            "analysis": analyzed, "seconds": time.perf_counter() - started}
