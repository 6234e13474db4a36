"""``d2k task new``: a new task's files in the four folders that hold it, from the templates in
``d2k/templates/task/``, each unfinished part marked with ``TODO(d2k task new)``.

``unfinished`` finds the markers again: ``d2k validate`` reports every file that still holds one,
so a half-written task is named as unfinished (and refused by the commands that run content)
instead of failing somewhere later. docs/new_task.md is the guide.
"""

from __future__ import annotations

import json
import re
import tomllib
from importlib import resources
from pathlib import Path

from d2k.content import Problem, find_root
from d2k.errors import D2KError
from d2k.schema import ID_PATTERN

MARKER = "TODO(d2k task new)"
CATALOG_PATTERN = re.compile(r"^T[0-9]{2,3}$")

# template -> where it goes, relative to the content root
FILES = {
    "task.toml.tmpl": "tasks/{id}/task.toml",
    "reference.py.tmpl": "tasks/{id}/reference.py",
    "expert.py.tmpl": "tasks/{id}/expert.py",
    "naive.py.tmpl": "tasks/{id}/naive.py",
    "workloads.jsonl.tmpl": "workloads/{id}.jsonl",
    "rubric.toml.tmpl": "design_rubrics/{id}.toml",
    "MANIFEST.md.tmpl": "judges/gold/{id}/MANIFEST.md",
}


def _catalogs(root: Path) -> dict[str, str]:
    """catalog number -> task id, for every task.toml that parses."""
    found = {}
    for path in sorted((root / "tasks").glob("*/task.toml")):
        try:
            catalog = tomllib.loads(path.read_text(encoding="utf-8")).get("catalog")
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        if isinstance(catalog, str):
            found.setdefault(catalog, path.parent.name)
    return found


def next_catalog(root: Path) -> str:
    numbers = [int(c[1:]) for c in _catalogs(root) if CATALOG_PATTERN.match(c)]
    return f"T{max(numbers, default=0) + 1:02d}"


def _title_for_python(title: str) -> str:
    return title.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')


def new_task(root: Path | None, task_id: str, catalog: str | None = None, title: str | None = None) -> list[Path]:
    """Write the new task's files under ``root`` (default: the content root) and return them.
    Refuses, writing nothing, an invalid id, catalog or title, and an id or catalog already used."""
    root = root or find_root()
    if not ID_PATTERN.match(task_id):
        raise D2KError(f"{task_id!r} is not a task id: lower_snake_case, a letter first (e.g. my_new_op)")
    targets = {template: root / dest.format(id=task_id) for template, dest in FILES.items()}
    taken = [p for p in [root / "tasks" / task_id, *targets.values()] if p.exists()]
    if taken:
        raise D2KError(f"task {task_id} exists already: {taken[0].relative_to(root)} is there; choose another id")
    used = _catalogs(root)
    if catalog is None:
        catalog = next_catalog(root)
    elif not CATALOG_PATTERN.match(catalog):
        raise D2KError(f"--catalog {catalog!r} is not a catalog number: T and two or three digits (e.g. T27)")
    elif catalog in used:
        raise D2KError(f"--catalog {catalog} is task {used[catalog]}'s; choose a free one (next: {next_catalog(root)})")
    if title is None:
        title = f"{MARKER}: a one-line title"
    elif not title.strip() or not title.isprintable():
        raise D2KError("--title must be one printable line")
    values = {"id": task_id, "catalog": catalog, "title_toml": json.dumps(title, ensure_ascii=False),
              "title_py": _title_for_python(title)}
    templates = resources.files("d2k") / "templates" / "task"
    texts = {}
    for template in FILES:
        text = (templates / template).read_text(encoding="utf-8")
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", value)
        texts[template] = text
    written = []
    for template, path in targets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(texts[template], encoding="utf-8")
        written.append(path)
    return written


def _task_files(root: Path, task_id: str) -> list[Path]:
    files = []
    for folder in (root / "tasks" / task_id, root / "judges" / "gold" / task_id):
        if folder.is_dir():
            files += sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    files += [root / "workloads" / f"{task_id}.jsonl", root / "design_rubrics" / f"{task_id}.toml"]
    return [p for p in files if p.is_file()]


def unfinished(root: Path, task_id: str) -> list[Problem]:
    """One problem per file of the task that still holds a ``TODO(d2k task new)`` marker."""
    problems = []
    for path in _task_files(root, task_id):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        at = [n for n, line in enumerate(lines, 1) if MARKER in line]
        if at:
            shown = ", ".join(map(str, at[:8])) + (", ..." if len(at) > 8 else "")
            problems.append(Problem(str(path.relative_to(root)), "",
                                    f"unfinished: {len(at)} {MARKER} marker(s) to resolve "
                                    f"(line{'s' if len(at) > 1 else ''} {shown})"))
    return problems
