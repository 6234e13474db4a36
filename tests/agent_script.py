"""A scripted tool-calling 'model' for the fake OpenAI server: it plays a whole attempt."""

from __future__ import annotations

import json

WRONG = "import torch\n\ndef run(x, w, eps):\n    return x.clone()\n"
RIGHT = ("import torch\n\n\ndef run(x, w, eps):\n    xf = x.float()\n"
         "    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w\n")
DESIGN = "# Design\nOne program per row; fp32 sum of squares; multiply by rsqrt.\n"


def call(name, args, raw=None, call_id=None):
    return {"id": call_id or f"call_{name}", "type": "function",
            "function": {"name": name, "arguments": raw if raw is not None else json.dumps(args)}}


def turn_index(body: dict) -> int:
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


def full_attempt(body: dict, n: int):
    """DESIGN.md, a wrong solution, a failing check, the fix, a passing check, submit."""
    steps = [
        [call("write_file", {"path": "DESIGN.md", "content": DESIGN})],
        [call("write_file", {"path": "solution.py", "content": WRONG})],
        [call("run_correctness", {"path": "solution.py", "workloads": "smoke"})],
        [call("write_file", {"path": "solution.py", "content": RIGHT})],
        [call("run_correctness", {"path": "solution.py"})],
        [call("submit", {"path": "solution.py"})],
    ]
    i = turn_index(body)
    return {"content": f"step {i}", "tool_calls": steps[min(i, len(steps) - 1)]}


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
