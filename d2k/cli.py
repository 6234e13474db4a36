"""The ``d2k`` command line. User mistakes end in one line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from d2k.errors import D2KError

app = typer.Typer(
    add_completion=False,
    help="d2k: the D2K-Bench toolkit: content, isolated GPU evaluation, DuckDB store.",
)
console = Console()
err_console = Console(stderr=True)

DbOption = typer.Option(None, "--db", help="DuckDB file (default: $D2K_DB or ./d2k.duckdb).")


def _store(db: str | None):
    from d2k.store import Store

    return Store(db)


def _existing_store(db: str | None, read_only: bool = True):
    """The store of a command that only reads: a path that does not exist is a mistake (a typo in
    --db, another folder), not a new empty store to create and report on. Opened read-only unless
    asked: such a command cannot change the store, nor write files through DuckDB."""
    from d2k.store import Store, default_path

    path = str(db or default_path())
    if path != ":memory:" and not Path(path).expanduser().exists():
        raise D2KError(f"no store at {path}: run `d2k bench` or `d2k ingest` first, or pass --db (or set D2K_DB)")
    return Store(path, read_only=read_only)


def _bench(only: list[str] | None = None):
    from d2k.content import Benchmark

    return Benchmark.load(only=only)


def _checked_bench(only: list[str] | None = None):
    """The content a command runs or judges, refused with the validator's lines if it is invalid
    (a dependency cycle, an undefined axis, ... must not surface as a traceback mid-run)."""
    from d2k.content import ContentError
    from d2k.validate import validate

    problems, _ = validate(only=only)
    if problems:
        raise ContentError(problems)
    return _bench(only)


# columns whose values are never cut: ids, names and short values (numbers, statuses); the
# free-text columns (titles, failures, reasons) wrap instead
_FREE_TEXT_WIDTH = 16


def _print_table(cols, rows, title: str | None = None, digits: int = 4, right: tuple = (), out: Console | None = None) -> None:
    """A table whose cells are plain text (never read as rich markup: `[judge]`, `x[i]` stay), in
    which no id is truncated: short columns keep their full width, long text wraps, and when the
    terminal (or a pipe's 80 columns) is too narrow for the unbreakable columns the table is
    printed wider than it rather than cut."""
    from rich.text import Text

    cells = [[_fmt(v, digits) for v in row] for row in rows]
    table = Table(title=escape(title) if title else None)
    needed = 1
    for i, c in enumerate(cols):
        width = max([len(line) for line in str(c).splitlines() or [""]]
                    + [len(line) for row in cells for line in row[i].splitlines()])
        justify = "right" if c in right else "left"
        if width <= _FREE_TEXT_WIDTH or _is_id_column(c):
            table.add_column(Text(str(c)), justify=justify, no_wrap=True, min_width=width)
            needed += width + 3
        else:
            table.add_column(Text(str(c)), justify=justify, overflow="fold")
            needed += min(width, _FREE_TEXT_WIDTH) + 3
    for row in cells:
        table.add_row(*[Text(v) for v in row])
    out = out or console
    if needed > out.width:
        table.width = needed  # rich caps a print's width at the console's; a table's own width is not capped
    out.print(table, crop=False)


def _is_id_column(name) -> bool:
    name = str(name)
    return name in ("task", "solution", "workload", "key", "item", "model", "label", "judge") or name.endswith("_id")


def _fmt(value, digits: int = 4) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        if math.isnan(value):
            return "—"
        return f"{value:.{digits}g}"
    return str(value)


class RichProgress:
    def __init__(self, label: str):
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("{task.fields[current]}"), console=err_console, transient=False,
        )
        self.label = label
        self.task = None

    def start(self, total: int) -> None:
        self.progress.start()
        self.task = self.progress.add_task(self.label, total=total, current="")

    def workload(self, text: str) -> None:
        self.progress.update(self.task, current=escape(text))  # a path like cand_[v2].py is not markup

    def advance(self) -> None:
        self.progress.advance(self.task)

    def stop(self) -> None:
        if self.task is not None:
            self.progress.update(self.task, current="")
        self.progress.stop()


# --------------------------------------------------------------------------------------------
@app.command()
def tasks(as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")):
    """List the tasks with their workloads and design items."""
    bench = _bench()
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
            row["signature"] = {
                "inputs": [t.model_dump(exclude_none=True, exclude_defaults=True) | {"name": t.name} for t in sig.inputs],
                "outputs": [t.model_dump(exclude_none=True, exclude_defaults=True) | {"name": t.name} for t in sig.outputs],
            }
        print(json.dumps(rows, indent=2))
        return
    cols = ["task", "catalog", "category", "bench", "smoke", "items", "edges", "title"]
    _print_table(cols, [[row[c] for c in cols] for row in rows], f"{len(rows)} tasks",
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
            err_console.print(f"[red]✗[/red] {escape(str(p))}", highlight=False, soft_wrap=True)
        summary = (f"{stats['tasks']} tasks, {stats['workloads']} workloads ({stats['bench']} bench, "
                   f"{stats['smoke']} smoke), {stats['items']} design items, {stats['edges']} edges")
        if problems:
            err_console.print(f"{len(problems)} problem(s) in {summary}", highlight=False, soft_wrap=True)
        else:
            console.print(f"[green]✓[/green] valid: {summary}", highlight=False, soft_wrap=True)
    raise typer.Exit(1 if problems else 0)


# --------------------------------------------------------------------------------------------
def _summary(store, env: dict, solution_ids: list[str], per_workload: bool) -> None:
    if not solution_ids:
        return
    backend = env.get("backend")
    placeholders = ",".join("?" * len(solution_ids))
    if backend == "cuda" and per_workload:
        cols, rows = store.query(
            f"""SELECT task_id, workload_id, solution, status, median_ms, iqr_ms, reference_ms, speedup, sol_fraction
                FROM v_workload_speedup WHERE env_id = ? AND solution_id IN ({placeholders})
                ORDER BY task_id, workload_id, solution""", [env["env_id"], *solution_ids])
        title = f"GPU results on {env.get('gpu_name')} (median of per-call times, L2 flushed)"
    elif backend == "cuda":
        cols, rows = store.query(
            f"""SELECT task_id, solution, workloads, passed, geomean_speedup, geomean_sol_fraction
                FROM v_task_speedup WHERE env_id = ? AND solution_id IN ({placeholders})
                ORDER BY task_id, solution""", [env["env_id"], *solution_ids])
        title = f"Per task on {env.get('gpu_name')}: geometric means over bench workloads"
    else:
        cols, rows = store.query(
            f"""SELECT task_id, solution, count(*) AS workloads,
                       count(*) FILTER (WHERE status = 'passed') AS passed,
                       string_agg(CASE WHEN status <> 'passed' THEN workload_id || ': ' || status END, '; ') AS failures,
                       round(sum(seconds), 1) AS wall_s
                FROM v_evaluations WHERE env_id = ? AND solution_id IN ({placeholders})
                GROUP BY ALL ORDER BY task_id, solution""", [env["env_id"], *solution_ids])
        title = "Correctness under the CPU Triton interpreter (timings there are not kernel speed)"
    _print_table(cols, rows, title)


def _backend(requested: str) -> str:
    """The backend to run on; `cuda` on a machine where torch sees no GPU is refused here, before
    any worker starts."""
    from d2k.execution.probe import detect_backend

    backend = detect_backend(requested)
    if backend == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise D2KError("--backend cuda: torch sees no CUDA GPU on this machine (torch.cuda.is_available() "
                           "is False); use --backend interpreter, or auto")
    return backend


def _run(bench_content, plans, backend: str, command: str, args: dict, db, force: bool, per_workload: bool, timeout: float,
         timed: bool = True):
    from d2k.runner import Limits
    from d2k.sweep import run_sweep

    store = _store(db)
    progress = RichProgress(command)
    limits = Limits(per_workload_s=timeout, total_s=max(timeout * 4, 3600.0))
    try:
        result = run_sweep(bench_content, store, plans, backend, command, args, limits=limits, force=force, progress=progress,
                           timed=timed)
    finally:
        progress.stop()
    if result.skipped:
        err_console.print(f"skipped {result.skipped} evaluation(s) already stored for this environment (--force to redo)")
    failed = [r for r in result.records if r["status"] != "passed"]
    for r in failed:
        err_console.print(f"[red]{escape(str(r['status']))}[/red] "
                          + escape(f"{r['task_id']} · {r['solution']} · {r['workload_id']}: {r.get('reason')}"),
                          highlight=False, soft_wrap=True)
    _summary(store, result.env, sorted({p.solution.solution_id for p in plans}), per_workload)
    err_console.print(f"run {result.run_id}: results in {result.results_path}, store {store.path}", markup=False, highlight=False)
    store.close()
    return result


@app.command("eval")
def eval_cmd(
    task: str = typer.Argument(..., help="Task id (see `d2k tasks`)."),
    solution: str = typer.Argument(..., help="A solution file, or expert | naive | reference | compiled."),
    workloads: str = typer.Option("auto", help="bench | smoke | all (auto: bench on a GPU, smoke on the interpreter)."),
    backend: str = typer.Option("auto", help="auto | cuda | interpreter."),
    reference: bool = typer.Option(True, help="Also time the PyTorch reference (for the speedup)."),
    force: bool = typer.Option(False, help="Re-run evaluations the store already holds."),
    timeout: float = typer.Option(600.0, help="Seconds per workload before the worker is killed."),
    db: str | None = DbOption,
):
    """Check and time one solution on a task's workloads, each solution in its own process."""
    from d2k.solutions import resolve
    from d2k.sweep import Plan

    bench = _checked_bench([task])
    backend = _backend(backend)
    tag = workloads if workloads != "auto" else ("bench" if backend == "cuda" else "smoke")
    selected = bench.select_workloads(task, tag)
    if not selected:
        raise D2KError(f"task {task} has no {tag} workloads")
    plans = [Plan(resolve(bench, task, solution), selected)]
    if reference and solution != "reference" and backend == "cuda":
        plans.append(Plan(resolve(bench, task, "reference"), selected))
    result = _run(bench, plans, backend, "eval", {"task": task, "solution": solution, "workloads": tag}, db, force, True, timeout)
    if any(r["status"] != "passed" for r in result.records if r["solution_id"] == plans[0].solution.solution_id):
        raise typer.Exit(1)


@app.command()
def bench(
    tasks: str | None = typer.Option(None, "--tasks", help="Comma-separated task ids (default: all)."),
    solution: list[str] | None = typer.Option(None, "--solution",
                                       help="expert | naive | reference | compiled (torch.compile of the reference) | "
                                            "baselines (each library adapter in tasks/<id>/baselines/) | PATH; "
                                            "repeat for several."),
    workloads: str = typer.Option("auto", help="bench | smoke | all (auto: bench on a GPU, smoke on the interpreter)."),
    backend: str = typer.Option("auto", help="auto | cuda | interpreter."),
    force: bool = typer.Option(False, help="Re-run evaluations the store already holds."),
    time_interpreter: bool = typer.Option(False, "--time-interpreter",
                                          help="Also time calls under the CPU interpreter (wall clock, never kernel speed)."),
    per_workload: bool = typer.Option(False, "--per-workload", help="Summarise per workload instead of per task."),
    timeout: float = typer.Option(600.0, help="Seconds per workload before the worker is killed."),
    db: str | None = DbOption,
):
    """Run solutions over tasks (default: every task's expert, naive and reference) and summarise."""
    from d2k.solutions import resolve
    from d2k.sweep import Plan

    only = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else None
    bench_content = _checked_bench(only)
    backend = _backend(backend)
    tag = workloads if workloads != "auto" else ("bench" if backend == "cuda" else "smoke")
    # Defaults: on a GPU every task's expert, naive and reference, checked and timed; under the CPU
    # interpreter the experts' correctness only (its timings are never kernel speed, and every
    # solution costs two process starts there), so the README's main job stays short.
    if not solution:
        solution = ["expert", "naive", "reference"] if backend == "cuda" else ["expert"]
    timed = backend == "cuda" or time_interpreter
    plans = []
    for task_id in bench_content.tasks:
        selected = bench_content.select_workloads(task_id, tag)
        for name in solution:
            if name == "naive" and not (bench_content.task_dir(task_id) / "naive.py").is_file():
                continue
            if name == "reference" and backend != "cuda":
                continue  # the reference is the comparison; timing it on the interpreter means nothing
            if name == "baselines":
                from d2k.solutions import baselines

                plans.extend(Plan(b, selected) for b in baselines(bench_content, task_id) if selected)
                continue
            if selected:
                plans.append(Plan(resolve(bench_content, task_id, name), selected))
    if not plans:
        raise D2KError("nothing to run: no workloads or solutions matched")
    result = _run(bench_content, plans, backend, "bench",
                  {"tasks": only, "solutions": solution, "workloads": tag, "timed": timed},
                  db, force, per_workload, timeout, timed=timed)
    if any(r["status"] != "passed" for r in result.records):
        raise typer.Exit(1)


@app.command()
def calibrate(db: str | None = DbOption):
    """Measure copy bandwidth and bf16/fp8/fp32 matmul peaks on this GPU and store them with the environment."""
    import uuid

    from d2k import runner
    from d2k.execution.probe import detect_backend, probe_environment
    from d2k.sweep import work_dir

    backend = "cuda"
    if detect_backend("auto") != "cuda":
        raise D2KError("calibrate needs a CUDA GPU (torch sees none)")
    directory = work_dir() / "calibrations" / uuid.uuid4().hex[:8]
    env = probe_environment(backend, directory)
    with console.status("measuring copy bandwidth and matmul peaks…"):
        cal = runner.run_single({"kind": "calibrate", "backend": backend, "timing": {}}, directory, "calibration", 900)
    store = _store(db)
    store.add_environment(env)
    store.add_calibration(uuid.uuid4().hex, env, cal)
    table = Table(title=f"Calibration of {env.get('gpu_name')} (sm {env.get('compute_capability')}, driver {env.get('driver')})")
    table.add_column("ceiling")
    table.add_column("measured", justify="right")
    table.add_row("copy bandwidth (read + write)", f"{cal['copy_bytes_per_s'] / 1e12:.3f} TB/s")
    for key, label in (("bf16_flops_per_s", "bf16 matmul"), ("fp8_flops_per_s", "fp8 matmul"),
                       ("fp32_flops_per_s", "fp32 matmul (no tf32)")):
        if cal.get(key):
            table.add_row(label, f"{cal[key] / 1e12:.1f} TFLOP/s")
    console.print(table)
    (directory / "calibration.json").write_text(json.dumps({"env": env, "calibration": cal}, indent=1, default=str))
    console.print(f"stored, and written to {directory / 'calibration.json'} (for d2k ingest elsewhere)")
    store.close()


# SQL may begin with a `--` comment: an unknown "option" is taken as the query, not a usage error
@app.command(context_settings={"ignore_unknown_options": True})
def sql(
    query: str = typer.Argument(..., help="A SQL query over the store's tables and v_* views."),
    format: str = typer.Option("table", "--format", help="table | csv | json."),
    write: bool = typer.Option(False, "--write", help="Open the store read-write (default: read-only: no "
                               "INSERT/UPDATE/DELETE/DDL, no COPY TO or other file access)."),
    db: str | None = DbOption,
):
    """Run SQL against the store (read-only unless --write) and print the result."""
    if format not in ("table", "csv", "json"):
        raise D2KError(f"--format must be table, csv or json, not {format!r}")
    if query.startswith("@"):
        path = Path(query[1:])
        if not path.is_file():
            raise D2KError(f"SQL file not found: {path}")
        try:
            query = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            raise D2KError(f"{path} is not a readable UTF-8 text file") from None
    store = _existing_store(db, read_only=not write)
    try:
        cols, rows = store.query(query)
    finally:
        store.close()
    if format == "json":
        print(json.dumps([dict(zip(cols, r)) for r in rows], indent=2, default=str))
    elif format == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow(cols)
        writer.writerows(rows)
        sys.stdout.write(buf.getvalue())
    else:
        _print_table(cols, rows, digits=6)
        err_console.print(f"{len(rows)} row(s)")


def _llm_context(bench_content, model, api_base, concurrency):
    from d2k.judge import settings as settings_mod
    from d2k.judge.run import LLMContext

    overrides = {"model": model, "api_base": api_base, "concurrency": concurrency}
    return LLMContext(bench_content, settings_mod.load(overrides, root=bench_content.root))


def _verdict_table(title: str, verdicts, titles: dict, quote: bool = False) -> Table:
    table = Table(title=title)
    for col in ("item", "verdict", "how", "evidence / reason"):
        table.add_column(col, overflow="fold")
    for v in verdicts:
        if quote:
            where = " | ".join(f"“{e['quote']}”" + ("" if e.get("verbatim") else " (not verbatim)") for e in v.evidence[:2])
            where = (where + "\n" if where else "") + v.reason
        else:
            where = "; ".join(f"L{e['line']}: {e['snippet']}" for e in v.evidence[:2])
            where = where if v.strength != "llm" else (v.reason + ("\n" + where if where else ""))
            where = where or v.reason
        style = {"implemented": "green", "covered": "green", "partial": "yellow", "missing": "red",
                 "judge_error": "magenta"}.get(v.verdict, "dim")
        how = v.strength if v.confidence is None else f"{v.strength} {v.confidence:.2f}"
        table.add_row(f"{escape(v.item_id)}\n[dim]{escape(titles.get(v.item_id, ''))}[/dim]",
                      f"[{style}]{escape(str(v.verdict))}[/{style}]", escape(str(how)), escape(str(where)))
    return table


def _print_scores(scores, label: str = "implementation score") -> None:
    console.print(
        f"{label} {_fmt(scores.combined, 3)} (L1 {_fmt(scores.levels[1], 2)}, L2 {_fmt(scores.levels[2], 2)}, "
        f"L3 {_fmt(scores.levels[3], 2)}); dependency-aware {_fmt(scores.dependency_aware, 3)}; coverage {scores.coverage:.0%}",
        highlight=False)
    for flag in scores.flags:
        console.print(f"[yellow]flag[/yellow] {escape(str(flag['item']))} is present without its prerequisite "
                      f"{escape(str(flag['missing_prerequisite']))}",
                      highlight=False)


@app.command(context_settings={"help_option_names": ["--help"]})
def judge(
    target: list[str] | None = typer.Argument(
        None, help="SOLUTION (a file, or expert | naive); `proposal DESIGN.md` grades a design in prose; "
                   "`optimize` compiles the LLM judges against the gold sets."),
    task: str | None = typer.Option(None, "--task", help="The task whose design rubric applies."),
    judge_name: str = typer.Option("static", "--judge", help="static | llm | hybrid (code); proposals always use the LLM."),
    all_solutions: bool = typer.Option(False, "--all", help="Judge every solution in the store."),
    force: bool = typer.Option(False, help="Ask the LLM again even where the store has this judge's verdict."),
    model: str | None = typer.Option(None, help="LLM judge model (overrides D2K_JUDGE_MODEL and d2k.toml)."),
    api_base: str | None = typer.Option(None, help="OpenAI-compatible endpoint (overrides D2K_JUDGE_API_BASE)."),
    concurrency: int | None = typer.Option(None, help="Concurrent LLM calls."),
    optimize_target: str = typer.Option("implementation", "--target", help="optimize: implementation | proposal."),
    optimizer: str = typer.Option("bootstrap", "--optimizer", help="optimize: bootstrap | labeled."),
    as_json: bool = typer.Option(False, "--json", help="Print the verdicts as JSON."),
    db: str | None = DbOption,
):
    """Judge design properties: of a solution's code (static, llm, hybrid) or of a design in prose."""
    from d2k.judge.run import JUDGES, judge_proposal_text, judge_solution, store_judgement, store_proposal
    from d2k.solutions import Solution, resolve

    if judge_name not in JUDGES:
        raise D2KError(f"--judge must be one of {', '.join(JUDGES)} (static needs no model; llm and hybrid need "
                       f"D2K_JUDGE_MODEL or [judge] in d2k.toml), not {judge_name!r}")

    target = list(target or [])
    if target[:1] == ["optimize"]:
        from d2k.judge.optimize import optimize

        bench_content = _checked_bench()
        context = _llm_context(bench_content, model, api_base, concurrency)
        with console.status(f"optimizing the {optimize_target} judge with {optimizer}…"):
            record = optimize(bench_content, context.runner, optimize_target, optimizer)
        console.print(f"saved judges/{record['program']}: dev accuracy {record['dev_accuracy_before']:.3f} → "
                      f"{record['dev_accuracy_after']:.3f} ({record['train_examples']} train, {record['dev_examples']} dev "
                      f"examples, model {record['model']})", highlight=False)
        return
    if target[:1] == ["proposal"]:
        if len(target) != 2 or not task:
            raise D2KError("usage: d2k judge proposal DESIGN.md --task TASK")
        path = Path(target[1])
        if not path.is_file():
            raise D2KError(f"design file not found: {path}")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise D2KError(f"{path} is not a UTF-8 text file") from None
        bench_content = _checked_bench([task])
        context = _llm_context(bench_content, model, api_base, concurrency)
        store = _store(db)
        store.sync_content(bench_content)
        with console.status(f"grading {path} against {len(bench_content.items(task))} design items…"):
            result = judge_proposal_text(bench_content, task, text, context, store, force)
        store_proposal(store, result, path.name, str(path), text)
        store.close()
        if as_json:
            print(json.dumps({"task": task, "proposal": str(path), "proposal_id": result.proposal_id,
                              "verdicts": [v.as_dict() for v in result.verdicts], "scores": result.scores.as_dict()}, indent=2))
            return
        titles = {i.id: i.title for i in bench_content.items(task)}
        console.print(_verdict_table(f"{task} · proposal {path.name} · {result.model}", result.verdicts, titles, quote=True))
        _print_scores(result.scores, "design coverage")
        return
    if all_solutions == bool(target):
        raise D2KError("give either a SOLUTION (with --task), `proposal DESIGN.md --task T`, `optimize`, or --all")
    if len(target) > 1:
        raise D2KError(f"one SOLUTION at a time (got {len(target)} arguments)")
    if all_solutions:
        bench_content = _checked_bench()
        store = _store(db)
        store.sync_content(bench_content)
        context = _llm_context(bench_content, model, api_base, concurrency) if judge_name != "static" else None
        _, rows = store.query("SELECT solution_id, task_id, label, kind, path, source FROM solutions WHERE kind = 'file' "
                              "ORDER BY task_id, label")
        counts: dict[str, int] = {}
        with Progress(TextColumn("judge"), BarColumn(), MofNCompleteColumn(), console=err_console) as progress:
            bar = progress.add_task("judge", total=len(rows))
            for solution_id, task_id, label, kind, path, source in rows:
                if task_id not in bench_content.tasks:
                    counts["unknown task"] = counts.get("unknown task", 0) + 1
                    progress.advance(bar)
                    continue
                result = judge_solution(bench_content, Solution(solution_id, task_id, label, kind, Path(path), source),
                                        judge_name, context, store, force)
                store_judgement(store, result)
                counts[result.status] = counts.get(result.status, 0) + 1
                progress.advance(bar)
        console.print(f"judged {len(rows)} stored solution(s): " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
        store.close()
        return
    if not task:
        raise D2KError("--task is required with a SOLUTION")
    bench_content = _checked_bench([task])
    chosen = resolve(bench_content, task, target[0])
    store = _store(db)
    store.sync_content(bench_content)
    store.add_solution(chosen)
    context = _llm_context(bench_content, model, api_base, concurrency) if judge_name != "static" else None
    result = judge_solution(bench_content, chosen, judge_name, context, store, force)
    store_judgement(store, result)
    store.close()
    if as_json:
        print(json.dumps({"task": task, "solution": chosen.label, "judge": result.judge, "status": result.status,
                          "detail": result.detail, "verdicts": [v.as_dict() for v in result.verdicts],
                          "scores": result.scores.as_dict() if result.scores else None}, indent=2))
        return
    if result.status != "ok":
        console.print(f"[yellow]{escape(str(result.status))}[/yellow]: {escape(str(result.detail))}", highlight=False)
    titles = {i.id: i.title for i in bench_content.items(task)}
    model_note = f" · {result.model}" if result.model else ""
    console.print(_verdict_table(f"{task} · {chosen.label} · judge {result.judge} v{result.judge_version}{model_note}",
                                 result.verdicts, titles))
    if result.scores:
        _print_scores(result.scores)


@app.command("judge-eval")
def judge_eval(
    judge_name: str = typer.Option("static", "--judge", help="static | llm | hybrid (implementation gold); llm for proposals."),
    gold: str = typer.Option("implementation", "--gold", help="implementation (labels.toml) | proposals (proposals.toml)."),
    scope: str = typer.Option("item", help="Rows to print: item | level | task | all."),
    force: bool = typer.Option(False, help="Ask the LLM again even where the store has this judge's verdict."),
    model: str | None = typer.Option(None, help="LLM judge model (overrides D2K_JUDGE_MODEL and d2k.toml)."),
    api_base: str | None = typer.Option(None, help="OpenAI-compatible endpoint (overrides D2K_JUDGE_API_BASE)."),
    concurrency: int | None = typer.Option(None, help="Concurrent LLM calls."),
    part: str = typer.Option("all", "--part", help="Labelled part (judges/splits.toml): dev (in-sample) | test | wild | all."),
    boot: int = typer.Option(1000, "--boot", help="Bootstrap resamples (over solutions) for the 95% intervals; 0 for none."),
    calibrate: bool = typer.Option(False, "--calibrate",
                                   help="Write judges/static_calibration.json (strength precision on the frozen parts)."),
    db: str | None = DbOption,
):
    """Agreement of a judge with the gold labels in judges/gold/ and judges/wild/, per part (dev /
    test / wild) with bootstrap intervals: precision, recall, F1, Cohen's kappa, and the precision
    of each verdict strength."""
    from d2k.judge import agreement
    from d2k.judge.run import JUDGES, gold_rows, proposal_gold_rows, store_metrics

    if part not in ("dev", "test", "wild", "all"):
        raise D2KError(f"--part must be dev, test, wild or all, not {part!r}")
    if gold == "implementation":
        return _judge_eval_parts(judge_name, scope, force, model, api_base, concurrency, part, boot, calibrate, db)

    if scope not in ("item", "level", "task", "all"):
        raise D2KError(f"--scope must be item, level, task or all, not {scope!r}")
    if gold not in ("implementation", "proposals"):
        raise D2KError(f"--gold must be implementation or proposals, not {gold!r}")
    if judge_name not in JUDGES:
        raise D2KError(f"--judge must be one of {', '.join(JUDGES)}, not {judge_name!r}")
    bench_content = _checked_bench()
    store = _store(db)
    store.sync_content(bench_content)
    context = None
    if gold == "proposals" or judge_name != "static":
        context = _llm_context(bench_content, model, api_base, concurrency)
    if gold == "proposals":
        judge_name = "llm"
        rows = proposal_gold_rows(bench_content, context, store, force)
    else:
        rows, _ = gold_rows(bench_content, judge_name, context, store, force)
    results = agreement.by_scope(rows)
    if judge_name == "static":
        from d2k.judge.static import VERSION as version
    else:
        from d2k.judge.llm import VERSION as version
    store_metrics(store, judge_name, version, gold, results)
    store.close()
    n_solutions = len({(r.task_id, r.solution) for r in rows})
    cols = ("scope", "key", "n", "decided", "accuracy", "precision", "recall", "F1", "kappa")
    shown = {"item": ("item", "level", "task", "all"), "level": ("level", "all"), "task": ("task", "all"), "all": ("all",)}[scope]
    table_rows = [[r["scope"], r["key"], str(r["n"]), str(r["decided"]),
                   *[_fmt(r[k], 3) for k in ("accuracy", "precision", "recall", "f1", "kappa")]]
                  for r in results if r["scope"] in shown]
    _print_table(cols, table_rows, f"judge {judge_name} v{version} against {n_solutions} gold "
                 f"{'proposals' if gold == 'proposals' else 'solutions'}", right=cols[2:])
    undecided = sorted({f"{r.task_id}/{r.item_id}" for r in rows if r.predicted not in agreement.LABELS})
    if undecided:
        console.print("items the judge did not decide: " + ", ".join(undecided), markup=False, highlight=False, soft_wrap=True)
    for r in rows:
        if r.predicted in agreement.LABELS and r.predicted != r.gold:
            console.print("[yellow]disagrees[/yellow] "
                          + escape(f"{r.task_id}/{r.solution} {r.item_id}: gold {r.gold}, judge {r.predicted}"),
                          highlight=False)


def _judge_eval_parts(judge_name, scope, force, model, api_base, concurrency, part, boot, calibrate, db):
    """judge-eval on code: every part separately (dev is in-sample for the static judge)."""
    from d2k.judge import agreement, calibration, evaluation
    from d2k.judge.run import JUDGES, gold_rows, store_metrics

    if scope not in ("item", "level", "task", "all"):
        raise D2KError(f"--scope must be item, level, task or all, not {scope!r}")
    if judge_name not in JUDGES:
        raise D2KError(f"--judge must be one of {', '.join(JUDGES)}, not {judge_name!r}")
    bench_content = _checked_bench()
    store = _store(db)
    store.sync_content(bench_content)
    context = _llm_context(bench_content, model, api_base, concurrency) if judge_name != "static" else None
    parts = ("dev", "test", "wild") if part == "all" else (part,)
    rows, _ = gold_rows(bench_content, judge_name, context, store, force, parts=parts)
    if judge_name == "static":
        from d2k.judge.static import VERSION as version
    else:
        from d2k.judge.llm import VERSION as version
    results = evaluation.by_part(rows, n_boot=boot)
    for r in results:
        store_metrics(store, judge_name, version, f"implementation/{r.part}", r.scopes)
    store.close()
    cols, table = evaluation.summary_table(results)
    _print_table(cols, table, f"judge {judge_name} v{version} against {len({(r.task_id, r.solution) for r in rows})} "
                 f"labelled solutions, per part", right=cols[1:7])
    shown = {"item": ("item", "level", "task", "all"), "level": ("level", "all"), "task": ("task", "all"), "all": ("all",)}[scope]
    for r in results:
        scope_rows = [[s["scope"], s["key"], str(s["n"]), str(s["decided"]),
                       *[_fmt(s[k], 3) for k in ("accuracy", "precision", "recall", "f1", "kappa")]]
                      for s in r.scopes if s["scope"] in shown and s["scope"] != "all"]
        if scope_rows:
            c = ("scope", "key", "n", "decided", "accuracy", "precision", "recall", "F1", "kappa")
            _print_table(c, scope_rows, f"{r.part}: {evaluation.PART_NOTES[r.part]}", right=c[2:])
    cols, table = evaluation.strength_table(results)
    _print_table(cols, table, "precision of each verdict strength (right / n)", right=cols[3:])
    if calibrate:
        frozen = [r for r in rows if r.part in ("test", "wild")]
        if judge_name != "static" or not frozen:
            raise D2KError("--calibrate needs the static judge and a labelled frozen part (test or wild)")
        record = calibration.compute(agreement.strength_precision(frozen), sorted({r.part for r in frozen}), version)
        written = calibration.write(bench_content.root, record)
        console.print(f"wrote {written} (strength precision on {', '.join(record['parts'])})", markup=False, highlight=False)
    undecided = sorted({f"{r.task_id}/{r.item_id}" for r in rows if r.predicted not in agreement.LABELS})
    if undecided:
        console.print("items the judge did not decide: " + ", ".join(undecided), markup=False, highlight=False, soft_wrap=True)
    frozen_misses = 0
    for r in rows:
        if r.predicted in agreement.LABELS and r.predicted != r.gold:
            if r.part != "dev":   # frozen parts: counted, not listed (no signal may be tuned on them)
                frozen_misses += 1
                continue
            line = f"{r.task_id}/{r.solution} {r.item_id}: gold {r.gold}, judge {r.predicted}"
            console.print("[yellow]disagrees[/yellow] " + escape(line), highlight=False)
    if frozen_misses:
        console.print(f"{frozen_misses} disagreement(s) on the frozen parts (test/wild) are not listed: "
                      "no signal may be tuned on them", markup=False, highlight=False)


@app.command()
def ingest(files: list[Path] = typer.Argument(..., help="results.jsonl files of d2k runs, or calibration.json files of d2k "
                                                        "calibrate, written elsewhere."),
           db: str | None = DbOption):
    """Load results produced on another machine (e.g. a GPU node) into the store."""
    from d2k.ingest import ingest as ingest_file

    store = _store(db)
    try:  # the content is stored alongside when it is valid; results are ingested either way
        bench_content = _checked_bench()
    except D2KError:
        bench_content = None
    try:
        for path in files:  # each file whole or not at all; the first bad one stops here
            counts = ingest_file(store, bench_content, path)
            added = ", ".join(f"{v} {k}(s)" for k, v in counts.items() if v and k != "unchanged") or "nothing new"
            unchanged = f" ({counts['unchanged']} record(s) already stored)" if counts.get("unchanged") else ""
            console.print(f"{path}: {added}{unchanged}", markup=False, highlight=False, soft_wrap=True)
    finally:
        store.close()


@app.command()
def report(
    out: Path = typer.Option(Path("d2k-report"), "--out", help="Folder to write index.html, figures/ and tables/ into."),
    db: str | None = DbOption,
):
    """Write the benchmark report: every metric of the store as tables and figures in one HTML page."""
    from d2k.content import find_root
    from d2k.report import SECTIONS, build, store_labels, write

    store = _existing_store(db)
    try:
        with Progress(TextColumn("report"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[current]}"),
                      console=err_console, transient=True) as progress:
            bar = progress.add_task("report", total=len(SECTIONS), current="")
            results = build(store, find_root(), lambda name: progress.update(bar, advance=1, current=name))
            labels = store_labels(store)
    finally:
        store.close()
    try:
        page = write(results, out, store.path, labels)
    except OSError as exc:
        raise D2KError(f"cannot write the report to {out}: {exc.strerror or exc}") from None
    filled = sum(1 for r in results if r.rows)
    console.print(f"report: {page} ({filled} of {len(results)} sections with data, "
                  f"{sum(1 for r in results if r.figure)} figure(s))")


@app.command()
def analyze(
    boot: int = typer.Option(2000, "--boot", help="Bootstrap resamples over tasks."),
    seed: int = typer.Option(0, "--seed", help="Seed of the resampling."),
    judge_name: str = typer.Option("static", "--judge", help="Judge whose verdicts the attribution uses."),
    db: str | None = DbOption,
):
    """Bootstrap intervals, the paired guidance test and the speedup attribution, stored in analysis_* tables."""
    from d2k.analysis import analyze as run_analysis

    if boot < 10:
        raise D2KError(f"--boot must be at least 10, not {boot}")
    store = _existing_store(db, read_only=False)
    try:
        with console.status("bootstrapping over tasks, fitting the attribution…"):
            counts = run_analysis(store, n_boot=boot, seed=seed, judge=judge_name)
    finally:
        store.close()
    console.print(f"stored {counts['bootstrap']} bootstrap row(s) and {counts['attribution']} attribution row(s) "
                  f"(views version {counts['views_version']})", highlight=False)


@app.command()
def export(
    format: str = typer.Option("parquet", "--format", help="parquet | csv."),
    out: Path = typer.Option(Path("d2k-export"), "--out", help="Folder for one file per table and view."),
    only: str | None = typer.Option(None, "--only", help="Comma-separated tables and views (default: all)."),
    list_only: bool = typer.Option(False, "--list", help="List the tables and views, write nothing."),
    db: str | None = DbOption,
):
    """Write the store's tables and metric views (v_*) to Parquet or CSV files, one per name."""
    from d2k.content import find_root
    from d2k.export import export as run_export
    from d2k.export import list_names
    from d2k.store import default_path

    path = str(db or default_path())
    try:
        views = find_root() / "analysis" / "views.sql"
    except D2KError:
        views = None
    if list_only:
        tables, view_names = list_names(path, views)
        console.print("tables: " + ", ".join(tables), highlight=False, soft_wrap=True)
        console.print("views: " + ", ".join(view_names), highlight=False, soft_wrap=True)
        return
    names = [n.strip() for n in only.split(",") if n.strip()] if only else None
    written, version = run_export(path, out, format, names, views)
    rows = sum(n for _, _, n in written)
    console.print(f"wrote {len(written)} {format} file(s), {rows} row(s), to {out} (views version {version})",
                  highlight=False)


@app.command()
def demo(
    out: Path = typer.Option(Path("d2k-demo"), "--out", help="Folder for the demo store, its work files and report."),
    db: Path | None = typer.Option(None, "--db", help="The demo store (default: OUT/demo.duckdb); an existing "
                                      "file is replaced only if it is a demo store."),
    report_too: bool = typer.Option(True, "--report/--no-report", help="Also write OUT/report/index.html."),
):
    """Build a demo store offline: a scripted model and judge run a small paired experiment (flagged as a demo)."""
    from d2k.demo import build

    progress = RichProgress("demo experiment")
    try:
        made = build(out, db, progress=progress)
    finally:
        progress.stop()
    counts = made["counts"]
    console.print(f"demo store: {made['store']} ({counts['finished']} attempts finished, {counts['failed']} failed "
                  f"in the harness on purpose; {made['requests']} scripted requests; {made['seconds']:.0f} s)",
                  highlight=False)
    if report_too:
        from d2k.content import find_root
        from d2k.report import report as write_report
        from d2k.store import Store

        store = Store(made["store"], read_only=True)
        try:
            page, _ = write_report(store, find_root(), out / "report")
        finally:
            store.close()
        console.print(f"demo report: {page}", highlight=False)


experiment_app = typer.Typer(help="Paired agent experiments: run a spec, follow its progress.")
app.add_typer(experiment_app, name="experiment")


def _needs_a_command(ctx: typer.Context) -> None:
    """A group called without its command: one line naming the commands (not the help page on
    stdout and an exception, as typer's no_args_is_help does)."""
    if ctx.invoked_subcommand is None and not ctx.resilient_parsing:
        names = ", ".join(ctx.command.list_commands(ctx))
        raise D2KError(f"{ctx.command_path} needs a command ({names}); see `{ctx.command_path} --help`")


app.callback(invoke_without_command=True)(_needs_a_command)
experiment_app.callback(invoke_without_command=True)(_needs_a_command)


@experiment_app.command("run")
def experiment_run(
    spec_path: Path = typer.Argument(..., help="The experiment spec (TOML); see examples/paired.toml."),
    executor: str | None = typer.Option(None, help="local | ray (default: the spec's [executor] kind)."),
    address: str | None = typer.Option(None, help="Ray cluster address (default: a local Ray)."),
    backend: str | None = typer.Option(None, help="auto | cuda | interpreter (default: the spec's)."),
    db: str | None = DbOption,
):
    """Create the attempts (model x task x condition x seed) and run those not finished; resumable."""
    from d2k.experiment import spec as spec_mod
    from d2k.experiment.run import run_experiment
    from d2k.sweep import work_dir

    spec = spec_mod.load(spec_path)
    if executor not in (None, "local", "ray"):
        raise D2KError(f"--executor must be local or ray, not {executor!r}")
    bench_content = _checked_bench(spec.tasks)
    chosen_backend = _backend(backend or spec.backend)
    judge_context = None
    import os

    if os.environ.get("D2K_JUDGE_MODEL") or Path("d2k.toml").is_file():
        from d2k.judge import settings as settings_mod

        settings = settings_mod.load(root=bench_content.root)
        if settings.model:
            from d2k.judge.run import LLMContext

            judge_context = LLMContext(bench_content, settings)
    store = _store(db)
    progress = RichProgress(f"experiment {spec.name}")
    try:
        counts = run_experiment(spec, spec_path, store, bench_content, work_dir(), chosen_backend, executor, address,
                                progress=progress, judge_context=judge_context)
    finally:
        progress.stop()
    err_console.print(f"{counts['finished']} finished, {counts['failed']} failed, {counts['skipped']} already done "
                      f"({counts['executor']}, backend {chosen_backend})", highlight=False)
    cols, rows = store.query(
        "SELECT model, task_id, condition, status, agent_status, turns, passed || '/' || workloads AS passed, "
        "round(geomean_speedup, 3) AS speedup, round(implementation_score, 1) AS impl_score, "
        "round(design_coverage, 1) AS design_cov FROM v_attempts WHERE experiment = ? ORDER BY ALL", [spec.name])
    _print_table(cols, rows, f"experiment {spec.name}")
    store.close()
    if counts["failed"]:
        raise typer.Exit(1)


@experiment_app.command("status")
def experiment_status(
    spec_path: Path | None = typer.Argument(None, help="A spec (default: every experiment in the store)."),
    db: str | None = DbOption,
):
    """Attempts per model, task and condition: finished, failed, remaining."""
    from d2k.experiment import spec as spec_mod
    from d2k.experiment.run import status_rows

    experiment_id = spec_mod.load(spec_path).experiment_id if spec_path else None
    store = _existing_store(db)
    cols, rows = status_rows(store, experiment_id)
    store.close()
    if not rows:
        console.print("no attempts in the store" + (f" for {spec_path}" if spec_path else ""), markup=False)
        return
    _print_table(cols, rows, "experiment status")


task_app = typer.Typer(help="Task authoring: scaffold a new task across its folders (docs/new_task.md).")
app.add_typer(task_app, name="task")
task_app.callback(invoke_without_command=True)(_needs_a_command)


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
        console.print(str(path.relative_to(root)), highlight=False, markup=False)
    console.print(f"next: resolve every {MARKER} marker (`d2k validate` lists the files left); see docs/new_task.md",
                  highlight=False, markup=False, soft_wrap=True)


def _usage_error_types() -> tuple[type, ...]:
    """The exceptions the command-line parser raises for a usage mistake: typer >= 0.29 has its own
    (typer.exceptions.TyperException), older typer re-raises click's."""
    types: list[type] = []
    try:
        from typer.exceptions import TyperException

        types.append(TyperException)
    except ImportError:
        pass
    try:
        import click

        types.append(click.ClickException)
    except ImportError:
        pass
    return tuple(types)


def _usage_message(exc) -> str:
    """One line: what is wrong with the command line, and where the help is."""
    ctx = getattr(exc, "ctx", None)
    command = getattr(ctx, "command_path", None) or "d2k"
    if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
        names = ctx.command.list_commands(ctx) if hasattr(ctx.command, "list_commands") else []
        message = f"{command} needs a command" + (f" ({', '.join(names)})" if names else "")
    else:
        text = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        message = " ".join(str(text).split()).rstrip(".") or type(exc).__name__
    return f"error: {message}; see `{command} --help`"


def main() -> None:
    usage_errors = _usage_error_types()
    try:
        code = app(standalone_mode=False, prog_name="d2k")  # click returns the code of a typer.Exit here
    except D2KError as exc:
        # markup=False: messages quote user text ([judge], file[workload]) that rich would eat
        err_console.print(f"error: {exc}", style="red", markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err_console.print("interrupted: results written so far are kept")
        sys.exit(130)
    except Exception as exc:  # the parser's usage errors: one line and exit 2, like ours
        if usage_errors and isinstance(exc, usage_errors):
            err_console.print(_usage_message(exc), style="red", markup=False, highlight=False, soft_wrap=True)
            sys.exit(2)
        if type(exc).__name__ in ("Exit", "Abort") and hasattr(exc, "exit_code"):  # click's, under old typer
            sys.exit(exc.exit_code)
        raise
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
