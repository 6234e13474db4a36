"""``d2k judge eval`` (formerly ``d2k judge-eval``, still accepted, hidden): a judge against the gold
labels in judges/gold/ and judges/wild/."""

from __future__ import annotations

import typer
from rich.markup import escape

from d2k.cli import common
from d2k.cli.common import DbOption, app, checked_bench, fmt, open_store, print_table
from d2k.cli.judge import ApiBaseOption, ConcurrencyOption, ForceOption, ModelOption, judge_app, llm_context
from d2k.errors import D2KError
from d2k.judge.splits import FROZEN, PARTS

_SHOWN = {"item": ("item", "level", "task", "all"), "level": ("level", "all"), "task": ("task", "all"), "all": ("all",)}
_METRIC_COLUMNS = ("scope", "key", "n", "decided", "accuracy", "precision", "recall", "F1", "kappa")


@judge_app.command("eval")
def judge_eval(
    judge_name: str = typer.Option("static", "--judge", help="static | llm | hybrid (implementation gold); llm for proposals."),
    gold: str = typer.Option("implementation", "--gold", help="implementation (labels.toml) | proposals (proposals.toml)."),
    scope: str = typer.Option("item", help="Rows to print: item | level | task | all."),
    force: bool = ForceOption,
    model: str | None = ModelOption,
    api_base: str | None = ApiBaseOption,
    concurrency: int | None = ConcurrencyOption,
    part: str = typer.Option("all", "--part", help="Labelled part (judges/splits.toml): dev, wild_dev (tuned on: in-sample) | "
                             "test | wild (frozen) | all (dev, test and wild: the yardstick; wild_dev only when asked)."),
    boot: int = typer.Option(1000, "--boot", help="Bootstrap resamples (over solutions) for the 95% intervals; 0 for none."),
    calibrate: bool = typer.Option(False, "--calibrate",
                                   help="Write judges/static_calibration.json (strength precision on the frozen parts)."),
    db: str | None = DbOption,
):
    """Agreement of a judge with the gold labels in judges/gold/, judges/wild/ and judges/wild_dev/, per
    part (dev / wild_dev / test / wild) with bootstrap intervals: precision, recall, F1, Cohen's kappa, and the precision
    of each verdict strength."""
    from d2k.judge import agreement
    from d2k.judge.pipeline import JUDGES, gold_rows, proposal_gold_rows, store_metrics

    if part not in (*PARTS, "all"):
        raise D2KError(f"--part must be {', '.join(PARTS)} or all, not {part!r}")
    if scope not in ("item", "level", "task", "all"):
        raise D2KError(f"--scope must be item, level, task or all, not {scope!r}")
    if judge_name not in JUDGES:
        raise D2KError(f"--judge must be one of {', '.join(JUDGES)}, not {judge_name!r}")
    if boot != 0 and boot < 10:
        raise D2KError(f"--boot must be 0 (no intervals) or at least 10, not {boot}")
    if gold == "implementation":
        return _judge_eval_parts(judge_name, scope, force, model, api_base, concurrency, part, boot, calibrate, db)

    if gold not in ("implementation", "proposals"):
        raise D2KError(f"--gold must be implementation or proposals, not {gold!r}")
    bench_content = checked_bench()
    store = open_store(db)
    store.sync_content(bench_content)
    context = None
    if gold == "proposals" or judge_name != "static":
        context = llm_context(bench_content, model, api_base, concurrency)
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
    table_rows = [[r["scope"], r["key"], str(r["n"]), str(r["decided"]),
                   *[fmt(r[k], 3) for k in ("accuracy", "precision", "recall", "f1", "kappa")]]
                  for r in results if r["scope"] in _SHOWN[scope]]
    print_table(_METRIC_COLUMNS, table_rows, f"judge {judge_name} v{version} against {n_solutions} gold "
                f"{'proposals' if gold == 'proposals' else 'solutions'}", right=_METRIC_COLUMNS[2:])
    undecided = sorted({f"{r.task_id}/{r.item_id}" for r in rows if r.predicted not in agreement.LABELS})
    if undecided:
        common.console.print("items the judge did not decide: " + ", ".join(undecided),
                             markup=False, highlight=False, soft_wrap=True)
    for r in rows:
        if r.predicted in agreement.LABELS and r.predicted != r.gold:
            common.console.print("[yellow]disagrees[/yellow] "
                                 + escape(f"{r.task_id}/{r.solution} {r.item_id}: gold {r.gold}, judge {r.predicted}"),
                                 highlight=False)


# the old spelling, before `judge` had sub-commands: the same command, left out of the help
app.command("judge-eval", hidden=True)(judge_eval)


def _judge_eval_parts(judge_name, scope, force, model, api_base, concurrency, part, boot, calibrate, db):
    """judge eval on code: every part separately (dev is in-sample for the static judge)."""
    from d2k.judge import agreement, calibration, evaluation
    from d2k.judge.pipeline import gold_rows, store_metrics

    bench_content = checked_bench()
    store = open_store(db)
    store.sync_content(bench_content)
    context = llm_context(bench_content, model, api_base, concurrency) if judge_name != "static" else None
    parts = ("dev", "test", "wild") if part == "all" else (part,)  # the published yardstick: dev + the frozen parts
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
    print_table(cols, table, f"judge {judge_name} v{version} against {len({(r.task_id, r.solution) for r in rows})} "
                f"labelled solutions, per part", right=cols[1:7])
    for r in results:
        scope_rows = [[s["scope"], s["key"], str(s["n"]), str(s["decided"]),
                       *[fmt(s[k], 3) for k in ("accuracy", "precision", "recall", "f1", "kappa")]]
                      for s in r.scopes if s["scope"] in _SHOWN[scope] and s["scope"] != "all"]
        if scope_rows:
            print_table(_METRIC_COLUMNS, scope_rows, f"{r.part}: {evaluation.PART_NOTES[r.part]}", right=_METRIC_COLUMNS[2:])
    cols, table = evaluation.strength_table(results)
    print_table(cols, table, "precision of each verdict strength (right / n)", right=cols[3:])
    if calibrate:
        frozen = [r for r in rows if r.part in FROZEN]
        if judge_name != "static" or not frozen:
            raise D2KError("--calibrate needs the static judge and a labelled frozen part (test or wild)")
        record = calibration.compute(agreement.strength_precision(frozen), sorted({r.part for r in frozen}), version)
        written = calibration.write(bench_content.root, record)
        common.console.print(f"wrote {written} (strength precision on {', '.join(record['parts'])})",
                             markup=False, highlight=False)
    undecided = sorted({f"{r.task_id}/{r.item_id}" for r in rows if r.predicted not in agreement.LABELS})
    if undecided:
        common.console.print("items the judge did not decide: " + ", ".join(undecided),
                             markup=False, highlight=False, soft_wrap=True)
    frozen_misses = 0
    for r in rows:
        if r.predicted in agreement.LABELS and r.predicted != r.gold:
            if r.part in FROZEN:   # frozen parts: counted, not listed (no signal may be tuned on them)
                frozen_misses += 1
                continue
            line = f"{r.task_id}/{r.solution} {r.item_id}: gold {r.gold}, judge {r.predicted}"
            common.console.print("[yellow]disagrees[/yellow] " + escape(line), highlight=False)
    if frozen_misses:
        common.console.print(f"{frozen_misses} disagreement(s) on the frozen parts (test/wild) are not listed: "
                             "no signal may be tuned on them", markup=False, highlight=False)
