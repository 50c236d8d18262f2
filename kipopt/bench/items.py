"""The grid's work items: one generated instance (family, size parameters, seed) with the methods
to run on it, named by a hash of its canonical description so that the same grid always yields
the same ids.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from .grid import Grid


@dataclass(frozen=True)
class WorkItem:
    """One instance of the grid and the methods to run on it (with their time limits)."""

    item_id: str
    instance_id: str
    family: str
    params: tuple[tuple[str, Any], ...]
    seed: int
    methods: tuple[tuple[str, float], ...]
    score_rules: tuple[str, ...] = ()

    def to_row(self) -> dict:
        return {"item_id": self.item_id, "instance_id": self.instance_id, "family": self.family,
                "params": json.dumps(dict(self.params), sort_keys=True), "seed": self.seed,
                "methods": json.dumps([list(m) for m in self.methods]),
                "score_rules": json.dumps(list(self.score_rules))}

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "WorkItem":
        return cls(row["item_id"], row["instance_id"], row["family"],
                   tuple(sorted(json.loads(row["params"]).items())), int(row["seed"]),
                   tuple((m, float(t)) for m, t in json.loads(row["methods"])),
                   tuple(json.loads(row.get("score_rules") or "[]")))


def stable_hash(obj: Any, length: int = 16) -> str:
    """A short hex digest of the canonical JSON of ``obj``.

    >>> stable_hash({"b": 1, "a": [2, 3]}) == stable_hash({"a": [2, 3], "b": 1})
    True
    """
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def expand(grid: Grid) -> list[WorkItem]:
    """All work items of ``grid``, biggest first (so the slowest start early).

    The instance id hashes what defines the instance (generator, family,
    parameters, seed); the item id adds the methods and their limits, so
    changing the methods of a family (or its ``score_rules``) makes its items new work.
    """
    items = []
    for fam in grid.families:
        methods = tuple((m, fam.time_limits[m]) for m in fam.methods)
        for params, seeds in fam.cells():
            for seed in seeds:
                instance = {"generator": grid.generator, "family": fam.family, "params": dict(params),
                            "seed": seed}
                instance_id = stable_hash(instance)
                work = dict(instance, methods=[list(m) for m in methods])
                if fam.score_rules:
                    work["score_rules"] = list(fam.score_rules)
                items.append(WorkItem(stable_hash(work), instance_id, fam.family, params, seed, methods,
                                      fam.score_rules))
    return sorted(items, key=lambda it: (-_size_hint(it.params), it.family, it.item_id))


def _size_hint(params: Iterable[tuple[str, Any]]) -> float:
    product = 1.0
    for _, value in params:
        if type(value) in (int, float) and value > 0:
            product *= value
    return product
