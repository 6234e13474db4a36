"""The design items of a task as a networkx DAG, and the scores computed over it.

Credit per verdict: implemented 1, partial 0.5, missing 0; undetermined items are left out of the
means (``coverage`` says what share of the weight was decided).

- level score L1/L2/L3: the weighted mean credit of the level's decided items;
- implementation score (0–100): the mean of the three level scores × 100 (levels with no decided
  item are left out of the mean);
- dependency-aware score: the same, with each item's credit multiplied by the dependency-aware
  credit of its weakest prerequisite (in topological order; an undetermined prerequisite counts
  1, no evidence against it), so a property built without its foundations earns less;
- flags: items implemented or partial while a prerequisite is missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from d2k.schema import DesignItem

CREDIT = {"implemented": 1.0, "partial": 0.5, "missing": 0.0}


def build(items: list[DesignItem]) -> nx.DiGraph:
    """Edges run prerequisite → dependent."""
    graph = nx.DiGraph()
    for item in items:
        graph.add_node(item.id, level=item.level, weight=item.weight, title=item.title)
    for item in items:
        for dep in item.depends_on:
            graph.add_edge(dep, item.id)
    return graph


@dataclass
class Scores:
    levels: dict[int, float | None]
    combined: float | None
    dependency_aware: float | None
    coverage: float
    flags: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"l1": self.levels.get(1), "l2": self.levels.get(2), "l3": self.levels.get(3),
                "combined": self.combined, "dependency_aware": self.dependency_aware,
                "coverage": self.coverage, "flags": self.flags}


def _level_means(items: list[DesignItem], credit: dict[str, float | None]) -> dict[int, float | None]:
    means = {}
    for level in (1, 2, 3):
        decided = [(i.weight, credit[i.id]) for i in items if i.level == level and credit.get(i.id) is not None]
        total = sum(w for w, _ in decided)
        means[level] = sum(w * c for w, c in decided) / total if total else None
    return means


def _combined(levels: dict[int, float | None]) -> float | None:
    present = [v for v in levels.values() if v is not None]
    return 100.0 * sum(present) / len(present) if present else None


def score(items: list[DesignItem], verdicts: dict[str, str]) -> Scores:
    """Scores from ``verdicts`` (item id → implemented / partial / missing / undetermined)."""
    graph = build(items)
    credit = {i.id: CREDIT.get(verdicts.get(i.id, "undetermined")) for i in items}
    levels = _level_means(items, credit)
    aware: dict[str, float | None] = {}
    for node in nx.topological_sort(graph):
        own = credit.get(node)
        prereq = [aware[p] if aware[p] is not None else 1.0 for p in graph.predecessors(node)]
        aware[node] = None if own is None else own * (min(prereq) if prereq else 1.0)
    flags = []
    for item in items:
        if verdicts.get(item.id) in ("implemented", "partial"):
            for dep in item.depends_on:
                if verdicts.get(dep) == "missing":
                    flags.append({"item": item.id, "missing_prerequisite": dep})
    total_weight = sum(i.weight for i in items)
    decided_weight = sum(i.weight for i in items if credit[i.id] is not None)
    return Scores(levels, _combined(levels), _combined(_level_means(items, aware)),
                  decided_weight / total_weight if total_weight else 0.0, flags)
