"""``d2k judge``: which design items a solution's code implements (``code``), which a design in prose
covers (``proposal``), and the compilation of the LLM judges (``optimize``). ``d2k judge eval``, a
judge against the gold labels, is in judge_eval.py.

Before it had sub-commands, ``d2k judge`` was one command: ``d2k judge SOLUTION --task T``,
``d2k judge --all``, ``d2k judge proposal DESIGN.md --task T``, ``d2k judge optimize``, every option
accepted in every form. Those spellings still work (``_OldSpellings``, and the hidden options below).
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import click
import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table
from typer.core import TyperGroup

from d2k.cli import common
from d2k.cli.common import DbOption, app, checked_bench, fmt, needs_a_command, open_store
from d2k.errors import D2KError

# the sub-commands the old single command picked out of its positional arguments, wherever they stood
_OLD_POSITIONAL_FORMS = ("proposal", "optimize")


class _OldSpellings(TyperGroup):
    """`d2k judge` without a sub-command: a first word that names none (a solution, an option such
    as --all or --task) means `code`; `proposal` or `optimize` after options is moved first. A first
    word close to a sub-command's name, with no file of that name, is refused as a typo."""

    def parse_args(self, ctx, args):
        return super().parse_args(ctx, self._with_subcommand(ctx, list(args)))

    def _with_subcommand(self, ctx, args: list[str]) -> list[str]:
        if not args or args[0] in self.commands or args[0] in ctx.help_option_names:
            return args
        i = _first_positional(args, self._options_with_values(ctx))
        if i is not None and args[i] in _OLD_POSITIONAL_FORMS:
            return [args[i], *args[:i], *args[i + 1:]]
        if i == 0 and not Path(args[0]).exists():
            # a mistyped sub-command would otherwise be read as a solution named so
            near = difflib.get_close_matches(args[0], list(self.commands), n=1, cutoff=0.75)
            if near:
                raise click.UsageError(f"no sub-command {args[0]!r}: did you mean `d2k judge {near[0]}`? "
                                       f"(sub-commands: {', '.join(self.commands)})", ctx)
        return ["code", *args]

    def _options_with_values(self, ctx) -> set[str]:
        return {opt for command in self.commands.values() for p in command.params
                if p.param_type_name == "option" and not p.is_flag and not p.count for opt in p.opts}


def _first_positional(args: list[str], options_with_values: set[str]) -> int | None:
    """The index of the first argument that is neither an option nor an option's value."""
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--":
            return None
        if token.startswith("-") and token != "-":
            i += 2 if token in options_with_values else 1  # `--task=T` is one token
            continue
        return i
    return None


judge_app = typer.Typer(
    cls=_OldSpellings,
    help="Judge design properties: of a solution's code (static, llm, hybrid) or of a design in prose.\n\n"
         "Without a sub-command, `d2k judge SOLUTION --task T` and `d2k judge --all` mean `d2k judge code ...` "
         "(the spelling before the sub-commands).",
)
app.add_typer(judge_app, name="judge")
judge_app.callback(invoke_without_command=True)(needs_a_command)

TaskOption = typer.Option(None, "--task", help="The task whose design rubric applies.")
ForceOption = typer.Option(False, help="Ask the LLM again even where the store has this judge's verdict.")
ModelOption = typer.Option(None, help="LLM judge model (overrides D2K_JUDGE_MODEL and d2k.toml).")
ApiBaseOption = typer.Option(None, help="OpenAI-compatible endpoint (overrides D2K_JUDGE_API_BASE).")
ConcurrencyOption = typer.Option(None, help="Concurrent LLM calls.")
JsonOption = typer.Option(False, "--json", help="Print the verdicts as JSON.")


def _unused(default, name: str):
    """An option the old single `judge` command took in every form, where this form never used it:
    still accepted (and ignored, as it was), hidden from the help."""
    return typer.Option(default, name, hidden=True, help="Accepted for the old `d2k judge` spelling; unused here.")


def _check_judge(judge_name: str) -> None:
    from d2k.judge.pipeline import JUDGES

    if judge_name not in JUDGES:
        raise D2KError(f"--judge must be one of {', '.join(JUDGES)} (static needs no model; llm and hybrid need "
                       f"D2K_JUDGE_MODEL or [judge] in d2k.toml), not {judge_name!r}")


def llm_context(bench_content, model, api_base, concurrency):
    from d2k.judge import settings as settings_mod
    from d2k.judge.pipeline import LLMContext

    overrides = {"model": model, "api_base": api_base, "concurrency": concurrency}
    return LLMContext(bench_content, settings_mod.load(overrides, root=bench_content.root))


@judge_app.command("code")
def judge_code(
    solution: str | None = typer.Argument(None, metavar="SOLUTION", help="A solution file, or expert | naive."),
    task: str | None = TaskOption,
    judge_name: str = typer.Option("static", "--judge", help="static | llm | hybrid."),
    all_solutions: bool = typer.Option(False, "--all", help="Judge every solution in the store."),
    force: bool = ForceOption,
    model: str | None = ModelOption,
    api_base: str | None = ApiBaseOption,
    concurrency: int | None = ConcurrencyOption,
    as_json: bool = JsonOption,
    db: str | None = DbOption,
    _target: str = _unused("implementation", "--target"),
    _optimizer: str = _unused("bootstrap", "--optimizer"),
):
    """Which design items a solution's code implements, with evidence, scores and dependency flags (static, llm, hybrid)."""
    from d2k.judge.pipeline import judge_solution, store_judgement
    from d2k.solutions import Solution, resolve

    _check_judge(judge_name)
    if all_solutions == bool(solution):
        raise D2KError("give either a SOLUTION (with --task) or --all")
    if all_solutions:
        bench_content = checked_bench()
        store = open_store(db)
        store.sync_content(bench_content)
        context = llm_context(bench_content, model, api_base, concurrency) if judge_name != "static" else None
        _, rows = store.query("SELECT solution_id, task_id, label, kind, path, source FROM solutions WHERE kind = 'file' "
                              "ORDER BY task_id, label")
        counts: dict[str, int] = {}
        with Progress(TextColumn("judge"), BarColumn(), MofNCompleteColumn(), console=common.err_console) as progress:
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
        common.console.print(f"judged {len(rows)} stored solution(s): "
                             + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
        store.close()
        return
    if not task:
        raise D2KError("--task is required with a SOLUTION")
    bench_content = checked_bench([task])
    chosen = resolve(bench_content, task, solution)
    store = open_store(db)
    store.sync_content(bench_content)
    store.add_solution(chosen)
    context = llm_context(bench_content, model, api_base, concurrency) if judge_name != "static" else None
    result = judge_solution(bench_content, chosen, judge_name, context, store, force)
    store_judgement(store, result)
    store.close()
    if as_json:
        print(json.dumps({"task": task, "solution": chosen.label, "judge": result.judge, "status": result.status,
                          "detail": result.detail, "verdicts": [v.as_dict() for v in result.verdicts],
                          "scores": result.scores.as_dict() if result.scores else None}, indent=2))
        return
    if result.status != "ok":
        common.console.print(f"[yellow]{escape(str(result.status))}[/yellow]: {escape(str(result.detail))}", highlight=False)
    titles = {i.id: i.title for i in bench_content.items(task)}
    model_note = f" · {result.model}" if result.model else ""
    common.console.print(_verdict_table(f"{task} · {chosen.label} · judge {result.judge} v{result.judge_version}{model_note}",
                                        result.verdicts, titles))
    if result.scores:
        _print_scores(result.scores)


@judge_app.command("proposal")
def judge_proposal(
    design: str | None = typer.Argument(None, metavar="DESIGN.md", help="The design, in prose (a UTF-8 text file)."),
    task: str | None = TaskOption,
    force: bool = ForceOption,
    model: str | None = ModelOption,
    api_base: str | None = ApiBaseOption,
    concurrency: int | None = ConcurrencyOption,
    as_json: bool = JsonOption,
    db: str | None = DbOption,
    judge_name: str = typer.Option("static", "--judge", hidden=True,
                                   help="Accepted (and checked) for the old `d2k judge` spelling; proposals always use the LLM."),
    _all: bool = _unused(False, "--all"),
    _target: str = _unused("implementation", "--target"),
    _optimizer: str = _unused("bootstrap", "--optimizer"),
):
    """Grade a design written in prose against every design item of a task (LLM): covered, partial or missing, with quotes."""
    from d2k.judge.pipeline import judge_proposal_text, store_proposal

    _check_judge(judge_name)
    if design is None or not task:
        raise D2KError("usage: d2k judge proposal DESIGN.md --task TASK")
    path = Path(design)
    if not path.is_file():
        raise D2KError(f"design file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise D2KError(f"{path} is not a UTF-8 text file") from None
    bench_content = checked_bench([task])
    context = llm_context(bench_content, model, api_base, concurrency)
    store = open_store(db)
    store.sync_content(bench_content)
    with common.console.status(f"grading {path} against {len(bench_content.items(task))} design items…"):
        result = judge_proposal_text(bench_content, task, text, context, store, force)
    store_proposal(store, result, path.name, str(path), text)
    store.close()
    if as_json:
        print(json.dumps({"task": task, "proposal": str(path), "proposal_id": result.proposal_id,
                          "verdicts": [v.as_dict() for v in result.verdicts], "scores": result.scores.as_dict()}, indent=2))
        return
    titles = {i.id: i.title for i in bench_content.items(task)}
    common.console.print(_verdict_table(f"{task} · proposal {path.name} · {result.model}", result.verdicts, titles, quote=True))
    _print_scores(result.scores, "design coverage")


@judge_app.command("optimize")
def judge_optimize(
    optimize_target: str = typer.Option("implementation", "--target", help="implementation | proposal."),
    optimizer: str = typer.Option("bootstrap", "--optimizer", help="bootstrap | labeled."),
    model: str | None = ModelOption,
    api_base: str | None = ApiBaseOption,
    concurrency: int | None = ConcurrencyOption,
    judge_name: str = typer.Option("static", "--judge", hidden=True,
                                   help="Accepted (and checked) for the old `d2k judge` spelling; unused here."),
    _task: str | None = _unused(None, "--task"),
    _all: bool = _unused(False, "--all"),
    _force: bool = _unused(False, "--force"),
    _json: bool = _unused(False, "--json"),
    _db: str | None = _unused(None, "--db"),
):
    """Compile an LLM judge with a DSPy optimizer against the gold sets (their dev part); saved under judges/."""
    from d2k.judge.optimize import optimize

    _check_judge(judge_name)
    bench_content = checked_bench()
    context = llm_context(bench_content, model, api_base, concurrency)
    with common.console.status(f"optimizing the {optimize_target} judge with {optimizer}…"):
        record = optimize(bench_content, context.runner, optimize_target, optimizer)
    common.console.print(f"saved judges/{record['program']}: dev accuracy {record['dev_accuracy_before']:.3f} → "
                         f"{record['dev_accuracy_after']:.3f} ({record['train_examples']} train, {record['dev_examples']} dev "
                         f"examples, model {record['model']})", highlight=False)


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
    common.console.print(
        f"{label} {fmt(scores.combined, 3)} (L1 {fmt(scores.levels[1], 2)}, L2 {fmt(scores.levels[2], 2)}, "
        f"L3 {fmt(scores.levels[3], 2)}); dependency-aware {fmt(scores.dependency_aware, 3)}; coverage {scores.coverage:.0%}",
        highlight=False)
    for flag in scores.flags:
        common.console.print(f"[yellow]flag[/yellow] {escape(str(flag['item']))} is present without its prerequisite "
                             f"{escape(str(flag['missing_prerequisite']))}",
                             highlight=False)
