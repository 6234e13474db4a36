"""A scripted tool-calling 'model' for the fake OpenAI server: it plays a whole attempt."""

from __future__ import annotations

import json

WRONG = "import torch\n\ndef run(x, w, eps):\n    return x.clone()\n"
RIGHT = ("import torch\n\n\ndef run(x, w, eps):\n    xf = x.float()\n"
         "    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w\n")
DESIGN = "# Design\nOne program per row; fp32 sum of squares; multiply by rsqrt.\n"
# correct plain-PyTorch solutions per task, for scripted runs on tasks other than rmsnorm
RIGHT_BY_TASK = {
    "rmsnorm": RIGHT,
    "silu_and_mul": ("import torch\n\n\ndef run(x):\n    d = x.shape[-1] // 2\n    xf = x.float()\n"
                     "    return (torch.nn.functional.silu(xf[..., :d]) * xf[..., d:]).to(x.dtype)\n"),
}


def task_of(body: dict) -> str:
    import re

    for m in body["messages"]:
        found = re.search(r"^# Task: (\S+)", str(m.get("content") or ""), re.M)
        if found:
            return found.group(1)
    return "rmsnorm"


def call(name, args, raw=None, call_id=None):
    return {"id": call_id or f"call_{name}", "type": "function",
            "function": {"name": name, "arguments": raw if raw is not None else json.dumps(args)}}


def turn_index(body: dict) -> int:
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


def full_attempt(body: dict, n: int):
    """DESIGN.md, a wrong solution, a failing check, the fix, a passing check, submit."""
    right = RIGHT_BY_TASK.get(task_of(body), RIGHT)
    wrong = right.replace("return ", "return 0 * ", 1) if task_of(body) != "rmsnorm" else WRONG
    steps = [
        [call("write_file", {"path": "DESIGN.md", "content": DESIGN})],
        [call("write_file", {"path": "solution.py", "content": wrong})],
        [call("run_correctness", {"path": "solution.py", "workloads": "smoke"})],
        [call("write_file", {"path": "solution.py", "content": right})],
        [call("run_correctness", {"path": "solution.py"})],
        [call("submit", {"path": "solution.py"})],
    ]
    return _play(body, steps)


def _play(body: dict, steps: list) -> dict:
    """This turn's step of a scripted attempt (the last one repeats)."""
    i = turn_index(body)
    return {"content": f"step {i}", "tool_calls": steps[min(i, len(steps) - 1)]}


def straight_submit(body: dict, n: int):
    """DESIGN.md, the right solution, submit: no check on the way."""
    steps = [
        [call("write_file", {"path": "DESIGN.md", "content": DESIGN})],
        [call("write_file", {"path": "solution.py", "content": RIGHT_BY_TASK.get(task_of(body), RIGHT)})],
        [call("submit", {"path": "solution.py"})],
    ]
    return _play(body, steps)


def wastes_budget(body: dict, n: int):
    i = turn_index(body)
    if i == 0:
        return {"content": None, "tool_calls": [call("write_file", {"path": "DESIGN.md", "content": DESIGN})]}
    if i == 1:
        return {"content": None, "tool_calls": [call("write_file", {"path": "kernel.py", "content": RIGHT})]}
    return {"content": None, "tool_calls": [call("list_files", {})]}


def misbehaves(body: dict, n: int):
    i = turn_index(body)
    script = [
        [call("write_file", {}, raw="{not json")],                       # malformed arguments
        [call("rm_rf", {"path": "/"})],                                    # unknown tool
        [call("write_file", {"path": "solution.py", "content": RIGHT})],   # code before DESIGN.md
        [call("write_file", {"path": "../escape.py", "content": "x"})],    # path traversal
        [call("write_file", {"path": "DESIGN.md", "content": DESIGN})],
        [call("write_file", {"path": "solution.py", "content": RIGHT})],
        [call("submit", {"path": "solution.py"})],
    ]
    if i == 2:
        return "I will think about it first."                             # a turn with no tool call
    return {"content": None, "tool_calls": script[min(i if i < 2 else i - 1, len(script) - 1)]}
