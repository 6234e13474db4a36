"""The benchmark's content: ``d2k tasks``, ``d2k validate`` and ``d2k task new``."""

from __future__ import annotations

import json

import typer
from rich.markup import escape

from d2k.cli import common
from d2k.cli.common import EXIT_FAILED, app, load_bench, needs_a_command, print_table


@app.command()
def tasks(as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")):
    """List the tasks with their workloads and design items."""
    bench = load_bench()
    rows = []
    for task_id, task in bench.tasks.items():
        wl = bench.workloads.get(task_id, [])
        items = bench.items(task_id)
        rows.append({
            "task": task_id, "catalog": task.catalog, "category": task.category,
            "bench": sum(w.tag == "bench" for w in wl), "smoke": sum(w.tag == "smoke" for w in wl),
            "items": len(items), "edges": sum(len(i.depends_on) for i in items), "title": task.title,
        })
    if as_json:
        for row in rows:
            # what a solution's run() takes and returns (names, dtypes, shapes over the axes)
            sig = bench.tasks[row["task"]].signature
            row["entry_point"] = bench.tasks[row["task"]].entry_point
            # the baseline whose time is the eager figure, where the reference is a sequential definition
            row["eager_stand_in"] = bench.tasks[row["task"]].performance.eager_stand_in
            row["signature"] = {
                "inputs": [t.model_dump(exclude_none=True, exclude_defaults=True) | {"name": t.name} for t in sig.inputs],
                "outputs": [t.model_dump(exclude_none=True, exclude_defaults=True) | {"name": t.name} for t in sig.outputs],
            }
        print(json.dumps(rows, indent=2))
        return
    cols = ["task", "catalog", "category", "bench", "smoke", "items", "edges", "title"]
    print_table(cols, [[row[c] for c in cols] for row in rows], f"{len(rows)} tasks",
                right=("bench", "smoke", "items", "edges"))


@app.command()
def validate(as_json: bool = typer.Option(False, "--json", help="Print problems as JSON.")):
    """Check every task, workload and rubric file against its schema and the others, running nothing."""
    from d2k.validate import as_json as problems_json
    from d2k.validate import validate as run_validate

    problems, stats = run_validate()
    if as_json:
        print(problems_json(problems))
    else:
        for p in problems:
            common.err_console.print(f"[red]✗[/red] {escape(str(p))}", highlight=False, soft_wrap=True)
        summary = (f"{stats['tasks']} tasks, {stats['workloads']} workloads ({stats['bench']} bench, "
                   f"{stats['smoke']} smoke), {stats['items']} design items, {stats['edges']} edges")
        if problems:
            common.err_console.print(f"{len(problems)} problem(s) in {summary}", highlight=False, soft_wrap=True)
        else:
            common.console.print(f"[green]✓[/green] valid: {summary}", highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_FAILED if problems else 0)


task_app = typer.Typer(help="Task authoring: scaffold a new task across its folders (docs/new_task.md).")
app.add_typer(task_app, name="task")
task_app.callback(invoke_without_command=True)(needs_a_command)


@task_app.command("new")
def task_new(
    task_id: str = typer.Argument(..., help="The new task's id (lower_snake_case)."),
    catalog: str | None = typer.Option(None, "--catalog", help="Catalog number TNN (default: the next free one)."),
    title: str | None = typer.Option(None, "--title", help="One-line title (default: a TODO)."),
):
    """Write a new task's files (task.toml, reference/expert/naive, workloads, rubric, gold manifest) with TODO markers."""
    from d2k.content import find_root
    from d2k.scaffold import MARKER, new_task

    root = find_root()
    for path in new_task(root, task_id, catalog=catalog, title=title):
        common.console.print(str(path.relative_to(root)), highlight=False, markup=False)
    common.console.print(f"next: resolve every {MARKER} marker (`d2k validate` lists the files left); see docs/new_task.md",
                         highlight=False, markup=False, soft_wrap=True)
