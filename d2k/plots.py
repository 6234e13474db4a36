"""Figures of the report, drawn with matplotlib (Agg) from query results and returned as SVG text.

Each function takes the columns and rows of one report query and returns None when the rows hold
nothing to draw, so the report can say so instead of showing an empty axis.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections import defaultdict

MAIN_SOLUTIONS = ("expert", "naive", "compiled", "reference")
COLORS = {"expert": "#1b7837", "naive": "#762a83", "compiled": "#2166ac", "reference": "#8c8c8c",
          "guided": "#1b7837", "unguided": "#b35806"}
OTHER_COLORS = ["#e08214", "#d6604d", "#4393c3", "#35978f", "#bf812d", "#8073ac"]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "svg.fonttype": "none", "axes.spines.top": False,
                         "axes.spines.right": False})
    return plt


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    _pyplot().close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog so the SVG can be inlined in HTML


def _plain_numbers():
    """Log-axis tick labels as plain numbers (0.5, 2, 10), not powers of ten."""
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _: f"{v:g}")


def _records(cols, rows) -> list[dict]:
    return [dict(zip(cols, r)) for r in rows]


def _color(name: str, others: dict) -> str:
    if name in COLORS:
        return COLORS[name]
    if name not in others:
        others[name] = OTHER_COLORS[len(others) % len(OTHER_COLORS)]
    return others[name]


def _main_gpu(records: list[dict]) -> str | None:
    """The GPU with the most rows: one figure shows one machine (the tables show all)."""
    counts: dict[str, int] = defaultdict(int)
    for r in records:
        counts[r.get("gpu_name") or "?"] += 1
    return max(counts, key=counts.get) if counts else None


def _solution_order(names, max_solutions: int) -> list[str]:
    """The shipped solutions when present (candidates and submissions stay in the tables), else
    the first names in order."""
    main = [s for s in MAIN_SOLUTIONS if s in names]
    return main if main else sorted(names)[:max_solutions]


def _latest(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("latest", True)]


def task_speedups(cols, rows, max_solutions: int = 6) -> str | None:
    """Grouped horizontal bars: geomean speedup over eager per task and solution (log scale)."""
    records = [r for r in _latest(_records(cols, rows)) if r["geomean_speedup"] and r["geomean_speedup"] > 0]
    gpu = _main_gpu(records)
    records = [r for r in records if (r.get("gpu_name") or "?") == gpu and r["solution"] != "reference"]
    if not records:
        return None
    solutions = _solution_order({r["solution"] for r in records}, max_solutions)
    tasks = sorted({r["task_id"] for r in records}, reverse=True)
    value = {(r["task_id"], r["solution"]): r["geomean_speedup"] for r in records}
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 0.42 * len(tasks) + 1.2))
    height = 0.8 / len(solutions)
    others: dict = {}
    for k, sol in enumerate(solutions):
        ys = [i + (k - (len(solutions) - 1) / 2) * height for i in range(len(tasks))]
        xs = [value.get((t, sol), float("nan")) for t in tasks]
        ax.barh(ys, xs, height=height, color=_color(sol, others), label=sol)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(_plain_numbers())
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks(range(len(tasks)), tasks)
    ax.set_xlabel(f"geometric-mean speedup over the eager reference ({gpu}, bench workloads)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return _svg(fig)


def sol_fractions(cols, rows, max_solutions: int = 6, target: float = 0.8) -> str | None:
    """Dots: each bench workload's SOL fraction per task and solution, with the 0.8 line."""
    records = [r for r in _latest(_records(cols, rows)) if r["sol_fraction"] is not None and r["status"] == "passed"]
    gpu = _main_gpu(records)
    records = [r for r in records if (r.get("gpu_name") or "?") == gpu]
    if not records:
        return None
    solutions = _solution_order({r["solution"] for r in records}, max_solutions)
    records = [r for r in records if r["solution"] in solutions]
    tasks = sorted({r["task_id"] for r in records}, reverse=True)
    row_of = {t: i for i, t in enumerate(tasks)}
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 0.42 * len(tasks) + 1.2))
    others: dict = {}
    for k, sol in enumerate(solutions):
        pts = [r for r in records if r["solution"] == sol]
        ys = [row_of[r["task_id"]] + (k - (len(solutions) - 1) / 2) * 0.12 for r in pts]
        ax.scatter([r["sol_fraction"] for r in pts], ys, s=14, color=_color(sol, others), label=sol)
    ax.axvline(target, color="black", lw=0.8, ls="--")
    ax.set_xlim(0, max(1.0, max(r["sol_fraction"] for r in records) * 1.05))
    ax.set_yticks(range(len(tasks)), tasks)
    ax.set_xlabel(f"SOL fraction per bench workload ({gpu}); dashed: {target}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=8)
    return _svg(fig)


def implementation_heatmap(cols, rows, judge: str = "static") -> str | None:
    """Heatmap of the combined implementation score (0-100) per task: the shipped expert and
    naive solutions, and the mean over every other judged solution (candidates, submissions)."""
    records = [r for r in _latest(_records(cols, rows)) if r["judge"] == judge and r["combined"] is not None]
    if not records:
        return None
    other = "others (mean)"
    by_cell: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in records:
        column = r["solution"] if r["solution"] in ("expert", "naive") else other
        by_cell[(r["task_id"], column)].append(r["combined"])
    solutions = [c for c in ("expert", "naive", other) if any(k[1] == c for k in by_cell)]
    tasks = sorted({r["task_id"] for r in records})
    grid = [[float("nan")] * len(solutions) for _ in tasks]
    counts = [[0] * len(solutions) for _ in tasks]
    for (task, column), values in by_cell.items():
        i, j = tasks.index(task), solutions.index(column)
        grid[i][j] = sum(values) / len(values)
        counts[i][j] = len(values)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(1.3 * len(solutions) + 3.4, 0.34 * len(tasks) + 1.4))
    image = ax.imshow(grid, cmap="Greens", vmin=0, vmax=100, aspect="auto")
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            if not math.isnan(v):
                label = f"{v:.0f}" + (f" (n={counts[i][j]})" if solutions[j] == other else "")
                ax.text(j, i, label, ha="center", va="center", fontsize=8, color="white" if v > 60 else "black")
    ax.set_xticks(range(len(solutions)), solutions)
    ax.set_yticks(range(len(tasks)), tasks)
    fig.colorbar(image, ax=ax, label=f"implementation score, plain (mean of level credits), 0-100; {judge} judge")
    return _svg(fig)


def design_graphs(cols, rows, columns: int = 2) -> str | None:
    """Small multiples, one per task: its design items as a DAG (networkx; L1 on top, edges from
    prerequisite to dependent), each node coloured by its credit over the judged solutions
    (grey: no decided verdict)."""
    import networkx as nx

    records = _records(cols, rows)
    if not records:
        return None
    tasks = sorted({r["task_id"] for r in records})
    plt = _pyplot()
    from matplotlib import colormaps

    cmap = colormaps["RdYlGn"]
    n_rows = math.ceil(len(tasks) / columns)
    fig, axes = plt.subplots(n_rows, columns, figsize=(3.7 * columns, 3.3 * n_rows), squeeze=False)
    for ax in axes.flat:
        ax.set_axis_off()
    for ax, task in zip(axes.flat, tasks):
        items = [r for r in records if r["task_id"] == task]
        graph = nx.DiGraph()
        for r in items:
            graph.add_node(r["item_id"], level=r["level"])
        for r in items:
            for dep in filter(None, (d.strip() for d in (r["depends_on"] or "").split(","))):
                if dep in graph:
                    graph.add_edge(dep, r["item_id"])
        # one row per level (L1 on top), the level's items spread evenly across it
        pos = {}
        for level in sorted({graph.nodes[n]["level"] for n in graph.nodes}):
            row = sorted(n for n in graph.nodes if graph.nodes[n]["level"] == level)
            for i, node in enumerate(row):
                pos[node] = ((i + 1) / (len(row) + 1), -level)
        credit = {r["item_id"]: r["credit"] for r in items}
        colors = [cmap(credit[n]) if credit[n] is not None else "#cccccc" for n in graph.nodes]
        same_level = [(a, b) for a, b in graph.edges if pos[a][1] == pos[b][1]]
        across = [e for e in graph.edges if e not in same_level]
        # prerequisite above dependent: straight lines say the direction (drawn as one collection,
        # fast); an edge within a level is a curved arrow
        if across:
            nx.draw_networkx_edges(graph, pos, edgelist=across, ax=ax, arrows=False, width=0.7, edge_color="#777777")
        if same_level:
            nx.draw_networkx_edges(graph, pos, edgelist=same_level, ax=ax, arrowsize=8, width=0.7, edge_color="#777777",
                                   node_size=240, connectionstyle="arc3,rad=0.35")
        nx.draw_networkx_nodes(graph, pos, ax=ax, node_color=colors, node_size=240, edgecolors="#333333",
                               linewidths=0.5)
        for node, (x, y) in pos.items():  # the item id under its node, wrapped at word breaks
            row_size = sum(1 for n in pos if pos[n][1] == y)
            label = textwrap.fill(node.split(".", 1)[-1].replace("_", " "), {1: 18, 2: 14, 3: 10}.get(row_size, 8))
            ax.text(x, y - 0.15, label, ha="center", va="top", fontsize=7.5, linespacing=0.95)
        ax.set_title(task, fontsize=9.5)
        ax.set_xlim(0, 1)
        ax.set_ylim(-3.75, -0.7)
    scalar = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(0, 1))
    fig.colorbar(scalar, ax=axes, shrink=0.5, label="item credit (static judge)")
    return _svg(fig)


def performance(cols, rows) -> str | None:
    """Bars per model (pooled first): correctness, Performance Score and the dependency-aware
    implementation score, guided against unguided, with the 95 % bootstrap interval as whiskers."""
    records = _records(cols, rows)
    if not records:
        return None
    heads: dict[tuple, dict] = {}
    ci: dict[tuple, tuple] = {}
    for r in records:
        key = (r["experiment"], r["model"], r["condition"])
        heads.setdefault(key, r)
        if r.get("metric"):
            ci[key + (r["metric"],)] = (r.get("ci_low"), r.get("ci_high"))
    groups = sorted({(e, m) for e, m, _ in heads}, key=lambda g: (g[0], g[1] != "(all models)", g[1]))
    experiments = {e for e, _ in groups}
    plt = _pyplot()
    panels = (("correctness", 100.0, "correctness, % of tasks\n(harness failures count as incorrect)"),
              ("performance_score", 1.0, "Performance Score\n(mean task speedup, incorrect = 0)"),
              ("implementation_score", 1.0, "implementation score, 0-100\n(dependency-aware)"))
    fig, axes = plt.subplots(1, 3, figsize=(7.6, 0.5 * len(groups) + 1.9), sharey=True)
    for ax, (metric, scale, label) in zip(axes, panels):
        ax.set_xlabel(label, fontsize=8)
        if all(r.get(metric) is None for r in heads.values()):
            ax.text(0.5, 0.5, "not measured\n(no GPU speed)" if metric == "performance_score" else "none",
                    ha="center", va="center", transform=ax.transAxes, fontsize=8, color="#555555")
            ax.set_xticks([])
            continue
        for k, condition in enumerate(("guided", "unguided")):
            ys, xs, lo, hi = [], [], [], []
            for i, (e, m) in enumerate(groups):
                r = heads.get((e, m, condition))
                value = r.get(metric) if r else None
                ys.append(len(groups) - 1 - i + (0.2 if k == 0 else -0.2))
                xs.append((value or 0) * scale)
                low, high = ci.get((e, m, condition, metric), (None, None))
                lo.append(max(0.0, (value - low) * scale) if value is not None and low is not None else 0)
                hi.append(max(0.0, (high - value) * scale) if value is not None and high is not None else 0)
            ax.barh(ys, xs, height=0.38, color=COLORS[condition], label=condition,
                    xerr=[lo, hi], error_kw={"elinewidth": 0.8, "capsize": 2, "ecolor": "#333333"})
    names = [m if len(experiments) == 1 else f"{m} ({e})" for e, m in groups]
    axes[0].set_yticks([len(groups) - 1 - i for i in range(len(groups))], names)
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLORS[c]) for c in ("guided", "unguided")]
    axes[2].legend(handles, ["guided", "unguided"], loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=8,
                   title="whiskers: 95 % CI\nover tasks", title_fontsize=7)
    return _svg(fig)


def implementation_levels(cols, rows) -> str | None:
    """Bars per level, pooled over the models: mean item credit of the judged submissions, plain and
    dependency-aware, guided against unguided."""
    records = _records(cols, rows)
    if not records:
        return None
    experiment = sorted({r["experiment"] for r in records})[0]
    records = [r for r in records if r["experiment"] == experiment]
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(7.2, 2.6), sharey=True)
    for ax, field, label in ((axes[0], "plain", "plain credit (implemented 1, partial 0.5)"),
                             (axes[1], "dependency_aware", "dependency-aware credit")):
        for k, condition in enumerate(("guided", "unguided")):
            value = {r["level"]: r[field] for r in records if r["condition"] == condition}
            xs = [level + (-0.2 if k == 0 else 0.2) for level in (1, 2, 3)]
            ax.bar(xs, [value.get(level) or 0 for level in (1, 2, 3)], width=0.38, color=COLORS[condition],
                   label=condition)
        ax.set_xticks([1, 2, 3], ["L1", "L2", "L3"])
        ax.set_ylim(0, 1)
        ax.set_title(label, fontsize=9)
    axes[0].set_ylabel(f"mean credit, all models ({experiment})", fontsize=8)
    axes[1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=8)
    return _svg(fig)


def paired_speedups(cols, rows) -> str | None:
    """Scatter: each (model, task)'s speedup with the guidance against without it, with y = x."""
    records = [r for r in _records(cols, rows) if r["guided_speedup"] and r["unguided_speedup"]]
    if not records:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4.8, 4.4))
    xs = [r["unguided_speedup"] for r in records]
    ys = [r["guided_speedup"] for r in records]
    ax.scatter(xs, ys, s=18, color=COLORS["guided"], alpha=0.8 if len(records) <= 40 else 0.4)
    if len(records) <= 40:  # more names than that would only cover each other (the table has them)
        for r, x, y in zip(records, xs, ys):
            ax.annotate(r["task_id"], (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    lo, hi = min(xs + ys) / 1.3, max(xs + ys) * 1.3
    ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(_plain_numbers())
        axis.set_minor_formatter(_plain_numbers())
    ax.set_xlabel("geomean speedup over eager, correct attempts, unguided")
    ax.set_ylabel("same, guided (expert design given)")
    return _svg(fig)
