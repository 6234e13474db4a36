"""Judge solutions, proposals and gold sets, and store what the judges decided."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

from d2k.content import Benchmark
from d2k.errors import D2KError
from d2k.judge import agreement, graph, static
from d2k.judge import facts as facts_mod
from d2k.judge import gold as gold_mod
from d2k.judge.static import Verdict
from d2k.solutions import Solution, sha256

JUDGES = ("static", "llm", "hybrid")


@dataclass
class Judgement:
    task_id: str
    solution_id: str
    status: str
    detail: str
    verdicts: list[Verdict]
    scores: graph.Scores | None
    judge: str = static.NAME
    judge_version: str = static.VERSION
    model: str | None = None


class LLMContext:
    """The LLM runner and the compiled (or plain) judge programs, built once per command."""

    def __init__(self, bench: Benchmark, settings=None, lm=None):
        from d2k.judge import llm
        from d2k.judge import settings as settings_mod

        self.settings = settings or settings_mod.load(root=bench.root)
        self.runner = llm.CallPool(self.settings, lm=lm)
        programs_dir = bench.root / "judges"
        from d2k.judge import calibration as calibration_mod

        self.calibration = calibration_mod.load(bench.root)
        self.programs = {}
        for kind in ("implementation", "proposal"):
            program, source = llm.load_program(kind, programs_dir)
            self.programs[kind] = (program, llm.prompt_hash(program), source)


def judge_source(bench: Benchmark, task_id: str, source: bytes | str, path: str, solution_id: str,
                 judge: str = "static", context: LLMContext | None = None, store=None, force: bool = False,
                 entry: str | None = None) -> Judgement:
    if judge not in JUDGES:
        raise D2KError(f"--judge must be one of {', '.join(JUDGES)}, not {judge!r}")
    items = bench.items(task_id)
    if not items:
        raise D2KError(f"task {task_id} has no design rubric items")
    ran = profile_kernel_names(store, solution_id) if store is not None else None
    task = bench.task(task_id)
    facts = facts_mod.extract(source, path, entry=entry or task.entry_point, ran=ran, backward=takes_gradient(task))
    verdicts = static.judge(facts, items)
    version, model = static.VERSION, None
    if judge in ("llm", "hybrid"):
        from d2k.judge import code_judge, llm

        if context is None:
            context = LLMContext(bench)
        program, program_hash, _ = context.programs["implementation"]
        model = context.runner.model
        version = llm.VERSION
        cached = {} if force or store is None else cached_verdicts(store, solution_id, None, judge, version, model, program_hash)
        verdicts = code_judge.judge_code(bench.task(task_id), items, facts, verdicts, context.runner, program,
                                         program_hash, judge, cached, getattr(context, "calibration", None))
    scored = facts.status == "ok" or facts.status in static.NOT_RUN   # nothing of its own runs: every item 0
    scores = graph.score(items, {v.item_id: v.verdict for v in verdicts}) if scored else None
    return Judgement(task_id, solution_id, facts.status, facts.detail, verdicts, scores, judge, version, model)


_GRADIENT = re.compile(r"(?i)\bgradients?\b|\bbackward\b")


def takes_gradient(task) -> bool:
    """Does the task ask for a gradient (its title or description speaks of a gradient or a
    backward pass)? Only then does the ``backward`` of a ``torch.autograd.Function`` the entry goes
    through run: a forward-only task's harness never differentiates the output."""
    return bool(_GRADIENT.search(f"{getattr(task, 'title', '')}\n{getattr(task, 'description', '')}"))


def profile_kernel_names(store, solution_id: str) -> set[str] | None:
    """Kernel names the GPU profiles of this solution's evaluations saw run (evaluations.timing ->
    '$.profile.kernel_names'); None when no profile was recorded (the judge then relies on the
    static call graph alone)."""
    try:
        _, rows = store.query(
            "SELECT json_extract(timing, '$.profile.kernel_names') FROM evaluations "
            "WHERE solution_id = ? AND timing IS NOT NULL", [solution_id])
    except Exception:  # an old store without the column or the table: no profile
        return None
    names: set[str] = set()
    seen = False
    for (value,) in rows:
        if value is None:
            continue
        try:
            listed = json.loads(value) if isinstance(value, str) else value
        except ValueError:
            continue
        if isinstance(listed, list):
            seen = True
            names.update(str(n) for n in listed)
    return names if seen else None


def cached_verdicts(store, solution_id, proposal_id, judge, version, model, program_hash) -> dict[str, Verdict]:
    """Stored verdicts of the same judge, version, model and prompt (judge errors are retried)."""
    key_col, key = ("solution_id", solution_id) if solution_id else ("proposal_id", proposal_id)
    _, rows = store.query(
        f"SELECT item_id, verdict, strength, confidence, reason, evidence, usage FROM verdicts "
        f"WHERE {key_col} = ? AND judge = ? AND judge_version = ? AND model = ? AND prompt_hash = ? "
        f"AND verdict <> 'judge_error'", [key, judge, version, model, program_hash])
    out = {}
    for item_id, verdict, strength, confidence, reason, evidence, _usage in rows:
        out[item_id] = Verdict(item_id, int(item_id[1]), verdict, strength or "llm", reason or "",
                               json.loads(evidence) if evidence else [], confidence,
                               {"cached": True}, model, program_hash)
    return out


def store_verdicts(store, verdicts: list[Verdict], task_id: str, judge: str, version: str,
                   solution_id: str | None = None, proposal_id: str | None = None, run_model: str | None = None) -> None:
    """Replace this judge's stored verdicts on the solution (or proposal) with ``verdicts``.

    Every verdict of one run carries the run's model (``run_model``), those a hybrid run kept from
    the static judge included: the views take one judge's newest run by (version, model), and a
    run split over two models lost the items of one of them."""
    if run_model is not None:
        verdicts = [replace(v, model=v.model or run_model) for v in verdicts]
    store.replace_verdicts(verdicts, task_id, judge, version, solution_id=solution_id, proposal_id=proposal_id)


def store_judgement(store, judgement: Judgement) -> None:
    store_verdicts(store, judgement.verdicts, judgement.task_id, judgement.judge, judgement.judge_version,
                   solution_id=judgement.solution_id, run_model=judgement.model)
    store.put_judge_score(judgement.solution_id, judgement.task_id, judgement.judge, judgement.judge_version,
                          judgement.status, judgement.detail, judgement.scores.as_dict() if judgement.scores else {})


def judge_solution(bench: Benchmark, solution: Solution, judge: str = "static", context: LLMContext | None = None,
                   store=None, force: bool = False) -> Judgement:
    return judge_source(bench, solution.task_id, solution.source, str(solution.path), solution.solution_id,
                        judge, context, store, force)


# -- proposals ------------------------------------------------------------------------------------
@dataclass
class ProposalJudgement:
    task_id: str
    proposal_id: str
    verdicts: list[Verdict]
    scores: graph.Scores
    model: str
    prompt_hash: str


def judge_proposal_text(bench: Benchmark, task_id: str, text: str, context: LLMContext, store=None,
                        force: bool = False) -> ProposalJudgement:
    from d2k.judge import llm, proposal_judge

    if not text.strip():
        raise D2KError("the design is empty")
    items = bench.items(task_id)
    if not items:
        raise D2KError(f"task {task_id} has no design rubric items")
    proposal_id = sha256(f"{task_id}\n{text}")
    program, program_hash, _ = context.programs["proposal"]
    model = context.runner.model
    cached = {} if force or store is None else cached_verdicts(store, None, proposal_id, "llm", llm.VERSION, model, program_hash)
    verdicts = proposal_judge.judge_proposal(bench.task(task_id), items, text, context.runner, program, program_hash, cached)
    return ProposalJudgement(task_id, proposal_id, verdicts, proposal_judge.coverage_scores(items, verdicts), model, program_hash)


def store_proposal(store, result: ProposalJudgement, label: str, path: str, text: str) -> None:
    from d2k.judge import llm

    store.put_proposal(result.proposal_id, result.task_id, label, path, text)
    store_verdicts(store, result.verdicts, result.task_id, "llm", llm.VERSION, proposal_id=result.proposal_id)
    store.put_proposal_score(result.proposal_id, result.task_id, "llm", llm.VERSION, result.model, result.prompt_hash,
                             result.scores.as_dict())


# -- gold sets --------------------------------------------------------------------------------------
def gold_sets(bench: Benchmark, parts: tuple[str, ...] = ("dev", "test", "wild")) -> list[tuple[str, gold_mod.GoldSet]]:
    """The labelled sets of the requested parts (judges/splits.toml): gold sets under
    judges/gold/ (dev or test by task) and the wild sets under judges/wild/ and judges/wild_dev/
    (where labelled)."""
    from d2k.judge import splits as splits_mod

    item_ids = {t: {i.id for i in bench.items(t)} for t in bench.tasks}
    split = splits_mod.load(bench.root)
    out = []
    for gold_set in gold_mod.load(bench.root, list(bench.tasks), item_ids):
        part = split.part_of(gold_set.task_id)
        if part in parts:
            out.append((part, gold_set))
    for part in splits_mod.FOLDER_PARTS:
        if part in parts:
            for gold_set in gold_mod.load(bench.root, list(bench.tasks), item_ids, folder=bench.root / split.folder(part),
                                          missing_ok=True):
                out.append((part, gold_set))
    return out


def gold_rows(bench: Benchmark, judge: str = "static", context: LLMContext | None = None, store=None,
              force: bool = False, parts: tuple[str, ...] = ("dev", "test", "wild"),
              ) -> tuple[list[agreement.Row], list[Judgement]]:
    """Judge every labelled solution of ``parts``; one row per (solution, item) with the gold and
    predicted verdicts, the part and the verdict's strength."""
    sets = gold_sets(bench, parts)
    if not sets:
        from d2k.judge import splits as splits_mod

        split = splits_mod.load(bench.root)
        where = str(gold_mod.gold_dir(bench.root))
        for part in (p for p in splits_mod.FOLDER_PARTS if p in parts):
            folder = split.folder(part)
            where += f" or {folder}/<task>/labels.toml (labelled blind; see {folder}/README.md)"
            if any((bench.root / folder).glob("*/labels.toml")):
                # the labels are committed, the public kernels they label are not (their licences and
                # the retrieval tool's terms keep copies out of git)
                where += (f"; the {part} labels are here but none of the kernel files they label: rebuild them "
                          f"with `python -m d2k.judge.wild --set {part}` (from each {folder}/<task>/MANIFEST.md)")
        raise D2KError(f"no labelled solution of part {'/'.join(parts)} found under {where}")
    rows, judgements = [], []
    for part, gold_set in sets:
        levels = {i.id: i.level for i in bench.items(gold_set.task_id)}
        for solution in gold_set.solutions:
            path = gold_set.path_of(solution)
            source = path.read_bytes()
            result = judge_source(bench, gold_set.task_id, source, str(path), sha256(source.decode("utf-8", "replace")),
                                  judge, context, store, force, entry=solution.entry or None)
            if store is not None and judge != "static":
                store_judgement(store, result)
            judgements.append(result)
            predicted = {v.item_id: v for v in result.verdicts}
            for label in solution.labels:
                v = predicted.get(label.item)
                rows.append(agreement.Row(gold_set.task_id, solution.name, label.item, levels[label.item],
                                          label.verdict, v.verdict if v else "undetermined", part,
                                          v.strength if v else ""))
    return rows, judgements


def proposal_gold_rows(bench: Benchmark, context: LLMContext, store=None, force: bool = False) -> list[agreement.Row]:
    """Judge every gold proposal (``judges/gold/<task>/proposals.toml``); rows use implementation labels."""
    from d2k.judge.proposal_judge import AS_IMPLEMENTATION

    item_ids = {t: {i.id for i in bench.items(t)} for t in bench.tasks}
    sets = gold_mod.load(bench.root, list(bench.tasks), item_ids, filename="proposals.toml")
    if not sets:
        raise D2KError("no proposal gold set found (judges/gold/<task>/proposals.toml)")
    rows = []
    for gold_set in sets:
        levels = {i.id: i.level for i in bench.items(gold_set.task_id)}
        for proposal in gold_set.solutions:
            path = gold_set.path_of(proposal)
            text = path.read_text(encoding="utf-8")
            result = judge_proposal_text(bench, gold_set.task_id, text, context, store, force)
            if store is not None:
                store_proposal(store, result, proposal.name, str(path), text)
            predicted = {v.item_id: AS_IMPLEMENTATION.get(v.verdict, v.verdict) for v in result.verdicts}
            for label in proposal.labels:
                rows.append(agreement.Row(gold_set.task_id, proposal.name, label.item, levels[label.item],
                                          AS_IMPLEMENTATION.get(label.verdict, label.verdict),
                                          predicted.get(label.item, "undetermined")))
    return rows


def store_metrics(store, judge: str, version: str, gold: str, results: list[dict]) -> None:
    store.replace_judge_metrics(judge, version, gold, results)
