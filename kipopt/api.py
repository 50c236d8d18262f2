"""The Python API, mirroring the command line: load, evaluate, solve, check.

Every function takes typed objects or plain paths/dicts and returns
dataclasses; the command line is a thin JSON shell around these.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Mapping

from . import _read as r
from .errors import InstanceError, MethodError
from .evaluation import Evaluation, evaluate as _evaluate
from .instance import Instance, load_instance
from .methods import MethodResult, SolveOptions, Violation, get_method, get_rule
from .solution import Assignment, Solution, Status, json_number, parse_solution, relative_gap

__all__ = ["load_instance", "load_assignment", "evaluate", "solve", "check", "CheckResult"]


def load_assignment(instance: Instance, source: str | Mapping) -> Assignment:
    """Read a solution object (path, ``-`` or dict) and return its parsed assignment."""
    data = source if isinstance(source, Mapping) else r.read_json_file(source, "SOLUTION")
    try:
        return parse_solution(instance, data)
    except InstanceError as exc:
        raise InstanceError(f"SOLUTION {exc.field}", exc.message) from None


def evaluate(instance: Instance, assignment: Assignment | Mapping | str) -> Evaluation:
    """Metrics and broken rules of an assignment (parsed, a solution dict, or a path)."""
    if isinstance(assignment, str) or (isinstance(assignment, Mapping) and "assignment" in assignment):
        assignment = load_assignment(instance, assignment)
    return _evaluate(instance, assignment)


METHOD_SHARE = 0.9
"""Share of ``time_limit`` a method may use; the rest is left for evaluating and printing its answer."""


def solve(instance: Instance, method: str, time_limit: float | None = None, threads: int | None = None,
          seed: int | None = None, started: float | None = None) -> Solution:
    """Run ``method`` on ``instance``; the result is evaluated and carries its rule's objective.

    An exact method whose assignment breaks a rule, or whose claimed objective
    differs from the recomputed one, is reported as ``status: error`` with the
    reason, never as a solution.

    ``time_limit`` bounds the whole run from ``started`` (a ``time.perf_counter()``
    instant, default now: the command line passes the instant before it read
    the instance); the method gets :data:`METHOD_SHARE` of it.
    """
    m = get_method(method, instance.family)
    rule = get_rule(m.rule, instance.family)
    start = time.perf_counter()
    deadline_at = None if time_limit is None else (start if started is None else started) + METHOD_SHARE * time_limit
    options = SolveOptions(time_limit, threads, seed, deadline_at)
    result: MethodResult = m.run(instance, options)
    seconds = time.perf_counter() - start
    solution = Solution(instance.family, m.name, result.assignment, result.status, bound=result.bound,
                        seconds=seconds, message=result.message, seed=result.seed, target=result.target)
    if result.status in (Status.INFEASIBLE, Status.ERROR):
        return solution
    evaluation = _evaluate(instance, result.assignment)
    broken = evaluation.violations + _new_rules(evaluation.violations, rule.violations(instance, result.assignment))
    solution.objective = rule.objective(instance, result.assignment)
    solution.metrics = dict(evaluation.metrics, **result.info)
    solution.metrics["violations"] = [v.to_dict() for v in broken]
    _trust_but_verify(m.exact, result, solution, broken)
    return solution


def _new_rules(known: list[Violation], extra: list[Violation]) -> list[Violation]:
    """The rule's own violations that the evaluator has not already reported under the same name."""
    seen = {v.rule for v in known}
    return [v for v in extra if v.rule not in seen]


def _trust_but_verify(exact: bool, result: MethodResult, solution: Solution, broken: list[Violation]) -> None:
    claimed, actual = result.objective, solution.objective
    if claimed is not None and not math.isclose(claimed, actual, rel_tol=1e-9, abs_tol=1e-6):
        solution.status = Status.ERROR
        solution.message = f"{solution.method} claimed objective {claimed}, but its assignment evaluates to {actual}"
    elif exact and broken:
        solution.status = Status.ERROR
        solution.message = f"{solution.method} returned an assignment that breaks {', '.join(v.rule for v in broken)}"
    if solution.status is Status.OPTIMAL and solution.bound is None:
        solution.bound = actual


@dataclass
class CheckResult:
    """The oracle's verdict on one assignment against one rule's exact optimum."""

    rule: str
    objective: float
    optimum: float | None
    bound: float | None
    gap: float | None
    tolerance: float
    evaluation: Evaluation
    rule_violations: list[Violation]
    exact: Solution

    @property
    def feasible(self) -> bool:
        return self.evaluation.feasible and not self.rule_violations

    @property
    def ok(self) -> bool:
        """Feasible, and the printed ``gap`` to the exact bound is at most ``tolerance``."""
        if not self.feasible or self.exact.status not in (Status.OPTIMAL, Status.FEASIBLE) or self.bound is None:
            return False
        return self.objective <= self.bound or (self.gap is not None and self.gap <= self.tolerance + 1e-12)

    def to_dict(self) -> dict:
        return {
            "rule": self.rule, "ok": self.ok, "feasible": self.feasible, "objective": json_number(self.objective),
            "optimum": json_number(self.optimum), "bound": json_number(self.bound), "gap": self.gap, "tolerance": self.tolerance,
            "exact_status": self.exact.status.value, "exact_method": self.exact.method,
            "exact_seconds": round(self.exact.seconds, 6),
            "violations": [v.to_dict() for v in self.evaluation.violations + self.rule_violations],
            "metrics": self.evaluation.metrics,
        }


def check(instance: Instance, assignment: Assignment, rule: str | None = None, tolerance: float = 0.0,
          time_limit: float | None = None) -> CheckResult:
    """Evaluate ``assignment`` and compare it with the exact optimum of ``rule``."""
    if not (tolerance >= 0 and math.isfinite(tolerance)):
        raise InstanceError("--tolerance", f"must be a finite number >= 0, got {tolerance}")
    found = get_rule(rule, instance.family)
    exact = solve(instance, found.exact_method, time_limit=time_limit)
    if exact.status is Status.ERROR:
        raise MethodError(f"the exact model for {found.name} failed: {exact.message}")
    objective = found.objective(instance, assignment)
    optimum = exact.objective
    bound = exact.bound if exact.bound is not None else optimum
    evaluation = _evaluate(instance, assignment)
    rule_violations = _new_rules(evaluation.violations, found.violations(instance, assignment))
    return CheckResult(found.name, objective, optimum, bound, relative_gap(objective, bound), tolerance,
                       evaluation, rule_violations, exact)
