"""The gold-labelled solutions under ``judges/gold/<task>/labels.toml``: the judges' yardstick."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from d2k.content import ContentError, Problem


class Label(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    item: str
    # implemented / partial / missing for code; covered / partial / missing for proposals
    verdict: Literal["implemented", "partial", "missing", "covered"]
    reason: str = Field(min_length=3)


class GoldSolution(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    path: str
    description: str = ""
    # the function the judges treat as the entry point (default: the task's, run); a wild kernel
    # copied from a library names its own (e.g. "rms_norm_forward" or "Function.forward")
    entry: str = ""
    labels: list[Label]


class GoldFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    task: str
    solutions: list[GoldSolution] = Field(min_length=1)


@dataclass
class GoldSet:
    task_id: str
    solutions: list[GoldSolution]
    root: Path

    def path_of(self, solution: GoldSolution) -> Path:
        return (self.root / solution.path).resolve()


def gold_dir(root: Path) -> Path:
    return root / "judges" / "gold"


def load(root: Path, task_ids: list[str] | None = None, item_ids: dict[str, set[str]] | None = None,
         filename: str = "labels.toml", folder: Path | None = None, missing_ok: bool = False) -> list[GoldSet]:
    """Every gold set (or those of ``task_ids``) from ``judges/gold/<task>/<filename>`` (or
    ``folder/<task>/<filename>``, e.g. the wild set): ``labels.toml`` labels code,
    ``proposals.toml`` labels designs in prose. Labels are checked against the rubric. With
    ``missing_ok``, a labelled file that is absent is left out instead of being a problem (the
    wild set's copies of public code are kept out of git; see judges/wild/README.md)."""
    sets, problems = [], []
    folder = gold_dir(root) if folder is None else folder
    if not folder.is_dir():
        return []
    for path in sorted(folder.glob(f"*/{filename}")):
        task_id = path.parent.name
        if task_ids and task_id not in task_ids:
            continue
        rel = str(path.relative_to(root))
        try:
            data = GoldFile.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
        except (tomllib.TOMLDecodeError, ValidationError) as exc:
            problems.append(Problem(rel, "", str(exc).splitlines()[0] if isinstance(exc, tomllib.TOMLDecodeError)
                                    else str(exc).replace("\n", " ")[:300]))
            continue
        present = []
        for solution in data.solutions:
            if not (root / solution.path).is_file():
                if missing_ok:
                    continue
                problems.append(Problem(rel, f"solutions.{solution.name}.path", f"{solution.path} not found"))
            present.append(solution)
            if item_ids and task_id in item_ids:
                labelled = [label.item for label in solution.labels]
                missing = sorted(item_ids[task_id] - set(labelled))
                unknown = sorted(set(labelled) - item_ids[task_id])
                if missing:
                    problems.append(Problem(rel, f"solutions.{solution.name}.labels", f"no label for {', '.join(missing)}"))
                if unknown:
                    problems.append(Problem(rel, f"solutions.{solution.name}.labels", f"unknown item {', '.join(unknown)}"))
        if present:
            sets.append(GoldSet(task_id, present, root))
    if problems:
        raise ContentError(problems)
    return sets
