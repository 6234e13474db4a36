"""The agent's prompts, from templates in ``d2k/agent/templates/`` and the task's content.

Both conditions get the same system prompt, task description, signature, workloads and tools;
the guided condition also gets the rubric's guidance grouped by level with its dependencies.
"""

from __future__ import annotations

from pathlib import Path

from d2k.content import Benchmark

TEMPLATES = Path(__file__).resolve().parent / "templates"


def _template(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8")


def system_prompt(budget: int) -> str:
    return _template("system.md").replace("{budget}", str(budget))


def _tensor(spec) -> str:
    if spec.scalar:
        return f"- `{spec.name}`: a Python scalar (`{spec.value}`)"
    shape = ", ".join(str(d) for d in spec.shape)
    inplace = " — written in place" if spec.inplace else ""
    return f"- `{spec.name}`: [{shape}], dtype `{spec.dtype}`{inplace}"


def guidance_text(bench: Benchmark, task_id: str) -> str:
    levels = []
    names = {1: "L1 — algorithm", 2: "L2 — dataflow", 3: "L3 — low-level"}
    for level in (1, 2, 3):
        lines = [f"### {names[level]}"]
        for item in bench.items(task_id):
            if item.level != level:
                continue
            deps = f" (builds on {', '.join(item.depends_on)})" if item.depends_on else ""
            lines.append(f"- **{item.id}** {item.title}{deps}: {item.guidance}")
        levels.append("\n".join(lines))
    return _template("guidance.md").replace("{levels}", "\n\n".join(levels))


def task_prompt(bench: Benchmark, task_id: str, guided: bool) -> str:
    task = bench.task(task_id)
    workloads = []
    for w in bench.select_workloads(task_id, "all"):
        axes = ", ".join(f"{k}={v}" for k, v in w.axes.items())
        dtypes = ", ".join(f"{k}={v}" for k, v in w.dtypes.items())
        workloads.append(f"- `{w.id}` ({w.tag}): {axes}" + (f"; {dtypes}" if dtypes else ""))
    inplace = [o.name for o in task.signature.outputs if o.inplace]
    values = {
        "task_id": task.id, "title": task.title, "description": task.description.strip(),
        "inputs": "\n".join(_tensor(t) for t in task.signature.inputs),
        "outputs": "\n".join(_tensor(t) for t in task.signature.outputs),
        "inplace_note": f"; {', '.join(inplace)} are written in place and not returned" if inplace else "",
        "workloads": "\n".join(workloads), "atol": task.tolerance.atol, "rtol": task.tolerance.rtol,
        "guidance": guidance_text(bench, task_id) if guided else "",
    }
    text = _template("task.md")
    for key, value in values.items():
        text = text.replace("{" + key + "}", str(value))
    return text
