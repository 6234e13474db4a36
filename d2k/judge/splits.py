"""The split of the labelled sets into dev and wild_dev (tuned on) and test and wild (frozen):
``judges/splits.toml``.

A task's gold set (``judges/gold/<task>/labels.toml``) belongs to the part that lists the task;
a task listed nowhere counts as ``dev`` (tuning on it is allowed until someone freezes it). The
wild set (``judges/wild/<task>/labels.toml``, public expert kernels) is its own part, and so is
the tunable wild_dev set (``judges/wild_dev/``, public kernels from other projects).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from d2k.content import ContentError, Problem

PARTS = ("dev", "wild_dev", "test", "wild")
FROZEN = ("test", "wild")   # never tuned on: out of sample (dev and wild_dev may be tuned on: in-sample)
FOLDER_PARTS = ("wild_dev", "wild")   # parts that are a folder of public kernels, not judges/gold/ tasks


@dataclass
class Splits:
    dev: set[str] = field(default_factory=set)
    test: set[str] = field(default_factory=set)
    wild_folder: str = "judges/wild"
    notes: dict[str, str] = field(default_factory=dict)
    wild_dev_folder: str = "judges/wild_dev"

    def folder(self, part: str) -> str:
        """The folder of a folder part (wild or wild_dev)."""
        return {"wild": self.wild_folder, "wild_dev": self.wild_dev_folder}[part]

    def part_of(self, task_id: str) -> str:
        """The part of ``task_id``'s gold set (dev unless the split lists it as test)."""
        return "test" if task_id in self.test else "dev"

    def frozen(self, task_id: str) -> bool:
        return task_id in self.test


def path(root: Path) -> Path:
    return root / "judges" / "splits.toml"


def load(root: Path) -> Splits:
    p = path(root)
    if not p.is_file():
        return Splits()
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ContentError([Problem("judges/splits.toml", "", str(exc))]) from None
    dev = set(data.get("dev", {}).get("tasks", []))
    test = set(data.get("test", {}).get("tasks", []))
    both = sorted(dev & test)
    if both:
        raise ContentError([Problem("judges/splits.toml", "test.tasks", f"also in dev: {', '.join(both)}")])
    notes = {part: str(data.get(part, {}).get("labelled_by", "")) for part in PARTS}
    return Splits(dev, test, str(data.get("wild", {}).get("folder", "judges/wild")), notes,
                  str(data.get("wild_dev", {}).get("folder", "judges/wild_dev")))
