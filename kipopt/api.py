"""The Python API, mirroring the command line: load, evaluate, solve, check.

Every function takes typed objects or plain paths/dicts and returns
dataclasses; the command line is a thin JSON shell around these.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from . import _read as r
from .deadline import MIN_SOLVER_SECONDS
from .errors import InstanceError, MethodError, NotApplicableError
from .evaluation import Evaluation, evaluate as _evaluate
from .instance import Instance, TasksInstance, load_instance, read_priorities
from .methods import MethodResult, SolveOptions, Violation, get_method, get_rule
from .solution import Assignment, Solution, Status, json_number, parse_solution, relative_gap

__all__ = ["load_instance", "load_assignment", "evaluate", "solve", "check", "exact_optimum", "CheckResult"]


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


def with_priorities(instance: Instance, priorities: Sequence[str] | str | None) -> Instance:
    """``instance`` with its ``joint_priorities`` replaced (``--priorities``: names or ``"a,b,c"``)."""
    if priorities is None:
        return instance
    if not isinstance(instance, TasksInstance):
        raise InstanceError("--priorities", f"orders the joint rule of tasks instances, not {instance.family}")
    names = read_priorities(priorities.split(",") if isinstance(priorities, str) else list(priorities),
                            "--priorities")
    return dataclasses.replace(instance, config=dataclasses.replace(instance.config, joint_priorities=names))


METHOD_SHARE = 0.9
"""Share of ``time_limit`` a method may use; the rest is left for evaluating and printing its answer."""

EVALUATION_PER_READ = 1.0
"""Evaluating and printing an answer takes about as long as reading the instance did (measured at 100,000
tasks: 0.95 s against 1.25 s), so a run that knows its reading time leaves at least that much after the method."""


METHOD_FLOOR = 0.5
"""Share of ``time_limit`` a method gets after reading at least, however long reading took."""


def solve(instance: Instance, method: str, time_limit: float | None = None, threads: int | None = None,
          seed: int | None = None, priorities: Sequence[str] | str | None = None,
          started: float | None = None) -> Solution:
    """Run ``method`` on ``instance``; the result is evaluated and carries its rule's objective.

    A method that also returns a ``target`` (``kafka.cooperative_sticky``: Kafka's
    partial assignment withholds partitions still being revoked, the target is
    what the group converges to) is scored on the target: the rule objective
    and every violation are computed on it, so the partitions a cooperative
    rebalance withholds for one round are not reported as unassigned. The
    metrics stay those of the returned (partial) assignment, plus
    ``withheld``: the partitions of the target missing from it.

    ``priorities`` reorders the ``joint`` rule's stages for this run (:func:`with_priorities`).

    An exact method whose assignment breaks a rule, or whose claimed objective
    differs from the recomputed one, is reported as ``status: error`` with the
    reason, never as a solution. A method that does not apply to the instance
    (its ``requires`` gives a reason) raises :class:`NotApplicableError`.

    ``time_limit`` bounds the whole run from ``started`` (a ``time.perf_counter()``
    instant, default now: the command line passes the instant before it read
    the instance); the method gets :data:`METHOD_SHARE` of it, less when
    reading took long (:data:`EVALUATION_PER_READ`), but never less than
    :data:`METHOD_FLOOR` of it after reading: a run answers within the limit
    plus its reading time (``seconds_reading`` in the solution) plus
    evaluating the answer. Interpreter start-up comes before ``started``.
    """
    instance = with_priorities(instance, priorities)
    m = get_method(method, instance.family)
    reason = m.requires(instance) if m.requires is not None else None
    if reason is not None:
        raise NotApplicableError(m.name, reason)
    rule = get_rule(m.rule, instance.family)
    start = time.perf_counter()
    deadline_at = None
    if time_limit is not None:
        began = start if started is None else started
        reserve = max((1 - METHOD_SHARE) * time_limit, EVALUATION_PER_READ * (start - began))
        # never less than METHOD_FLOOR of the limit after reading: the promise is the limit plus reading and
        # evaluating, so a read as long as the limit still leaves a small model time to finish (issue 21)
        deadline_at = max(began + time_limit - reserve, start + METHOD_FLOOR * time_limit)
    # methods that count a relative limit get what is left of the run's budget, not the whole limit again
    budget = None if deadline_at is None else max(MIN_SOLVER_SECONDS, deadline_at - start)
    options = SolveOptions(budget, threads, seed, deadline_at)
    result: MethodResult = m.run(instance, options)
    seconds = time.perf_counter() - start
    reading = None if started is None else max(0.0, start - started)
    solution = Solution(instance.family, m.name, result.assignment, result.status, bound=result.bound,
                        seconds=seconds, message=result.message, seed=result.seed, target=result.target,
                        seconds_reading=reading)
    if result.status in (Status.INFEASIBLE, Status.ERROR):
        return solution
    evaluation = _evaluate(instance, result.assignment)
    scored, rule_evaluation = result.assignment, evaluation
    if result.target is not None:
        scored, rule_evaluation = result.target, _evaluate(instance, result.target)
    broken = rule_evaluation.violations + _new_rules(rule_evaluation.violations, rule.violations(instance, scored))
    solution.objective = rule.objective(instance, scored)
    solution.metrics = dict(evaluation.metrics, **result.info)
    if result.target is not None:
        solution.metrics["withheld"] = withheld(result.assignment, result.target)
    if rule.criteria is not None:
        solution.metrics["criteria"] = rule.criteria(instance, scored)
    solution.metrics["violations"] = [v.to_dict() for v in broken]
    _trust_but_verify(m.exact, result, solution, broken)
    return solution


def withheld(partial: Mapping, target: Mapping) -> int:
    """Partitions of ``target`` (per member) that the ``partial`` assignment does not give that member."""
    return sum(len(set(parts) - set(partial.get(member, ()))) for member, parts in target.items())


def score(instance: Instance, assignment: Assignment, rule: str) -> dict:
    """``assignment`` on ``rule``: its objective, how many hard rules it breaks, and its criteria."""
    found = get_rule(rule, instance.family)
    evaluation = _evaluate(instance, assignment)
    broken = evaluation.violations + _new_rules(evaluation.violations, found.violations(instance, assignment))
    criteria = found.criteria(instance, assignment) if found.criteria is not None else None
    return {"objective": found.objective(instance, assignment), "violations": sum(v.count for v in broken),
            "criteria": criteria}


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
    criteria: dict | None = None

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
            **self._criteria(),
        }

    def _criteria(self) -> dict:
        """For a lexicographic rule: each criterion of the assignment and of the exact answer, in order."""
        if self.criteria is None:
            return {}
        return {"criteria": self.criteria, "optimum_criteria": self.exact.metrics.get("criteria")}


def exact_optimum(instance: Instance, rule: str | None = None, time_limit: float | None = None) -> Solution:
    """The exact model of ``rule`` solved on ``instance`` (what :func:`check` compares with)."""
    found = get_rule(rule, instance.family)
    exact = solve(instance, found.exact_method, time_limit=time_limit)
    if exact.status is Status.ERROR:
        raise MethodError(f"the exact model for {found.name} failed: {exact.message}")
    return exact


def check(instance: Instance, assignment: Assignment, rule: str | None = None, tolerance: float = 0.0,
          time_limit: float | None = None, exact: Solution | None = None,
          priorities: Sequence[str] | str | None = None) -> CheckResult:
    """Evaluate ``assignment`` and compare it with the exact optimum of ``rule``.

    ``exact`` is that optimum when the caller already has it (from :func:`exact_optimum`
    on the same instance and rule): a batch checks many assignments against one solve.
    ``priorities`` reorders the ``joint`` rule's stages (:func:`with_priorities`).
    """
    instance = with_priorities(instance, priorities)
    if not (tolerance >= 0 and math.isfinite(tolerance)):
        raise InstanceError("--tolerance", f"must be a finite number >= 0, got {tolerance}")
    found = get_rule(rule, instance.family)
    if exact is None:
        exact = exact_optimum(instance, found.name, time_limit)
    elif exact.method != found.exact_method:
        raise ValueError(f"exact solution of {exact.method} given, rule {found.name} needs {found.exact_method}")
    objective = found.objective(instance, assignment)
    optimum = exact.objective
    bound = exact.bound if exact.bound is not None else optimum
    evaluation = _evaluate(instance, assignment)
    rule_violations = _new_rules(evaluation.violations, found.violations(instance, assignment))
    criteria = found.criteria(instance, assignment) if found.criteria is not None else None
    return CheckResult(found.name, objective, optimum, bound, relative_gap(objective, bound), tolerance,
                       evaluation, rule_violations, exact, criteria)
