"""Evaluators: every metric and every broken hard rule, recomputed from an assignment alone.

Nothing here trusts a solver: the façade evaluates every solution it prints,
and ``kipopt evaluate`` runs the same code on anyone's assignment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..instance import ConsumersInstance, Instance, ReplicasInstance, TasksInstance
from ..methods import Violation
from ..solution import Assignment


@dataclass
class Evaluation:
    """Metrics (JSON-ready numbers and small maps) and the hard rules broken."""

    family: str
    metrics: dict[str, Any]
    violations: list[Violation] = field(default_factory=list)

    @property
    def feasible(self) -> bool:
        return not self.violations

    def to_dict(self) -> dict:
        return {"family": self.family, "feasible": self.feasible, "metrics": self.metrics,
                "violations": [v.to_dict() for v in self.violations]}

    def __repr__(self) -> str:
        """One line: the broken rules with their counts, the scalar metrics (maps shown by their size)."""
        broken = ", ".join(f"{v.rule}: {v.count}" for v in self.violations)
        metrics = ", ".join(f"{k}={v!r}" if v is None or isinstance(v, (bool, int, float, str)) else
                            f"{k}=<{len(v)} entries>" if hasattr(v, "__len__") else f"{k}=<{type(v).__name__}>"
                            for k, v in self.metrics.items())
        return f"Evaluation(family={self.family!r}, feasible={self.feasible}, violations={{{broken}}}, {metrics})"


def evaluate(instance: Instance, assignment: Assignment) -> Evaluation:
    """Evaluate ``assignment`` (already parsed for ``instance``)."""
    if isinstance(instance, TasksInstance):
        from .tasks import evaluate_tasks
        return evaluate_tasks(instance, assignment)
    if isinstance(instance, ConsumersInstance):
        from .consumers import evaluate_consumers
        return evaluate_consumers(instance, assignment)
    if isinstance(instance, ReplicasInstance):
        from .replicas import evaluate_replicas
        return evaluate_replicas(instance, assignment)
    raise TypeError(f"not an instance: {type(instance).__name__}")


class ViolationLog:
    """Collects violations by rule name, keeping a count and the first few examples."""

    def __init__(self, keep: int = 5):
        self.keep = keep
        self.counts: dict[str, int] = {}
        self.examples: dict[str, list[str]] = {}

    def add(self, rule: str, example: str) -> None:
        self.counts[rule] = self.counts.get(rule, 0) + 1
        kept = self.examples.setdefault(rule, [])
        if len(kept) < self.keep:
            kept.append(example)

    def add_all(self, rule: str, items: list, describe: Any) -> None:
        """One violation of ``rule`` per item (``describe(item)`` its example), in one step."""
        if items:
            self.counts[rule] = self.counts.get(rule, 0) + len(items)
            kept = self.examples.setdefault(rule, [])
            kept.extend(describe(x) for x in items[:max(0, self.keep - len(kept))])

    def violations(self) -> list[Violation]:
        return [Violation(rule, n, tuple(self.examples[rule])) for rule, n in self.counts.items()]


def spread(values: Any) -> float:
    """max - min of an iterable (0 when empty), as an int where possible."""
    values = list(values)
    return (max(values) - min(values)) if values else 0
