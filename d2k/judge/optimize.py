"""Compile the LLM judges against the gold sets with a DSPy optimizer; save them under ``judges/``.

Examples are (gold solution or proposal, item) pairs with the gold verdict; the split into train
and dev is by solution (sha256 of task/name), so one solution's items never straddle it. The
metric is exact agreement with the gold verdict. The compiled program is written to
``judges/<kind>_judge.json`` and loads by default; ``judges/optimization.json`` records the dev
scores before and after, the model, the optimizer and the split.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import dspy

from d2k.content import Benchmark
from d2k.errors import D2KError
from d2k.judge import code_judge, llm, static
from d2k.judge import facts as facts_mod
from d2k.judge import gold as gold_mod

OPTIMIZERS = ("bootstrap", "labeled")


def _in_dev(task_id: str, name: str, dev_fraction: float) -> bool:
    digest = int(hashlib.sha256(f"{task_id}/{name}".encode()).hexdigest(), 16)
    return (digest % 1000) / 1000.0 < dev_fraction


def implementation_examples(bench: Benchmark) -> list[tuple[str, str, dspy.Example]]:
    """Examples from the dev part only: the frozen test and wild parts (judges/splits.toml) are
    never compiled on, so the judges can still be measured on them."""
    from d2k.judge import splits

    item_ids = {t: {i.id for i in bench.items(t)} for t in bench.tasks}
    split = splits.load(bench.root)
    out = []
    for gold_set in gold_mod.load(bench.root, list(bench.tasks), item_ids):
        if split.frozen(gold_set.task_id):
            continue
        task = bench.task(gold_set.task_id)
        items = {i.id: i for i in bench.items(gold_set.task_id)}
        for solution in gold_set.solutions:
            path = gold_set.path_of(solution)
            facts = facts_mod.extract(path.read_bytes(), str(path), entry=solution.entry or task.entry_point)
            verdicts = {v.item_id: v for v in static.judge(facts, list(items.values()))}
            prose_free = facts_mod.without_prose(facts.text, facts.path).splitlines()
            labels = {label.item: label.verdict for label in solution.labels}
            for label in solution.labels:
                item = items[label.item]
                inputs = {
                    "task_description": task.description.strip(), "item": item.describe(),
                    "prerequisites": "; ".join(f"{d}: {labels.get(d, 'unknown')}" for d in item.depends_on) or "none",
                    "static_verdict": code_judge.describe_static(verdicts[item.id], prose_free),
                    "code": code_judge.excerpt(facts, verdicts[item.id], prose_free),
                }
                example = dspy.Example(**inputs, verdict=label.verdict).with_inputs(*inputs)
                out.append((gold_set.task_id, solution.name, example))
    return out


def proposal_examples(bench: Benchmark) -> list[tuple[str, str, dspy.Example]]:
    item_ids = {t: {i.id for i in bench.items(t)} for t in bench.tasks}
    out = []
    for gold_set in gold_mod.load(bench.root, list(bench.tasks), item_ids, filename="proposals.toml"):
        task = bench.task(gold_set.task_id)
        items = {i.id: i for i in bench.items(gold_set.task_id)}
        for proposal in gold_set.solutions:
            text = gold_set.path_of(proposal).read_text(encoding="utf-8")
            for label in proposal.labels:
                item = items[label.item]
                inputs = {"task_description": task.description.strip(),
                          "item": item.describe(),
                          "design": text}
                out.append((gold_set.task_id, proposal.name, dspy.Example(**inputs, verdict=label.verdict).with_inputs(*inputs)))
    return out


def metric(example, prediction, trace=None) -> bool:
    return str(getattr(prediction, "verdict", "")) == example.verdict


def optimize(bench: Benchmark, runner: llm.CallPool, kind: str, optimizer: str = "bootstrap",
             dev_fraction: float = 0.3, max_demos: int = 4, out_dir: Path | None = None) -> dict:
    if kind not in llm.PROGRAM_FILES:
        raise D2KError(f"--target must be implementation or proposal, not {kind!r}")
    if optimizer not in OPTIMIZERS:
        raise D2KError(f"--optimizer must be one of {', '.join(OPTIMIZERS)}, not {optimizer!r}")
    examples = implementation_examples(bench) if kind == "implementation" else proposal_examples(bench)
    if not examples:
        raise D2KError(f"no gold examples for the {kind} judge")
    train = [e for t, n, e in examples if not _in_dev(t, n, dev_fraction)]
    dev = [e for t, n, e in examples if _in_dev(t, n, dev_fraction)]
    if not train or not dev:
        raise D2KError(f"the gold set is too small to split ({len(train)} train, {len(dev)} dev examples)")
    base = llm.ImplementationJudge() if kind == "implementation" else llm.ProposalJudge()

    def score(program) -> float:
        hits = 0
        for example in dev:
            outcome = runner.one(program, llm.Call("dev", dict(example.inputs())))
            hits += bool(outcome.prediction) and str(outcome.prediction.get("verdict")) == example.verdict
        return hits / len(dev)

    before = score(base)
    with dspy.context(lm=runner.lm):
        if optimizer == "bootstrap":
            compiled = dspy.BootstrapFewShot(metric=metric, max_bootstrapped_demos=max_demos,
                                             max_labeled_demos=max_demos).compile(base, trainset=train)
        else:
            compiled = dspy.LabeledFewShot(k=max_demos).compile(base, trainset=train)
    after = score(compiled)
    out_dir = out_dir or (bench.root / "judges")
    out_dir.mkdir(parents=True, exist_ok=True)
    program_path = out_dir / llm.PROGRAM_FILES[kind]
    compiled.save(str(program_path))
    record = {
        "target": kind, "optimizer": optimizer, "model": runner.model, "max_demos": max_demos,
        "train_examples": len(train), "dev_examples": len(dev), "dev_fraction": dev_fraction,
        "dev_accuracy_before": before, "dev_accuracy_after": after, "prompt_hash": llm.prompt_hash(compiled),
        "program": program_path.name, "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    log_path = out_dir / "optimization.json"
    history = json.loads(log_path.read_text()) if log_path.is_file() else []
    history.append(record)
    log_path.write_text(json.dumps(history, indent=2) + "\n")
    return record
