"""What the store holds, read out: ``d2k sql``, ``d2k report``, ``d2k analyze``, ``d2k export``, and
``d2k demo`` (a store built offline to try them on)."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from d2k.cli import common
from d2k.cli.common import DbOption, RichProgress, app, open_existing_store, print_table
from d2k.errors import D2KError


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
    store = open_existing_store(db, read_only=not write)
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
        print_table(cols, rows, digits=6)
        common.err_console.print(f"{len(rows)} row(s)")


@app.command()
def report(
    out: Path = typer.Option(Path("d2k-report"), "--out", help="Folder to write index.html, figures/ and tables/ into."),
    db: str | None = DbOption,
):
    """Write the benchmark report: every metric of the store as tables and figures in one HTML page."""
    from d2k.content import find_root
    from d2k.report import SECTIONS, build, store_labels, write

    store = open_existing_store(db)
    try:
        with Progress(TextColumn("report"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[current]}"),
                      console=common.err_console, transient=True,
                      disable=not common.err_console.is_terminal) as progress:  # off a terminal it left a blank line
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
    common.console.print(f"report: {page} ({filled} of {len(results)} sections with data, "
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
    store = open_existing_store(db, read_only=False)
    try:
        with common.console.status("bootstrapping over tasks, fitting the attribution…"):
            counts = run_analysis(store, n_boot=boot, seed=seed, judge=judge_name)
    finally:
        store.close()
    common.console.print(f"stored {counts['bootstrap']} bootstrap row(s) and {counts['attribution']} attribution row(s) "
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
    from d2k.export import export as run_export
    from d2k.export import list_names
    from d2k.store import default_path

    path = str(db or default_path())
    if list_only:
        tables, view_names = list_names(path)
        common.console.print("tables: " + ", ".join(tables), highlight=False, soft_wrap=True)
        common.console.print("views: " + ", ".join(view_names), highlight=False, soft_wrap=True)
        return
    names = [n.strip() for n in only.split(",") if n.strip()] if only else None
    written, version = run_export(path, out, format, names)
    rows = sum(n for _, _, n in written)
    common.console.print(f"wrote {len(written)} {format} file(s), {rows} row(s), to {out} (views version {version})",
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

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise D2KError(f"cannot write the demo to {out}: {exc.strerror or exc}") from None
    progress = RichProgress("demo experiment")
    try:
        made = build(out, db, progress=progress)
    finally:
        progress.stop()
    counts = made["counts"]
    common.console.print(f"demo store: {made['store']} ({counts['finished']} attempts finished, {counts['failed']} failed "
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
        common.console.print(f"demo report: {page}", highlight=False)
