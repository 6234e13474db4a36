"""What every command module shares: the Typer app, the consoles, the exit codes, the openers of the
store and the content, the packaged queries, and the terminal output (tables, progress).

Commands print through ``common.console`` and ``common.err_console``, looked up when they print
(never imported by name), so a test can swap either for a console of its own.
"""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich.console import Console, RenderHook
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.segment import Segment
from rich.table import Table
from typer.core import TyperGroup

from d2k.errors import D2KError
from d2k.text import no_terminal_controls, one_line

# Exit codes of every command (0: done, nothing failed).
EXIT_FAILED = 1       # the command ran and found a failure: a solution that did not pass, invalid content, a failed attempt
EXIT_USAGE = 2        # a mistake on the command line or in the input: one line on stderr, never a traceback
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT); the results written so far are kept

# The order of the help page and of the "needs a command" line; a command not listed comes last.
COMMAND_ORDER = ("tasks", "validate", "eval", "bench", "calibrate", "sql", "judge", "ingest", "report", "analyze",
                 "export", "demo", "experiment", "task")


class _InCommandOrder(TyperGroup):
    """The top-level group: its commands in COMMAND_ORDER (typer lists a sub-app after every plain
    command, and the commands are registered module by module)."""

    def list_commands(self, ctx) -> list[str]:
        names = super().list_commands(ctx)
        return sorted(names, key=lambda n: COMMAND_ORDER.index(n) if n in COMMAND_ORDER else len(COMMAND_ORDER))


app = typer.Typer(
    cls=_InCommandOrder,
    add_completion=False,
    help="d2k: the D2K-Bench toolkit: content, isolated GPU evaluation, DuckDB store.",
)


class _PrintableOnly:
    """A renderable whose text has its control characters escaped (Rich's own controls, the cursor
    moves of a progress display, pass as they are)."""

    def __init__(self, renderable):
        self.renderable = renderable

    def __rich_console__(self, console, options):
        for segment in console.render(self.renderable, options):
            yield segment if segment.control else Segment(no_terminal_controls(segment.text), segment.style)


class _NoTerminalControls(RenderHook):
    """Whatever a console prints, text a solution wrote included (its exceptions' messages, the last
    line it printed, its file name), cannot drive the terminal: an escape sequence in a reason
    erased lines, moved the cursor, retitled the window and hid later text (red team G, session 21)."""

    def process_renderables(self, renderables):
        return [_PrintableOnly(r) for r in renderables]


console = Console()
err_console = Console(stderr=True)
for _console in (console, err_console):
    _console.push_render_hook(_NoTerminalControls())

DbOption = typer.Option(None, "--db", help="DuckDB file (default: $D2K_DB or ./d2k.duckdb).")

# SQL the commands run, kept as files next to the schema's (packaged with it: pyproject's package-data)
QUERIES_DIR = Path(__file__).resolve().parents[1] / "sql" / "queries"


def packaged_query(name: str) -> str:
    """The text of d2k/sql/queries/<name>.sql."""
    return (QUERIES_DIR / f"{name}.sql").read_text(encoding="utf-8")


def needs_a_command(ctx: typer.Context) -> None:
    """A group called without its command: one line naming the commands (not the help page on
    stdout and an exception, as typer's no_args_is_help does)."""
    if ctx.invoked_subcommand is None and not ctx.resilient_parsing:
        names = ", ".join(visible_commands(ctx))
        raise D2KError(f"{ctx.command_path} needs a command ({names}); see `{ctx.command_path} --help`")


def visible_commands(ctx) -> list[str]:
    """The names of a group's commands, without the hidden ones (the old spellings kept as aliases)."""
    group = ctx.command
    if not hasattr(group, "list_commands"):
        return []
    return [n for n in group.list_commands(ctx) if not getattr(group.get_command(ctx, n), "hidden", False)]


app.callback(invoke_without_command=True)(needs_a_command)


# -- the store and the content ----------------------------------------------------------------
def open_store(db: str | None):
    from d2k.store import Store

    return Store(db)


def open_existing_store(db: str | None, read_only: bool = True):
    """The store of a command that only reads: a path that does not exist is a mistake (a typo in
    --db, another folder), not a new empty store to create and report on. Opened read-only unless
    asked: such a command cannot change the store, nor write files through DuckDB."""
    from d2k.store import Store, default_path

    path = str(db or default_path())
    if path != ":memory:" and not Path(path).expanduser().exists():
        raise D2KError(f"no store at {path}: run `d2k bench` or `d2k ingest` first, or pass --db (or set D2K_DB)")
    return Store(path, read_only=read_only)


def load_bench(only: list[str] | None = None):
    from d2k.content import Benchmark

    return Benchmark.load(only=only)


def checked_bench(only: list[str] | None = None):
    """The content a command runs or judges, refused with the validator's lines if it is invalid
    (a dependency cycle, an undefined axis, ... must not surface as a traceback mid-run)."""
    from d2k.content import ContentError
    from d2k.validate import validate

    problems, _ = validate(only=only)
    if problems:
        raise ContentError(problems)
    return load_bench(only)


def resolve_backend(requested: str) -> str:
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


# -- terminal output --------------------------------------------------------------------------
# columns whose values are never cut: ids, names and short values (numbers, statuses); the
# free-text columns (titles, failures, reasons) wrap instead
_FREE_TEXT_WIDTH = 16


def print_table(cols, rows, title: str | None = None, digits: int = 4, right: tuple = (), out: Console | None = None) -> None:
    """A table whose cells are plain text (never read as rich markup: `[judge]`, `x[i]` stay), in
    which no id is truncated: short columns keep their full width, long text wraps, and when the
    terminal (or a pipe's 80 columns) is too narrow for the unbreakable columns the table is
    printed wider than it rather than cut."""
    from rich.text import Text

    cells = [[fmt(v, digits) for v in row] for row in rows]
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


def fmt(value, digits: int = 4) -> str:
    """A cell's text: numbers to `digits` significant digits, None and NaN as a dash."""
    if value is None:
        return "—"
    if isinstance(value, float):
        if math.isnan(value):
            return "—"
        return f"{value:.{digits}g}"
    return str(value)


class RichProgress:
    """The progress bar of a run on stderr, with the workload being run."""

    def __init__(self, label: str):
        self.progress = Progress(
            # the remaining time is rich's estimate from the evaluations done so far (they differ
            # by task: a rough guide on a full run, not a promise)
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("left"), TimeRemainingColumn(compact=True),
            TextColumn("{task.fields[current]}"), console=err_console, transient=False,
        )
        self.label = label
        self.task = None
        self.total = 0
        self.done = 0

    def start(self, total: int) -> None:
        self.total = total
        self.progress.start()
        self.task = self.progress.add_task(self.label, total=total, current="")

    def record(self, record: dict) -> None:
        """Off a terminal the bar is drawn only when the run ends, so a log (a sweep under
        `timeout`, CI) would show nothing while it runs, or ever if it is killed: there each
        finished evaluation gets a plain line instead."""
        self.done += 1
        if err_console.is_terminal:
            return
        median = record.get("median_ms")
        # an interpreter's time is no kernel speed: only a GPU median is shown
        timed = f" {median:.4g} ms" if record.get("backend") == "cuda" and isinstance(median, (int, float)) else ""
        seconds = record.get("seconds")
        notes = [f"{seconds:.1f} s"] if isinstance(seconds, (int, float)) else []
        # the SM clock it ran under (unfixed on these machines; a latency-bound kernel follows it)
        timing = record.get("timing") if isinstance(record.get("timing"), dict) else {}
        clocks = timing.get("gpu_clocks") or {}
        low, high = clocks.get("sm_mhz_min"), clocks.get("sm_mhz_max")
        if isinstance(low, (int, float)) and isinstance(high, (int, float)):
            notes.append(f"SM {low:.0f} MHz" if low == high else f"SM {low:.0f}-{high:.0f} MHz")
        took = f" ({', '.join(notes)})" if notes else ""
        reason = f": {one_line(record['reason'])[:160]}" if record.get("status") != "passed" and record.get("reason") else ""
        # one line each: a newline in a solution's reason or file name forged a line of this log
        err_console.print(f"[{self.done}/{self.total}] {record.get('task_id', '?')} · {one_line(record.get('solution', '?'))} · "
                          f"{record.get('workload_id', '?')}: {record.get('status', '?')}{timed}{took}{reason}",
                          markup=False, highlight=False, soft_wrap=True)

    def workload(self, text: str) -> None:
        self.progress.update(self.task, current=escape(one_line(text)))  # a path like cand_[v2].py is not markup

    def advance(self) -> None:
        self.progress.advance(self.task)

    def stop(self) -> None:
        if self.task is not None:
            self.progress.update(self.task, current="")
        self.progress.stop()
