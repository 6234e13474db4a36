"""Running solutions and storing what they measure: ``d2k eval``, ``d2k bench``, ``d2k calibrate``,
and ``d2k ingest`` (results measured on another machine)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from d2k.cli import common
from d2k.cli.common import (
    EXIT_FAILED,
    DbOption,
    RichProgress,
    app,
    checked_bench,
    open_store,
    packaged_query,
    print_table,
    resolve_backend,
)
from d2k.errors import D2KError
from d2k.text import one_line


def _summary(store, env: dict, solution_ids: list[str], per_workload: bool, device_span: bool = False) -> None:
    """The table after a run: speedups on a GPU (per workload or per task), correctness on the interpreter."""
    if not solution_ids:
        return
    backend = env.get("backend")
    # which figure the medians are (a call the profiler cannot time keeps its event window: timing_method)
    times = "device spans" if device_span else "event windows"
    if backend == "cuda" and per_workload:
        query = "summary_gpu_workloads"
        title = f"GPU results on {env.get('gpu_name')} (median of per-call {times}, L2 flushed)"
    elif backend == "cuda":
        query = "summary_gpu_tasks"
        title = f"Per task on {env.get('gpu_name')}: geometric means over bench workloads (per-call {times})"
    else:
        query = "summary_interpreter"
        title = "Correctness under the CPU Triton interpreter (timings there are not kernel speed)"
    cols, rows = store.query(packaged_query(query), [env["env_id"], solution_ids])
    print_table(cols, rows, title)


TIMING_NOTES_SHOWN = 12   # lines; the rest are in the store (flags, timing)


def _print_timing_notes(records: list[dict], eager_labels: dict[str, str] | None = None) -> None:
    """After a GPU run, what each passed figure holds besides the solution's kernels (d2k.timing_notes).
    The task's eager figure is left out (the reference, or the stand-in baseline ``eager_labels``
    names for its task): its launch gaps and host reads are PyTorch's, expected, and would crowd
    out the solutions' notes (the report's trust section lists every record's). ``compiled`` keeps
    its notes: it is a baseline a solution is compared with."""
    from d2k.timing_notes import timing_notes

    eager_labels = eager_labels or {}

    def eager(r: dict) -> bool:
        return r.get("solution") in ("reference", eager_labels.get(r.get("task_id")))

    lines = [f"{r['task_id']} · {one_line(r['solution'])} · {r['workload_id']}: {note}"
             for r in records if not eager(r) for note in timing_notes(r)]
    for line in lines[:TIMING_NOTES_SHOWN]:
        common.err_console.print(f"note: {line}", markup=False, highlight=False, soft_wrap=True)
    if len(lines) > TIMING_NOTES_SHOWN:
        common.err_console.print(f"note: {len(lines) - TIMING_NOTES_SHOWN} more such notes: the store's `flags` and "
                                 f"`timing` columns (SELECT workload_id, flags, timing FROM evaluations)",
                                 markup=False, highlight=False, soft_wrap=True)


TIMING_HELP = ("events | span (default: as $D2K_TIMING says, else events). events: each call's CUDA-event window. "
               "span: each call's device span from the CUDA profiler, its first kernel's start to its last kernel's "
               "end, with the L2 made cold by a read flush (timing v2; GPU only; the event window is stored beside it).")


def timing_mode(mode: str | None, backend: str) -> dict | None:
    """The timing overrides of ``--timing``, or a one-line error for a name or backend that has none."""
    from d2k.job_payload import TIMING_MODES

    if mode is None:
        return None
    if mode not in TIMING_MODES:
        raise D2KError(f"--timing must be events or span, not {mode!r}")
    if mode == "span" and backend != "cuda":
        raise D2KError("--timing span needs a GPU: the CPU interpreter has no device to read a span from "
                       "(its timings are wall clock, never kernel speed)")
    return TIMING_MODES[mode]


def _run(bench_content, plans, backend: str, command: str, args: dict, db, force: bool, per_workload: bool, timeout: float,
         timed: bool = True, timing: dict | None = None):
    from d2k.supervisor import Limits
    from d2k.sweep import run_sweep

    if not timeout > 0:   # also rejects nan
        raise D2KError(f"--timeout must be a positive number of seconds, not {timeout:g}")
    big = sum(1 for p in plans for w in p.workloads if w.tag == "bench")
    if backend == "interpreter" and big:
        # bench shapes are sized for the GPU: the interpreter runs them for minutes to hours each
        common.err_console.print(
            f"note: {big} bench workload run(s) under the CPU interpreter: sized for a GPU, each may run until "
            f"--timeout ({timeout:g} s) and is checked for correctness only; --workloads smoke is sized for the "
            f"interpreter", highlight=False)
    store = open_store(db)
    progress = RichProgress(command)
    limits = Limits(per_workload_s=timeout, total_s=max(timeout * 4, 3600.0))
    try:
        result = run_sweep(bench_content, store, plans, backend, command, args, limits=limits, timing=timing, force=force,
                           progress=progress, timed=timed)
    finally:
        progress.stop()
    if result.skipped:
        common.err_console.print(f"skipped {result.skipped} evaluation(s) already stored for this environment (--force to redo)")
    failed = [r for r in result.records if r["status"] != "passed"]
    for r in failed:
        common.err_console.print(f"[red]{escape(str(r['status']))}[/red] "
                                 + escape(f"{r['task_id']} · {one_line(r['solution'])} · {r['workload_id']}: "
                                          f"{one_line(r.get('reason'))}"),
                                 highlight=False, soft_wrap=True)
    from d2k.solutions import eager

    _print_timing_notes(result.records, {t: eager(bench_content, t).label for t in {p.solution.task_id for p in plans}})
    from d2k.job_payload import timing_settings

    _summary(store, result.env, sorted({p.solution.solution_id for p in plans}), per_workload,
             timing_settings(timing)["device_span"])
    common.err_console.print(f"run {result.run_id}: results in {result.results_path}, store {store.path}",
                             markup=False, highlight=False)
    store.close()
    return result


@app.command("eval")
def eval_cmd(
    task: str = typer.Argument(..., help="Task id (see `d2k tasks`)."),
    solution: str = typer.Argument(..., help="A solution file, or expert | naive | reference | compiled."),
    workloads: str = typer.Option("auto", help="bench | smoke | all (auto: bench on a GPU, smoke on the interpreter)."),
    backend: str = typer.Option("auto", help="auto | cuda | interpreter."),
    reference: bool = typer.Option(True, help="Also time the task's eager figure, the PyTorch reference or its "
                                              "stand-in (for the speedup)."),
    force: bool = typer.Option(False, help="Re-run evaluations the store already holds."),
    timeout: float = typer.Option(600.0, help="Seconds per workload before the worker is killed."),
    timing: str | None = typer.Option(None, "--timing", help=TIMING_HELP),
    db: str | None = DbOption,
):
    """Check and time one solution on a task's workloads, each solution in its own process."""
    from d2k.solutions import eager, resolve
    from d2k.sweep import Plan

    bench = checked_bench([task])
    backend = resolve_backend(backend)
    overrides = timing_mode(timing, backend)
    tag = workloads if workloads != "auto" else ("bench" if backend == "cuda" else "smoke")
    selected = bench.select_workloads(task, tag)
    if not selected:
        raise D2KError(f"task {task} has no {tag} workloads")
    plans = [Plan(resolve(bench, task, solution), selected)]
    if reference and solution != "reference" and backend == "cuda":
        plans.append(Plan(eager(bench, task), selected))  # the reference, or the task's eager stand-in
    result = _run(bench, plans, backend, "eval", {"task": task, "solution": solution, "workloads": tag, "timing": timing},
                  db, force, True, timeout, timing=overrides)
    if any(r["status"] != "passed" for r in result.records if r["solution_id"] == plans[0].solution.solution_id):
        raise typer.Exit(EXIT_FAILED)


@app.command()
def bench(
    tasks: str | None = typer.Option(None, "--tasks", help="Comma-separated task ids (default: all)."),
    solution: list[str] | None = typer.Option(None, "--solution",
                                       help="expert | naive | reference (or the task's eager stand-in baseline, "
                                            "where it names one) | compiled (torch.compile of that eager figure) | "
                                            "baselines (each library adapter in tasks/<id>/baselines/) | PATH; "
                                            "repeat for several."),
    workloads: str = typer.Option("auto", help="bench | smoke | all (auto: bench on a GPU, smoke on the interpreter)."),
    backend: str = typer.Option("auto", help="auto | cuda | interpreter."),
    force: bool = typer.Option(False, help="Re-run evaluations the store already holds."),
    time_interpreter: bool = typer.Option(False, "--time-interpreter",
                                          help="Also time calls under the CPU interpreter (wall clock, never kernel speed)."),
    per_workload: bool = typer.Option(False, "--per-workload", help="Summarise per workload instead of per task."),
    timeout: float = typer.Option(600.0, help="Seconds per workload before the worker is killed."),
    timing: str | None = typer.Option(None, "--timing", help=TIMING_HELP),
    db: str | None = DbOption,
):
    """Run solutions over tasks (default: every task's expert, naive and reference) and summarise."""
    from d2k.sweep import bench_plans

    only = [t.strip() for t in tasks.split(",") if t.strip()] if tasks is not None else None
    if only == []:
        # an empty list is a mistake (an unset shell variable), not "every task"
        raise D2KError("--tasks names no task: give comma-separated task ids, or leave it out for all")
    bench_content = checked_bench(only)
    backend = resolve_backend(backend)
    overrides = timing_mode(timing, backend)
    tag = workloads if workloads != "auto" else ("bench" if backend == "cuda" else "smoke")
    # Defaults: on a GPU every task's expert, naive and reference, checked and timed; under the CPU
    # interpreter the experts' correctness only (its timings are never kernel speed, and every
    # solution costs two process starts there), so the README's main job stays short.
    if not solution:
        solution = ["expert", "naive", "reference"] if backend == "cuda" else ["expert"]
    timed = backend == "cuda" or time_interpreter
    plans = bench_plans(bench_content, solution, backend, tag)
    if not plans:
        raise D2KError("nothing to run: no workloads or solutions matched")
    result = _run(bench_content, plans, backend, "bench",
                  {"tasks": only, "solutions": solution, "workloads": tag, "timed": timed, "timing": timing},
                  db, force, per_workload, timeout, timed=timed, timing=overrides)
    if any(r["status"] != "passed" for r in result.records):
        raise typer.Exit(EXIT_FAILED)


@app.command()
def calibrate(db: str | None = DbOption):
    """Measure copy bandwidth and bf16/fp8/fp32 matmul peaks on this GPU and store them with the environment."""
    import uuid

    from d2k import supervisor
    from d2k.execution.probe import detect_backend, probe_environment
    from d2k.sweep import work_dir

    backend = "cuda"
    if detect_backend("auto") != "cuda":
        raise D2KError("calibrate needs a CUDA GPU (torch sees none)")
    directory = work_dir() / "calibrations" / uuid.uuid4().hex[:8]
    env = probe_environment(backend, directory)
    with common.console.status("measuring copy bandwidth and matmul peaks…"):
        cal = supervisor.run_single({"kind": "calibrate", "backend": backend, "timing": {}}, directory, "calibration", 900)
    store = open_store(db)
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
    if cal.get("launch_cost_us") is not None:
        # beyond a kernel's own run time: counted by ncu and graph replays, not by a CUPTI span
        table.add_row("kernel launch cost (graph − CUPTI)", f"{cal['launch_cost_us']:.2f} µs")
    common.console.print(table)
    (directory / "calibration.json").write_text(json.dumps({"env": env, "calibration": cal}, indent=1, default=str))
    common.console.print(f"stored, and written to {directory / 'calibration.json'} (for d2k ingest elsewhere)")
    store.close()


@app.command()
def ingest(files: list[Path] = typer.Argument(..., help="results.jsonl files of d2k runs, or calibration.json files of d2k "
                                                        "calibrate, written elsewhere."),
           db: str | None = DbOption):
    """Load results produced on another machine (e.g. a GPU node) into the store."""
    from d2k.ingest import ingest as ingest_file

    store = open_store(db)
    try:  # the content is stored alongside when it is valid; results are ingested either way
        bench_content = checked_bench()
    except D2KError:
        bench_content = None
    try:
        for path in files:  # each file whole or not at all; the first bad one stops here
            counts = ingest_file(store, bench_content, path)
            added = ", ".join(f"{v} {k}(s)" for k, v in counts.items() if v and k != "unchanged") or "nothing new"
            unchanged = f" ({counts['unchanged']} record(s) already stored)" if counts.get("unchanged") else ""
            common.console.print(f"{path}: {added}{unchanged}", markup=False, highlight=False, soft_wrap=True)
    finally:
        store.close()
