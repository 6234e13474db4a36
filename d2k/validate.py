"""``d2k validate``: check all content against its schemas and against itself, running nothing."""

from __future__ import annotations

import ast
import json
import math
from collections import Counter
from pathlib import Path

import networkx as nx

from d2k import ast_parse, exprs, perf
from d2k.content import ContentError, Problem, find_root, load_rubric, load_task, load_workloads, task_ids
from d2k.judge.signals import check as signal_check
from d2k.scaffold import unfinished
from d2k.schema import MAX_WORKLOAD_BYTES, TORCH_DTYPES, Rubric, Task, Workload


def _functions(path: Path) -> dict[str, ast.FunctionDef] | str:
    try:
        tree = ast_parse.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError) as exc:
        return f"does not parse: {exc}"
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _accepts(fn: ast.FunctionDef, names: list[str]) -> list[str]:
    args = fn.args
    if args.kwarg is not None:
        return []
    accepted = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    return [n for n in names if n not in accepted]


# the reference's module-level lists of input names (the worker reads them; a misspelt name would
# silently leave an input perturbed, or unperturbed)
INPUT_NAME_LISTS = ("FIXED_INPUTS", "INTERPRETER_FIXED_INPUTS", "UNPERTURBED_WHEN_FRESH")


def _input_name_lists(path: Path) -> list[tuple[str, list | str]]:
    """The reference's ``INPUT_NAME_LISTS`` assignments: (name, their strings) or (name, why not)."""
    try:
        tree = ast_parse.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError):
        return []   # reported by check_modules
    found = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in INPUT_NAME_LISTS:
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                value = None   # not a literal
            if not isinstance(value, (set, tuple, list, frozenset)) or not all(isinstance(v, str) for v in value):
                found.append((node.targets[0].id, "must be a literal set, tuple or list of input names"))
            else:
                found.append((node.targets[0].id, sorted(value)))
    return found


def check_modules(root: Path, task: Task) -> list[Problem]:
    problems = []
    task_dir = root / "tasks" / task.id
    input_names = [t.name for t in task.signature.inputs]
    required = {"reference.py": "reference", "expert.py": task.entry_point}
    optional = {"naive.py": task.entry_point}
    for filename, function in {**required, **optional}.items():
        path = task_dir / filename
        rel = f"tasks/{task.id}/{filename}"
        if not path.is_file():
            if filename in required:
                problems.append(Problem(rel, "", "file not found"))
            continue
        found = _functions(path)
        if isinstance(found, str):
            problems.append(Problem(rel, "", found))
        elif function not in found:
            problems.append(Problem(rel, function, f"no top-level function {function}()"))
        else:
            missing = _accepts(found[function], input_names)
            if missing:
                problems.append(Problem(rel, function, f"does not accept input(s) {', '.join(missing)}"))
    reference_path = task_dir / "reference.py"
    if reference_path.is_file():
        for name, value in _input_name_lists(reference_path):
            if isinstance(value, str):
                problems.append(Problem(f"tasks/{task.id}/reference.py", name, value))
            elif unknown := [v for v in value if v not in input_names]:
                problems.append(Problem(f"tasks/{task.id}/reference.py", name,
                                        f"names no input of the signature: {', '.join(unknown)} "
                                        f"(inputs: {', '.join(input_names)})"))
    stand_in = task.performance.eager_stand_in
    if stand_in and not (task_dir / "baselines" / f"{stand_in}.py").is_file():
        problems.append(Problem(f"tasks/{task.id}/task.toml", "performance.eager_stand_in",
                                f"no baseline tasks/{task.id}/baselines/{stand_in}.py"))
    return problems


def _expression_fields(task: Task) -> list[tuple[str, object]]:
    """Every expression of task.toml with its field name: shapes, scalar values, formulas."""
    fields = []
    for group in ("inputs", "outputs"):
        for i, spec in enumerate(getattr(task.signature, group)):
            if spec.scalar:
                fields.append((f"signature.{group}.{i}.value", spec.value))
            for dim in spec.shape:
                fields.append((f"signature.{group}.{i}.shape", dim))
    for name in ("flops", "bytes"):
        formula = getattr(task.performance, name)
        if formula != "auto":
            fields.append((f"performance.{name}", formula))
    return fields


def _names(expr) -> set[str]:
    if not isinstance(expr, str):
        return set()
    try:
        return exprs.names(expr)
    except exprs.ExpressionError:
        return set()  # the schema reports a malformed expression


def undefined_names(task: Task, workloads: list[Workload]) -> list[Problem]:
    """Names task.toml uses that no workload defines (as an axis or a numeric param): one line on
    task.toml for each, rather than the same line for every workload."""
    if not workloads:
        return []
    defined = set.union(*[set(exprs.namespace(w.axes, w.params)) for w in workloads])
    problems, seen = [], set()
    for field, expr in _expression_fields(task):
        for name in sorted(_names(expr) - defined - seen):
            seen.add(name)
            problems.append(Problem(f"tasks/{task.id}/task.toml", field,
                                    f"{name!r} is defined by no workload in workloads/{task.id}.jsonl (axes or params)"))
    return problems


def workload_memory(task: Task, workload: Workload) -> int:
    """Bytes of the workload's tensors: every input and every returned output, once (in-place
    outputs are their inputs). The harness holds a few copies; this is the floor."""
    specs = [*task.signature.inputs, *task.signature.returned]
    return sum(perf.tensor_bytes(spec, workload) for spec in specs if not spec.scalar)


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g}"


def check_workloads(task: Task, workloads: list[Workload]) -> list[Problem]:
    rel = f"workloads/{task.id}.jsonl"
    problems = []
    if not any(w.tag == "smoke" for w in workloads):
        problems.append(Problem(rel, "tag", "no smoke workload (the CPU interpreter needs one)"))
    if not any(w.tag == "bench" for w in workloads):
        problems.append(Problem(rel, "tag", "no bench workload"))
    undefined = undefined_names(task, workloads)
    if undefined:
        return problems + undefined  # every workload would fail the same way: task.toml is wrong
    axes_needed = task.axes_used()
    dtype_vars = task.dtype_variables()
    for w in workloads:
        where = f"{rel}[{w.id}]"
        missing = sorted(axes_needed - set(w.axes) - set(w.params))
        if missing:
            problems.append(Problem(where, "axes", f"missing axis {', '.join(missing)}"))
            continue
        missing_dtypes = sorted(dtype_vars - set(w.dtypes))
        if missing_dtypes:
            problems.append(Problem(where, "dtypes", f"missing dtype variable {', '.join(missing_dtypes)}"))
        ns = exprs.namespace(w.axes, w.params)
        shapes_ok = not missing_dtypes
        for spec in [*task.signature.inputs, *task.signature.outputs]:
            try:
                if spec.scalar:
                    exprs.evaluate(spec.value, ns)
                    continue
                dims = [exprs.evaluate(d, ns) for d in spec.shape]
            except exprs.ExpressionError as exc:
                problems.append(Problem(where, spec.name, str(exc)))
                shapes_ok = False
                continue
            if any(not isinstance(d, (int, float)) or not math.isfinite(d) or not float(d).is_integer() or d < 0
                   for d in dims):
                problems.append(Problem(where, spec.name, f"shape {dims} is not made of non-negative integers"))
                shapes_ok = False
        for formula_name in ("flops", "bytes"):
            formula = getattr(task.performance, formula_name)
            if formula == "auto":
                continue
            try:
                exprs.evaluate(formula, ns)
            except exprs.ExpressionError as exc:
                problems.append(Problem(where, f"performance.{formula_name}", str(exc)))
        if shapes_ok:
            try:
                memory = workload_memory(task, w)
            except (exprs.ExpressionError, KeyError, ValueError, OverflowError) as exc:
                problems.append(Problem(where, "axes", f"cannot size the tensors: {exc}"))
                continue
            bound = MAX_WORKLOAD_BYTES[w.tag]
            if memory > bound:
                problems.append(Problem(where, "axes", f"the tensors need {_size(memory)} (inputs and outputs once), "
                                                       f"over the {_size(bound)} bound of a {w.tag} workload"))
    return problems


def check_rubric(task_id: str, rubric: Rubric) -> list[Problem]:
    rel = f"design_rubrics/{task_id}.toml"
    problems = []
    if rubric.task != task_id:
        problems.append(Problem(rel, "task", f"{rubric.task!r} is not {task_id!r}"))
    counts = Counter(item.id for item in rubric.items)
    for item_id, n in counts.items():
        if n > 1:
            problems.append(Problem(rel, f"items.{item_id}", f"id used {n} times"))
    ids = set(counts)
    for level in (1, 2, 3):
        if not any(item.level == level for item in rubric.items):
            problems.append(Problem(rel, "items", f"no L{level} item"))
    graph = nx.DiGraph()
    graph.add_nodes_from(ids)
    for item in rubric.items:
        for dep in item.depends_on:
            if dep == item.id:
                problems.append(Problem(rel, f"items.{item.id}.depends_on", "an item cannot depend on itself"))
            elif dep not in ids:
                problems.append(Problem(rel, f"items.{item.id}.depends_on",
                                        f"unknown item {dep!r} (cross-task links go in `related`)"))
            else:
                graph.add_edge(dep, item.id)
        if not item.signals and not item.partial and not item.no_static_evidence.strip():
            problems.append(Problem(rel, f"items.{item.id}.signals",
                                    "no signals: give the static evidence, or say why there is none in `no_static_evidence`"))
        if (item.signals or item.partial) and item.no_static_evidence.strip():
            problems.append(Problem(rel, f"items.{item.id}.no_static_evidence", "set, but the item also has signals"))
        if item.binary and item.partial_when.strip():
            problems.append(Problem(rel, f"items.{item.id}.partial_when", "set, but the item is `binary` (no partial)"))
        if item.partial and not item.partial_defined:
            problems.append(Problem(rel, f"items.{item.id}.partial",
                                    "partial signals, but the item defines no partial: say what counts as partial in "
                                    "`partial_when` (or a \"Partial: ...\" sentence in the criterion), or drop them"))
        for group in ("signals", "partial"):
            for i, signal in enumerate(getattr(item, group)):
                for message in signal_check(signal, f"items.{item.id}.{group}.{i}"):
                    where, _, text = message.partition(": ")
                    problems.append(Problem(rel, where, text))
    if not nx.is_directed_acyclic_graph(graph):
        cycle = " -> ".join(f"{a}" for a, _ in nx.find_cycle(graph))
        problems.append(Problem(rel, "depends_on", f"dependency cycle: {cycle}"))
    return problems


def _other_workload_ids(root: Path, task_ids_: list[str]) -> dict[str, str]:
    """Workload ids of tasks not being checked, read leniently (their own problems are not ours)."""
    seen = {}
    for task_id in task_ids_:
        path = root / "workloads" / f"{task_id}.jsonl"
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("id"), str):
                seen.setdefault(record["id"], f"workloads/{task_id}.jsonl")
    return seen


def validate(root: Path | None = None, only: list[str] | None = None) -> tuple[list[Problem], dict]:
    """Every problem in the content under ``root``, and counts of what was checked. With ``only``,
    the problems of those tasks (and their workload ids clashing with any other task's)."""
    root = root or find_root()
    problems: list[Problem] = []
    all_ids = task_ids(root)
    ids = [t for t in all_ids if t in only] if only is not None else all_ids
    stats = {"tasks": 0, "workloads": 0, "bench": 0, "smoke": 0, "items": 0, "edges": 0}
    if not all_ids:
        problems.append(Problem("tasks/", "", "no task found (tasks/<id>/task.toml)"))
    others = _other_workload_ids(root, [t for t in all_ids if t not in ids]) if only is not None else {}
    seen_workloads: dict[str, str] = {}
    for task_id in ids:
        task = workloads = rubric = None
        problems.extend(unfinished(root, task_id))  # TODO markers left by `d2k task new`
        try:
            task = load_task(root, task_id)
            stats["tasks"] += 1
            if task.id != task_id:
                problems.append(Problem(f"tasks/{task_id}/task.toml", "id", f"{task.id!r} differs from its folder name"))
            for spec in [*task.signature.inputs, *task.signature.outputs]:
                if spec.dtype and spec.dtype not in TORCH_DTYPES and not spec.dtype.isidentifier():
                    problems.append(Problem(f"tasks/{task_id}/task.toml", f"signature.{spec.name}.dtype",
                                            f"{spec.dtype!r} is neither a dtype nor a variable"))
            problems.extend(check_modules(root, task))
        except ContentError as exc:
            problems.extend(exc.problems)
        try:
            workloads = load_workloads(root, task_id)
        except ContentError as exc:
            problems.extend(exc.problems)
        try:
            rubric = load_rubric(root, task_id)
            problems.extend(check_rubric(task_id, rubric))
            stats["items"] += len(rubric.items)
            stats["edges"] += sum(len(i.depends_on) for i in rubric.items)
        except ContentError as exc:
            problems.extend(exc.problems)
        if workloads is not None:
            for w in workloads:
                if w.id in seen_workloads or w.id in others:
                    problems.append(Problem(f"workloads/{task_id}.jsonl", w.id,
                                            f"workload id also used in {seen_workloads.get(w.id) or others[w.id]}"))
                seen_workloads[w.id] = f"workloads/{task_id}.jsonl"
                stats["workloads"] += 1
                stats[w.tag] += 1
            if task is not None:
                problems.extend(check_workloads(task, workloads))
    for orphan_dir, suffix in (("workloads", ".jsonl"), ("design_rubrics", ".toml")):
        folder = root / orphan_dir
        if folder.is_dir() and only is None:
            for path in sorted(folder.glob(f"*{suffix}")):
                if path.name.removesuffix(suffix) not in ids:
                    problems.append(Problem(f"{orphan_dir}/{path.name}", "", "no task folder of that id"))
    return problems, stats


def as_json(problems: list[Problem]) -> str:
    return json.dumps([p.__dict__ for p in problems], indent=2)
