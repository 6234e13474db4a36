"""Find and load the benchmark content (tasks, workloads, design rubrics) without running it."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from d2k.errors import D2KError
from d2k.schema import DesignItem, Rubric, Task, Workload


@dataclass(frozen=True)
class Problem:
    """One content error: the file, the field inside it, and what is wrong."""

    path: str
    field: str
    message: str

    def __str__(self) -> str:
        path, field, message = (_printable(str(x)) for x in (self.path, self.field, self.message))
        where = f"{path}: {field}" if field else path
        return f"{where}: {message}"


def _printable(text: str) -> str:
    """One line, whatever a file held: control characters (a key named "\r") are escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


class ContentError(D2KError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        if len(problems) == 1:
            super().__init__(str(problems[0]))
        else:
            super().__init__(f"{len(problems)} content problems:\n  " + "\n  ".join(str(p) for p in problems))


from d2k.root import find_root  # noqa: E402,F401  (kept here: callers import it from d2k.content)


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def pydantic_problems(exc: ValidationError, path: str, prefix: str = "", rename=None) -> list[Problem]:
    """Each of a pydantic validation's errors as a Problem: its dotted field and a one-line message.
    ``rename`` (optional) maps an error's location (a list) to the one to show."""
    problems = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in (rename(list(err["loc"])) if rename else err["loc"]))
        where = f"{prefix}.{loc}" if prefix and loc else (prefix or loc)
        message = " ".join(str(err["msg"]).removeprefix("Value error, ").split())
        problems.append(Problem(path, where, message))
    return problems


def _read_toml(path: Path, root: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ContentError([Problem(_relative(path, root), "", "file not found")]) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ContentError([Problem(_relative(path, root), "", f"invalid TOML: {' '.join(str(exc).split())}")]) from None
    except RecursionError:
        raise ContentError([Problem(_relative(path, root), "", "invalid TOML: nested too deeply")]) from None
    except OSError as exc:
        raise ContentError([Problem(_relative(path, root), "", f"cannot read: {exc.strerror or exc}")]) from None


def load_task(root: Path, task_id: str) -> Task:
    path = root / "tasks" / task_id / "task.toml"
    data = _read_toml(path, root)
    try:
        return Task.model_validate(data)
    except ValidationError as exc:
        raise ContentError(pydantic_problems(exc, _relative(path, root))) from None


def load_workloads(root: Path, task_id: str) -> list[Workload]:
    path = root / "workloads" / f"{task_id}.jsonl"
    rel = _relative(path, root)
    if not path.is_file():
        raise ContentError([Problem(rel, "", "file not found")])
    workloads, problems = [], []
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ContentError([Problem(f"{rel}:{line}", "", "not UTF-8 text")]) from None
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(f"{rel}:{lineno}", "", f"invalid JSON: {exc.msg}"))
            continue
        except RecursionError:
            problems.append(Problem(f"{rel}:{lineno}", "", "invalid JSON: nested too deeply"))
            continue
        if not isinstance(record, dict):
            problems.append(Problem(f"{rel}:{lineno}", "", "not a JSON object (one workload per line)"))
            continue
        try:
            workload = Workload.model_validate(record)
        except ValidationError as exc:
            problems.extend(pydantic_problems(exc, f"{rel}:{lineno}"))
            continue
        if workload.task not in (None, task_id):
            problems.append(Problem(f"{rel}:{lineno}", "task", f"{workload.task!r} is not {task_id!r}"))
        workloads.append(workload)
    if problems:
        raise ContentError(problems)
    return workloads


def load_rubric(root: Path, task_id: str) -> Rubric:
    path = root / "design_rubrics" / f"{task_id}.toml"
    data = _read_toml(path, root)
    try:
        return Rubric.model_validate(data)
    except ValidationError as exc:
        def by_item_id(loc: list) -> list:
            # name the item by its id instead of its position where we can
            if len(loc) >= 2 and loc[0] == "items" and isinstance(loc[1], int):
                items = data.get("items") or []
                if loc[1] < len(items) and isinstance(items[loc[1]], dict) and "id" in items[loc[1]]:
                    loc[1] = items[loc[1]]["id"]
            return loc

        raise ContentError(pydantic_problems(exc, _relative(path, root), rename=by_item_id)) from None


def task_ids(root: Path) -> list[str]:
    tasks_dir = root / "tasks"
    return sorted(p.name for p in tasks_dir.iterdir() if (p / "task.toml").is_file()) if tasks_dir.is_dir() else []


@dataclass
class Benchmark:
    """All content under one root, loaded and schema-checked (cross-checks live in validate)."""

    root: Path
    tasks: dict[str, Task] = field(default_factory=dict)
    workloads: dict[str, list[Workload]] = field(default_factory=dict)
    rubrics: dict[str, Rubric] = field(default_factory=dict)

    @classmethod
    def load(cls, root: Path | None = None, only: list[str] | None = None) -> Benchmark:
        root = root or find_root()
        bench = cls(root=root)
        ids = task_ids(root)
        if only:
            unknown = [t for t in only if t not in ids]
            if unknown:
                raise D2KError(f"unknown task(s): {', '.join(unknown)} (known: {', '.join(ids) or 'none'})")
            ids = [t for t in ids if t in only]
        problems: list[Problem] = []
        for task_id in ids:
            for loader, target in (
                (load_task, bench.tasks),
                (load_workloads, bench.workloads),
                (load_rubric, bench.rubrics),
            ):
                try:
                    target[task_id] = loader(root, task_id)
                except ContentError as exc:
                    problems.extend(exc.problems)
        if problems:
            raise ContentError(problems)
        return bench

    def task(self, task_id: str) -> Task:
        if task_id not in self.tasks:
            known = ", ".join(sorted(self.tasks)) or "none"
            raise D2KError(f"unknown task {task_id!r} (known: {known})")
        return self.tasks[task_id]

    def select_workloads(self, task_id: str, tag: str) -> list[Workload]:
        if tag not in ("bench", "smoke", "all"):
            raise D2KError(f"--workloads must be bench, smoke or all, not {tag!r}")
        return [w for w in self.workloads.get(task_id, []) if tag == "all" or w.tag == tag]

    def items(self, task_id: str) -> list[DesignItem]:
        return list(self.rubrics[task_id].items) if task_id in self.rubrics else []

    def task_dir(self, task_id: str) -> Path:
        return self.root / "tasks" / task_id
