"""The benchmark report: the store's metrics as one HTML page with tables and figures.

Every section is one query of ``analysis/report/NN_name.sql`` (its leading ``--`` comment is the
section's description) and, for some, a figure of ``d2k.plots`` drawn from the section's rows or
from ``NN_name.figure.sql`` where the figure needs other columns than the table shows. The report
is written to a folder: ``index.html`` (self-contained, figures inlined as SVG, readable at 800 px),
``figures/*.svg`` and ``tables/*.csv`` for reuse elsewhere. A section with no rows says so; speed
sections use GPU evaluations only (the views exclude interpreter timings).

The bootstrap intervals and the attribution come from the tables ``d2k analyze`` stores when they
were computed from the views in force; otherwise the report computes them itself for this page
(as temporary tables of its session: the store is not changed) and says so.
"""

from __future__ import annotations

import csv
import datetime as dt
import html
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from d2k import plots
from d2k.errors import D2KError


@dataclass(frozen=True)
class Section:
    name: str        # the query file's stem without its number
    title: str
    empty: str       # what an empty result means, said instead of an empty table
    figure: Callable | None = None
    analysis: str | None = None   # the table of d2k analyze the section reads


NO_EXPERIMENT = "No finished experiment attempts: run `d2k experiment run SPEC` (or `d2k demo` for a demo store)."
SECTIONS = [
    Section("overview", "What the store holds", "The store is empty."),
    Section("environments", "Machines, dates and measured ceilings", "No environment recorded yet."),
    Section("performance", "Paired experiments: the headline table", NO_EXPERIMENT, plots.performance,
            analysis="analysis_bootstrap"),
    Section("guidance_effect", "Paired experiments: the guidance effect", NO_EXPERIMENT,
            analysis="analysis_bootstrap"),
    Section("paired", "Paired experiments per task", NO_EXPERIMENT, plots.paired_speedups),
    Section("implementation_levels", "Paired experiments: implementation per level",
            "No judged submissions of experiment attempts.", plots.implementation_levels),
    Section("missed_items", "Paired experiments: the design items missed most",
            "No judged submission misses a design item (or nothing was judged)."),
    Section("prerequisite_gaps", "Paired experiments: items built without their prerequisites",
            "No judged submission implements an item whose prerequisite is missing."),
    Section("design_vs_build", "Paired experiments: designed against built",
            "No attempt has both a graded DESIGN.md and a judged submission (proposals are graded when an LLM "
            "judge is configured)."),
    Section("attribution", "Which implemented items go with speed (GPU)",
            "No solution has both a GPU task speedup and judge verdicts that differ between solutions.",
            analysis="analysis_attribution"),
    Section("task_speed", "Speed per task (GPU)",
            "No GPU evaluations in this store: speed is only reported from a GPU "
            "(interpreter timings are never kernel speed). Run `d2k bench` on a GPU or `d2k ingest` its results "
            "(analysis/data/h200/ holds the project's H200 measurements).",
            plots.task_speedups),
    Section("workload_speed", "Speed per workload (GPU)", "No GPU evaluations in this store.", plots.sol_fractions),
    Section("correctness", "Correctness", "No evaluations in this store: run `d2k bench`."),
    Section("trust", "What the trusted side could not vouch for, and figures holding host time",
            "Nothing flagged: no kernel-less solution, rejected timing, late-issued calls, mid-call wait "
            "for the device, span over 5 % outside its kernels or sandbox warning."),
    Section("implementation", "Design properties implemented by solutions",
            "No judged solutions: run `d2k judge code --all`.", plots.implementation_heatmap),
    Section("unimplemented", "Design properties left out",
            "No static verdict marks a property missing or partial (or nothing was judged)."),
    Section("design_graph", "Design properties on their dependency graphs",
            "No judged solutions: run `d2k judge code --all`.", plots.design_graphs),
    Section("judge_agreement", "Judges against the gold labels", "No judge evaluated yet: run `d2k judge eval`."),
]


def query_files(root: Path) -> dict[str, Path]:
    """Section name -> query file; ``name.figure`` -> the figure's own query where there is one."""
    folder = root / "analysis" / "report"
    if not folder.is_dir():
        raise D2KError(f"{folder} is missing: the report's queries live there")
    files = {p.name[:-4].split("_", 1)[1]: p for p in sorted(folder.glob("[0-9][0-9]_*.sql"))}
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
    if isinstance(value, (list, tuple)):
        return ", ".join(_cell(v) for v in value)
    return str(value)


def _breakable(escaped: str) -> str:
    """Long ids may wrap after _ / . , (a <wbr>), so a narrow page wraps them instead of overflowing."""
    return re.sub(r"([_/.,])(?=\w)", r"\1<wbr>", escaped) if len(escaped) > 12 else escaped


def _text(value: str) -> str:
    """Escaped text in which `code` becomes <code>code</code> (no literal backticks on the page)."""
    parts = str(value).split("`")
    out = []
    for i, part in enumerate(parts):
        escaped = " ".join(_breakable(word) for word in html.escape(part).split(" "))
        out.append(f"<code>{escaped}</code>" if i % 2 and i < len(parts) - 1 else escaped)
    return "".join(out)


# columns that, when one value holds for every row, move out of the table into a line above it
# (the CSV keeps them): a narrow page keeps its width for the columns that vary
HOISTED = ("experiment", "gpu_name", "judge")


def _header(name: str) -> str:
    return html.escape(name.replace("_", " "))


def _table_html(cols, rows) -> str:
    hoisted = [i for i, c in enumerate(cols) if c in HOISTED and len(rows) > 1 and len({r[i] for r in rows}) == 1]
    lead = ""
    if hoisted:
        lead = "<p class='const'>" + " · ".join(f"{_header(cols[i])}: {_text(_cell(rows[0][i]))}" for i in hoisted) + "</p>"
        keep = [i for i in range(len(cols)) if i not in hoisted]
        cols = [cols[i] for i in keep]
        rows = [tuple(r[i] for i in keep) for r in rows]
    head = "".join(f"<th>{_header(c)}</th>" for c in cols)
    body = "\n".join(
        "<tr>" + "".join(
            f"<td class='num'>{_text(_cell(v))}</td>" if isinstance(v, (int, float)) and not isinstance(v, bool)
            else f"<td>{_text(_cell(v))}</td>" for v in row) + "</tr>"
        for row in rows)
    return f"{lead}<table><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>"


STYLE = """
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px; padding: 0 12px; color: #222; }
h1 { margin-bottom: 0.2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; font-size: 1.25em; }
p.meta, p.desc, p.empty, p.note { color: #555; } p.empty { font-style: italic; }
p.banner { background: #fff3cd; border: 2px solid #d39e00; padding: 0.6em 0.9em; font-weight: 600; color: #5c4400; }
p.source { background: #eef6ee; border: 1px solid #9c9; padding: 0.5em 0.9em; }
table { border-collapse: collapse; font-size: 12px; margin: 0.6em 0; max-width: 100%; }
th, td { border: 1px solid #ddd; padding: 2px 5px; text-align: left; vertical-align: top;
         overflow-wrap: break-word; white-space: pre-line; }
p.const { margin: 0.6em 0 0; color: #333; font-size: 12px; }
th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 0.8em 0; } figure svg { max-width: 100%; height: auto; display: block; }
nav { line-height: 1.9; } nav a { margin-right: 0.8em; white-space: nowrap; }
code { font-size: 0.95em; background: #f4f4f4; padding: 0 2px; }
"""


@dataclass
class SectionResult:
    section: Section
    description: str
    columns: list[str]
    rows: list[tuple]
    figure: str | None
    note: str | None = None


def _analysis_tables(store, needed: set[str]) -> dict[str, str]:
    """For each analysis table a section reads: use the stored rows if they were computed from the
    views in force, else compute them now into a temporary table of this session (shadowing the
    stored one). Returns a note per table."""
    from d2k.analysis import stored_or_computed

    notes = {}
    for table in sorted(needed):
        cols, rows, note = stored_or_computed(store, table)
        if not note.startswith("stored"):
            store.con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS SELECT * FROM {table} LIMIT 0")
            if rows:
                placeholders = ",".join("?" * len(cols))
                store.con.executemany(f"INSERT INTO temp.{table} ({', '.join(cols)}) VALUES ({placeholders})",
                                      [list(r) for r in rows])
        notes[table] = note
    return notes


def store_labels(store) -> dict:
    """What the page must say about the store before any table: a demo store, and the GPU data's
    machines and dates."""
    labels: dict = {"demo": None, "gpu_sources": []}
    _, rows = store.query("SELECT value FROM meta WHERE key = 'demo'")
    if rows:
        try:
            labels["demo"] = json.loads(rows[0][0])
        except (TypeError, ValueError):
            labels["demo"] = {"note": str(rows[0][0])}
    _, rows = store.query(
        """SELECT coalesce(env.gpu_name, '?'), strftime(min(e.created_at), '%Y-%m-%d'), strftime(max(e.created_at), '%Y-%m-%d'),
                  count(*), string_agg(DISTINCT r.results_path, '; ')
           FROM evaluations e JOIN environments env USING (env_id) LEFT JOIN runs r USING (run_id)
           WHERE e.backend = 'cuda' GROUP BY 1 ORDER BY 4 DESC""")
    labels["gpu_sources"] = rows
    labels["views_version"] = getattr(store, "views_version", None)
    return labels


# views several sections read: computed once per report into a temporary table of the session, the
# view's name then pointing at it (the store is not changed; the definitions are the views')
CACHED_VIEWS = ("v_item_verdicts",)


def _cache_views(store) -> None:
    for view in CACHED_VIEWS:
        store.con.execute(f"CREATE OR REPLACE TEMP TABLE _report_{view} AS SELECT * FROM {view}")
        store.con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT * FROM temp._report_{view}")


def build(store, root: Path, progress: Callable[[str], None] | None = None) -> list[SectionResult]:
    """Run every section's query against the store and draw its figure; ``progress`` hears each
    finished section."""
    files = query_files(root)
    _cache_views(store)
    notes = _analysis_tables(store, {s.analysis for s in SECTIONS if s.analysis})
    results = []
    for section in SECTIONS:
        sql = files[section.name].read_text(encoding="utf-8")
        cols, rows = store.query(sql)
        figure = None
        if section.figure and rows:
            figure_file = files.get(section.name + ".figure")
            fcols, frows = store.query(figure_file.read_text(encoding="utf-8")) if figure_file else (cols, rows)
            figure = section.figure(fcols, frows) if frows else None
        note = notes.get(section.analysis) if section.analysis and rows else None
        results.append(SectionResult(section, description(sql), cols, rows, figure, note))
        if progress:
            progress(section.name)
    return results


def _banner(labels: dict | None) -> list[str]:
    if not labels:
        return []
    parts = []
    if labels.get("demo"):
        demo = labels["demo"]
        parts.append(f"<p class='banner'>DEMO STORE. {_text(demo.get('note', ''))}"
                     f"{' (built ' + html.escape(demo['built']) + ')' if demo.get('built') else ''}.</p>")
    for gpu, first, last, n, sources in labels.get("gpu_sources") or []:
        when = first if first == last else f"{first} to {last}"
        source = f"; source {_text(sources)}" if sources else ""
        parts.append(f"<p class='source'>GPU measurements: {html.escape(gpu)}, measured {html.escape(when)} "
                     f"({n} evaluations{source}).</p>")
    return parts


def render(results: list[SectionResult], store_path: str, labels: dict | None = None) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    title = "D2K-Bench report" + (" (DEMO)" if labels and labels.get("demo") else "")
    nav = " ".join(f"<a href='#{r.section.name}'>{html.escape(r.section.title)}</a>" for r in results)
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
             f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{html.escape(title)}</title>"
             f"<style>{STYLE}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>",
             *_banner(labels),
             f"<p class='meta'>Store <code>{html.escape(store_path)}</code>, written {stamp} by <code>d2k report</code>. "
             "Tables are also in <code>tables/*.csv</code>, figures in <code>figures/*.svg</code>; "
             "<code>docs/metrics.md</code> defines every metric"
             + (f" (metric views version <code>{html.escape(labels['views_version'])}</code>, the sha256 of "
                "<code>d2k/sql/views.sql</code>)" if labels and labels.get("views_version") else "") + ".</p>",
             f"<nav>{nav}</nav>"]
    for r in results:
        parts.append(f"<h2 id='{r.section.name}'>{html.escape(r.section.title)}</h2>")
        parts.append(f"<p class='desc'>{_text(r.description)}</p>")
        if not r.rows:
            parts.append(f"<p class='empty'>{_text(r.section.empty)}</p>")
            continue
        if r.figure:
            parts.append(f"<figure>{r.figure}</figure>")
        parts.append(_table_html(r.columns, r.rows))
        note = f" · intervals and fits {_text(r.note)}" if r.note else ""
        parts.append(f"<p class='meta'>{len(r.rows)} row(s) · <a href='tables/{r.section.name}.csv'>CSV</a>{note}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _csv_value(value):
    return value.replace("\n", " ") if isinstance(value, str) else value


def write(results: list[SectionResult], out: Path, store_path: str, labels: dict | None = None) -> Path:
    """Write index.html, figures/ and tables/ under ``out``; the page last, so a crash leaves no
    page that points at missing files."""
    (out / "figures").mkdir(parents=True, exist_ok=True)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    names = {r.section.name for r in results}
    for stale in (out / "tables").glob("*.csv"):
        if stale.stem not in names:
            stale.unlink()  # a table of a section an earlier version of the report had
    for r in results:
        with open(out / "tables" / f"{r.section.name}.csv", "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(r.columns)
            writer.writerows([_csv_value(v) for v in row] for row in r.rows)
        figure_path = out / "figures" / f"{r.section.name}.svg"
        if r.figure:
            figure_path.write_text(r.figure, encoding="utf-8")
        elif figure_path.exists():
            figure_path.unlink()  # a figure of an earlier report that this store no longer supports
    for stale in (out / "figures").glob("*.svg"):
        if stale.stem not in names:
            stale.unlink()
    page = out / "index.html"
    tmp = page.with_suffix(".html.tmp")
    tmp.write_text(render(results, store_path, labels), encoding="utf-8")
    tmp.replace(page)
    return page


def report(store, root: Path, out: Path, progress: Callable[[str], None] | None = None) -> tuple[Path, list[SectionResult]]:
    """Build and write the report of an open store."""
    labels = store_labels(store)
    results = build(store, root, progress)
    return write(results, out, store.path, labels), results

