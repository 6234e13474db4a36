"""Naming solutions: a source file identified by the sha256 of its text, or a task's reference."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from d2k.content import Benchmark
from d2k.errors import D2KError


@dataclass(frozen=True)
class Solution:
    solution_id: str      # sha256 of the source text (the reference: of "reference:" + its text)
    task_id: str
    label: str            # expert | naive | reference | compiled | the path given
    kind: str             # file | baseline (a library's adapter) | reference | compiled (torch.compile of the reference;
                          # with dynamic shapes where the task's performance.compile_dynamic says so)
    path: Path
    source: str


# what a compiled solution's id hashes before its source: a static compile, or a dynamic-shape one
# (performance.compile_dynamic); ingest accepts either
COMPILED_PREFIX = {False: "compiled:", True: "compiled:dynamic:"}


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def resolve(bench: Benchmark, task_id: str, name: str) -> Solution:
    """``expert``, ``naive``, ``reference``, ``compiled`` (``torch.compile`` of the reference, a
    baseline) or a path to a solution file (under ``tasks/<id>/baselines/``: a library baseline)."""
    bench.task(task_id)
    task_dir = bench.task_dir(task_id)
    if name == "reference":
        path = task_dir / "reference.py"
        source = path.read_text(encoding="utf-8")
        return Solution(sha256("reference:" + source), task_id, "reference", "reference", path, source)
    if name == "compiled":
        # torch.compile of the task's eager figure: the reference, or the baseline standing in for a
        # sequential reference (compiling a token-by-token loop would unroll it)
        path = _eager_path(bench, task_id)
        source = path.read_text(encoding="utf-8")
        # a dynamic-shape compile is another solution than a static one of the same file
        prefix = COMPILED_PREFIX[compile_dynamic(bench, task_id)]
        return Solution(sha256(prefix + source), task_id, "compiled", "compiled", path, source)
    if name in ("expert", "naive"):
        path = task_dir / f"{name}.py"
        if not path.is_file():
            raise D2KError(f"task {task_id} has no {name} solution ({path} not found)")
        label = name
    else:
        path = Path(name).expanduser()
        if not path.is_file():
            # the files `--solution baselines` would run
            adapters = [str(b.path) for b in baselines(bench, task_id)]
            listed = f"; {task_id}'s baselines: {', '.join(adapters)}" if adapters else ""
            raise D2KError(f"solution file not found: {name} (a solution is expert, naive, reference, compiled "
                           f"or the path of a .py file{listed})")
        label = str(path)
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise D2KError(f"{path} is not a UTF-8 text file") from None
    kind = "file"
    baseline_dir = (task_dir / "baselines").resolve()
    if path.resolve().parent == baseline_dir:
        # a production library's adapter (tasks/<id>/baselines/<name>.py): skipped, with the
        # reason, where the library is not installed
        kind, label = "baseline", f"baseline:{path.stem}"
    return Solution(sha256(source), task_id, label, kind, path.resolve(), source)


def compile_dynamic(bench: Benchmark, task_id: str) -> bool:
    """Whether the task's ``compiled`` solution compiles with dynamic shapes
    (performance.compile_dynamic)."""
    return bench.task(task_id).performance.compile_dynamic


def _eager_path(bench: Benchmark, task_id: str) -> Path:
    """The file of the task's eager figure: its reference, or the baseline it names as the stand-in
    (performance.eager_stand_in) for a sequential reference."""
    stand_in = bench.task(task_id).performance.eager_stand_in
    task_dir = bench.task_dir(task_id)
    return task_dir / "baselines" / f"{stand_in}.py" if stand_in else task_dir / "reference.py"


def eager(bench: Benchmark, task_id: str) -> Solution:
    """The solution whose GPU time is the task's eager figure: the reference, or the baseline the
    task names as its stand-in (performance.eager_stand_in) when its reference is a sequential
    definition that no fair eager implementation would run."""
    if bench.task(task_id).performance.eager_stand_in:
        return resolve(bench, task_id, str(_eager_path(bench, task_id)))
    return resolve(bench, task_id, "reference")


def baselines(bench: Benchmark, task_id: str) -> list[Solution]:
    """The task's production-library baselines (``tasks/<id>/baselines/*.py``)."""
    folder = bench.task_dir(task_id) / "baselines"
    return [resolve(bench, task_id, str(p)) for p in sorted(folder.glob("*.py"))] if folder.is_dir() else []
