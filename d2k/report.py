"""The benchmark report: the store's metrics as one HTML page with tables and figures.

Every section is one query of ``analysis/report/NN_name.sql`` (its leading ``--`` comment is
the section's description) and, for some, a figure of ``d2k.plots``. The report is written to a
folder: ``index.html`` (self-contained, figures inlined as SVG), ``figures/*.svg`` and
``tables/*.csv`` for reuse elsewhere. A section with no rows says so; speed sections use GPU
evaluations only (the views exclude interpreter timings).
"""

from __future__ import annotations

import csv
import datetime as dt
import html
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from d2k import plots
from d2k.errors import D2KError


@dataclass(frozen=True)
class Section:
    name: str        # the query file's stem without its number
    title: str
    empty: str       # what an empty result means, said instead of an empty table
    figure: Callable | None = None


SECTIONS = [
    Section("overview", "What the store holds", "The store is empty."),
    Section("environments", "Machines and their measured ceilings", "No environment recorded yet."),
    Section("task_speed", "Speed per task (GPU)",
            "No GPU evaluations in this store: speed is only reported from a GPU "
            "(interpreter timings are never kernel speed). Run `d2k bench` on a GPU or `d2k ingest` its results.",
            plots.task_speedups),
    Section("workload_speed", "Speed per workload (GPU)", "No GPU evaluations in this store.", plots.sol_fractions),
    Section("correctness", "Correctness", "No evaluations in this store: run `d2k bench`."),
    Section("implementation", "Design properties implemented",
            "No judged solutions: run `d2k judge --all`.", plots.implementation_heatmap),
    Section("unimplemented", "Design properties left out",
            "No static verdict marks a property missing or partial (or nothing was judged)."),
    Section("design_graph", "Design properties on their dependency graphs",
            "No judged solutions: run `d2k judge --all`.", plots.design_graphs),
    Section("judge_agreement", "Judges against the gold labels", "No judge evaluated yet: run `d2k judge-eval`."),
    Section("performance", "Paired experiments: headline metrics",
            "No finished experiment attempts: run `d2k experiment run SPEC`.", plots.performance),
    Section("paired", "Paired experiments per task", "No finished experiment attempts.", plots.paired_speedups),
]


def query_files(root: Path) -> dict[str, Path]:
    folder = root / "analysis" / "report"
    if not folder.is_dir():
        raise D2KError(f"{folder} is missing: the report's queries live there")
    files = {p.stem.split("_", 1)[1]: p for p in sorted(folder.glob("[0-9][0-9]_*.sql"))}
    missing = [s.name for s in SECTIONS if s.name not in files]
    if missing:
        raise D2KError(f"{folder} lacks the queries of: {', '.join(missing)}")
    return files


def description(sql: str) -> str:
    lines = []
    for line in sql.splitlines():
        if not line.startswith("--"):
            break
        lines.append(line[2:].strip())
    return " ".join(lines)


def _cell(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return "—" if math.isnan(value) else f"{value:.4g}"
    return str(value)


def _table_html(cols, rows) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "\n".join(
        "<tr>" + "".join(
            f"<td class='num'>{html.escape(_cell(v))}</td>" if isinstance(v, (int, float)) and not isinstance(v, bool)
            else f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>"
        for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>"


STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { margin-bottom: 0.2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
p.meta, p.desc, p.empty { color: #555; } p.empty { font-style: italic; }
table { border-collapse: collapse; font-size: 12px; margin: 0.6em 0; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; position: sticky; top: 0; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
div.scroll { max-height: 32em; overflow: auto; } figure { margin: 0.8em 0; } figure svg { max-width: 100%; height: auto; }
nav a { margin-right: 0.8em; }
"""


@dataclass
class SectionResult:
    section: Section
    description: str
    columns: list[str]
    rows: list[tuple]
    figure: str | None


def build(store, root: Path, progress: Callable[[str], None] | None = None) -> list[SectionResult]:
    """Run every section's query against the store and draw its figure; ``progress`` hears each
    finished section."""
    files = query_files(root)
    results = []
    for section in SECTIONS:
        sql = files[section.name].read_text()
        cols, rows = store.query(sql)
        figure = section.figure(cols, rows) if section.figure and rows else None
        results.append(SectionResult(section, description(sql), cols, rows, figure))
        if progress:
            progress(section.name)
    return results


def render(results: list[SectionResult], store_path: str) -> str:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    nav = " ".join(f"<a href='#{r.section.name}'>{html.escape(r.section.title)}</a>" for r in results)
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>D2K-Bench report</title>"
             f"<style>{STYLE}</style></head><body>",
             "<h1>D2K-Bench report</h1>",
             f"<p class='meta'>Store <code>{html.escape(store_path)}</code>, written {stamp} by <code>d2k report</code>. "
             "Tables are also in <code>tables/*.csv</code>, figures in <code>figures/*.svg</code>.</p>",
             f"<nav>{nav}</nav>"]
    for r in results:
        parts.append(f"<h2 id='{r.section.name}'>{html.escape(r.section.title)}</h2>")
        parts.append(f"<p class='desc'>{html.escape(r.description)}</p>")
        if not r.rows:
            parts.append(f"<p class='empty'>{html.escape(r.section.empty)}</p>")
            continue
        if r.figure:
            parts.append(f"<figure>{r.figure}</figure>")
        parts.append(f"<div class='scroll'>{_table_html(r.columns, r.rows)}</div>")
        parts.append(f"<p class='meta'>{len(r.rows)} row(s) · <a href='tables/{r.section.name}.csv'>CSV</a></p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write(results: list[SectionResult], out: Path, store_path: str) -> Path:
    """Write index.html, figures/ and tables/ under ``out``; the page last, so a crash leaves no
    page that points at missing files."""
    (out / "figures").mkdir(parents=True, exist_ok=True)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    for r in results:
        with open(out / "tables" / f"{r.section.name}.csv", "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(r.columns)
            writer.writerows(r.rows)
        figure_path = out / "figures" / f"{r.section.name}.svg"
        if r.figure:
            figure_path.write_text(r.figure, encoding="utf-8")
        elif figure_path.exists():
            figure_path.unlink()  # a figure of an earlier report that this store no longer supports
    page = out / "index.html"
    tmp = page.with_suffix(".html.tmp")
    tmp.write_text(render(results, store_path), encoding="utf-8")
    tmp.replace(page)
    return page
