"""Paired agent experiments: ``d2k experiment run`` and ``d2k experiment status``."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from d2k.cli import common
from d2k.cli.common import (
    EXIT_FAILED,
    DbOption,
    RichProgress,
    app,
    checked_bench,
    needs_a_command,
    open_existing_store,
    open_store,
    packaged_query,
    print_table,
    resolve_backend,
)
from d2k.errors import D2KError

experiment_app = typer.Typer(help="Paired agent experiments: run a spec, follow its progress.")
app.add_typer(experiment_app, name="experiment")
experiment_app.callback(invoke_without_command=True)(needs_a_command)


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
    from d2k.experiment.driver import run_experiment
    from d2k.sweep import work_dir

    spec = spec_mod.load(spec_path)
    if executor not in (None, "local", "ray"):
        raise D2KError(f"--executor must be local or ray, not {executor!r}")
    bench_content = checked_bench(spec.tasks)
    chosen_backend = resolve_backend(backend or spec.backend)
    judge_context = None
    if os.environ.get("D2K_JUDGE_MODEL") or Path("d2k.toml").is_file():
        from d2k.judge import settings as settings_mod

        settings = settings_mod.load(root=bench_content.root)
        if settings.model:
            from d2k.judge.pipeline import LLMContext

            judge_context = LLMContext(bench_content, settings)
    store = open_store(db)
    progress = RichProgress(f"experiment {spec.name}")
    try:
        counts = run_experiment(spec, spec_path, store, bench_content, work_dir(), chosen_backend, executor, address,
                                progress=progress, judge_context=judge_context)
    finally:
        progress.stop()
    common.err_console.print(f"{counts['finished']} finished, {counts['failed']} failed, {counts['skipped']} already done "
                             f"({counts['executor']}, backend {chosen_backend})", highlight=False)
    cols, rows = store.query(packaged_query("experiment_attempts"), [spec.name])
    print_table(cols, rows, f"experiment {spec.name}")
    store.close()
    if counts["failed"]:
        raise typer.Exit(EXIT_FAILED)


@experiment_app.command("status")
def experiment_status(
    spec_path: Path | None = typer.Argument(None, help="A spec (default: every experiment in the store)."),
    db: str | None = DbOption,
):
    """Attempts per model, task and condition: finished, failed, remaining."""
    from d2k.experiment import spec as spec_mod
    from d2k.experiment.driver import status_rows

    experiment_id = spec_mod.load(spec_path).experiment_id if spec_path else None
    store = open_existing_store(db)
    cols, rows = status_rows(store, experiment_id)
    store.close()
    if not rows:
        common.console.print("no attempts in the store" + (f" for {spec_path}" if spec_path else ""), markup=False)
        return
    print_table(cols, rows, "experiment status")
