"""The Python API, mirroring the command line: load, evaluate, solve, check.

:func:`solve`, :func:`evaluate`, :func:`check` and :func:`exact_optimum` take an instance as a typed
object, a decoded JSON object or a path (:func:`as_instance`), and an assignment as a :class:`Solution`,
a solution object, a bare assignment or a path; they return dataclasses. The command line is a thin JSON
shell around these.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ._shared import SharedSetting
from .deadline import MIN_SOLVER_SECONDS
from .errors import InputTypeError, InstanceError, MethodError, NotApplicableError
from .evaluation import Evaluation, evaluate as _evaluate
from .evaluation.cooperative import partial_violations
from .answer import Answer, as_answer, as_instance, load_answer, load_assignment, parse_answer  # noqa: F401
from .instance import Instance, TasksInstance, load_instance, read_priorities
from .methods import Method, MethodResult, Rule, SolveOptions, Violation, get_method, get_rule, rules
from .solution import Assignment, Solution, Status, json_number, relative_gap
from .tolerance import Tolerance, parse_tolerance

__all__ = ["load_instance", "load_assignment", "load_answer", "Answer", "evaluate", "solve", "check",
           "exact_optimum", "resolve_rule", "CheckResult"]


def evaluate(instance: Instance | Mapping | str, assignment: Answer | Solution | Assignment | Mapping | str) -> Evaluation:
    """Metrics and broken rules of an assignment (parsed, an :class:`Answer`, a :class:`Solution`, a solution
    dict, or a path), as ``kipopt evaluate`` reports them.

    With a ``target`` the violations are the target's and the metrics the
    returned assignment's plus ``withheld``, as :func:`solve` reports them.
    """
    instance = as_instance(instance)
    return evaluate_solution(instance, as_answer(instance, assignment))


def evaluate_answer(instance: Instance, answer: Answer) -> Evaluation:
    """The hard rules an answer breaks and its metrics. With a ``target``: the target's broken rules, then
    the partial assignment's own (:func:`partial_violations`), and the partial assignment's metrics plus
    ``withheld``."""
    partial = _evaluate(instance, answer.assignment)
    if answer.target is None:
        return partial
    full = _evaluate(instance, answer.target)
    metrics = dict(partial.metrics, withheld=withheld(answer.assignment, answer.target))
    return Evaluation(partial.family, metrics, full.violations + partial_violations(instance, partial, answer.assignment,
                                                                                    answer.target))


def evaluate_solution(instance: Instance, answer: Answer) -> Evaluation:
    """What ``evaluate`` reports for a solution object, as ``solve`` reported it: :func:`evaluate_answer`
    and, when its ``method`` is a kipopt method of the instance's family, the broken rules of that method's
    rule (``balanced``'s balance for ``kafka.round_robin``, ...)."""
    evaluation = evaluate_answer(instance, answer)
    rule = method_rule(instance, answer.method)
    extra = [] if rule is None else _new_rules(evaluation.violations, rule.violations(instance, answer.scored))
    return dataclasses.replace(evaluation, violations=evaluation.violations + extra) if extra else evaluation


def target_hint(instance: Instance, answer: Answer) -> str:
    """Said beside a failed verdict when the solution names a method whose answers are a cooperative first
    round but carries no ``target``: its partial assignment alone leaves partitions to nobody; else ""."""
    found = None if answer.target is not None else kipopt_method(instance, answer.method)
    if found is None:
        return ""
    return (f"{found.name} answers a cooperative first round: give its full assignment as \"target\" beside the "
            f"partial \"assignment\", as kipopt solve writes it") if found.partial else ""


def kipopt_method(instance: Instance, name: str | None) -> Method | None:
    """The method ``name`` when it is a kipopt method of the instance's family (a solution's ``method`` may
    name another library's), else ``None``."""
    try:
        return None if name is None else get_method(name, instance.family)
    except InstanceError:
        return None


def method_rule(instance: Instance, method: str | None) -> Rule | None:
    """The rule of ``method`` when it names a kipopt method of the instance's family, else ``None``."""
    found = kipopt_method(instance, method)
    return None if found is None else get_rule(found.rule, instance.family)


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
"""Share of ``time_limit`` a method may use after reading; the rest is left for printing its answer."""


def solve(instance: Instance, method: str, time_limit: float | None = None, threads: int | None = None,
          seed: int | None = None, priorities: Sequence[str] | str | None = None,
          started: float | None = None) -> Solution:
    """Run ``method`` on ``instance``; the result is evaluated and carries its rule's objective.

    Warnings a method raises (PuLP's deprecations, ...) are not passed on to the caller.

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

    ``time_limit`` is the promise "an answer within the limit plus reading the
    instance (``seconds_reading`` in the solution, counted from ``started``, a
    ``time.perf_counter()`` instant the command line takes before it reads)
    plus evaluating the answer": the method gets :data:`METHOD_SHARE` of the
    limit after reading, whatever reading took, and the rest covers printing.
    A long read never shortens the method's time (it made a tight limit
    answer worse than a longer one: a 54-column LP abandoned after a
    12-second read). Interpreter start-up comes before ``started``.
    """
    if seed is not None and not -2**63 <= seed < 2**63:
        raise InstanceError("seed", f"must be a Java long (-2^63 to 2^63-1, java.util.Random's seed), got {seed}")
    instance = with_priorities(as_instance(instance), priorities)
    m = get_method(method, instance.family)
    if priorities is not None and m.rule != "joint":  # it would be ignored: say so rather than seem to apply
        raise InstanceError("--priorities", f"orders the joint rule's stages; {m.name} is scored on rule {m.rule}")
    reason = m.requires(instance) if m.requires is not None else None
    if reason is not None:
        raise NotApplicableError(m.name, reason)
    rule = get_rule(m.rule, instance.family)
    start = time.perf_counter()
    deadline_at = None
    if time_limit is not None:
        deadline_at = start + METHOD_SHARE * time_limit
    # methods that count a relative limit get what is left of the run's budget, not the whole limit again
    budget = None if deadline_at is None else max(MIN_SOLVER_SECONDS, deadline_at - start)
    options = SolveOptions(budget, threads, seed, deadline_at)
    try:
        with own_warnings_silenced():  # PuLP's and HiGHS's warnings are kipopt's business, not the caller's
            result: MethodResult = m.run(instance, options)
        return _scored(instance, m, rule, result, start, started)
    except MemoryError:
        raise out_of_memory(m.name) from None
    except NotImplementedError as exc:
        from .solvers.java_tree_bin import TreeTieError  # here only: a solve imports its own provider alone
        if not isinstance(exc, TreeTieError):
            raise
        # Java's own answer depends on identity hashes: there is nothing to reproduce
        raise NotApplicableError(m.name, f"INSTANCE: {exc}; Kafka's answer changes from run to run") from None


def _warnings_ignored() -> warnings.catch_warnings:
    """Every warning ignored; the open ``catch_warnings`` that restores the filters as they were."""
    saved = warnings.catch_warnings()
    saved.__enter__()
    warnings.simplefilter("ignore")
    return saved


own_warnings_silenced = SharedSetting(_warnings_ignored, lambda saved: saved.__exit__(None, None, None))
"""Warnings ignored while a method runs, the caller's filters as they were afterwards. The filters are the
process's, shared by its threads, so the first method to start saves them and the last to end restores them
(:class:`~kipopt._shared.SharedSetting`). A ``catch_warnings`` per call (as before) is not safe across
threads: one that saved the filters while another call's "ignore" was in place restored that "ignore" last,
and the caller's warnings stayed silenced for good (reproduced:
``test_the_callers_warning_filters_survive_solves_in_threads``)."""


def out_of_memory(method: str, field: str = "INSTANCE") -> InstanceError:
    """What running out of memory is reported as (exit 2 naming the input, ``field``, never an internal error
    and never a time limit): the input is too large for the memory this process may use."""
    what = "instance" if field == "INSTANCE" else "input"
    return InstanceError(field, f"out of memory: {method} needs more memory for this {what} than this "
                                f"process may use (a smaller {what}, or more memory)")


def _scored(instance: Instance, m: Any, rule: Rule, result: MethodResult, start: float,
            started: float | None) -> Solution:
    """``result`` as a :class:`Solution`: evaluated once, its rule's objective, criteria and violations."""
    seconds = time.perf_counter() - start
    reading = None if started is None else max(0.0, start - started)
    solution = Solution(instance.family, m.name, result.assignment, result.status, bound=result.bound,
                        seconds=seconds, message=result.message, seed=result.seed, target=result.target,
                        seconds_reading=reading)
    if result.status in (Status.INFEASIBLE, Status.ERROR):
        return solution
    answer = Answer(result.assignment, result.target, m.name)
    evaluation = evaluate_solution(instance, answer)
    scored, broken = answer.scored, evaluation.violations
    solution.objective = rule.objective(instance, scored)
    solution.metrics = dict(evaluation.metrics, **result.info)
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
    """The oracle's verdict on one assignment against one rule's exact optimum.

    ``tolerance`` is a relative gap on the objective, or an allowance per
    criterion (:mod:`kipopt.tolerance`); ``criteria`` the assignment's
    criteria for a rule that has them.
    """

    rule: str
    objective: float
    optimum: float | None
    bound: float | None
    gap: float | None
    tolerance: Tolerance
    evaluation: Evaluation
    rule_violations: list[Violation]
    exact: Solution
    criteria: dict | None = None

    def __post_init__(self) -> None:
        self.tolerance = parse_tolerance(self.tolerance)

    @property
    def feasible(self) -> bool:
        return self.evaluation.feasible and not self.rule_violations

    @property
    def optimum_criteria(self) -> dict | None:
        return self.exact.metrics.get("criteria")

    @property
    def ok(self) -> bool:
        """Feasible, and within ``tolerance``: the printed ``gap`` to the exact bound, or every criterion
        within its allowance of the proven optimum's."""
        if not self.feasible or self.exact.status not in (Status.OPTIMAL, Status.FEASIBLE) or self.bound is None:
            return False
        if self.tolerance.per_criterion:
            return self._criteria_ok()
        return self.objective <= self.bound or (self.gap is not None and self.gap <= self.tolerance.relative + 1e-12)

    def _criteria_ok(self) -> bool:
        """Only a proven optimum's criteria say how far from the best each criterion is."""
        best = self.optimum_criteria
        if self.exact.status is not Status.OPTIMAL or not best or self.criteria is None:
            return False
        return all(value <= best[name] + self.tolerance.allowance(name, best[name]) + 1e-9
                   for name, value in self.criteria.items() if name in best)

    def to_dict(self) -> dict:
        return {
            "rule": self.rule, "ok": self.ok, "feasible": self.feasible, "objective": json_number(self.objective),
            "optimum": json_number(self.optimum) if self.proven else None, "best_found": json_number(self.optimum),
            "bound": json_number(self.bound), "gap": self.gap,
            "tolerance": self.tolerance.to_json(),
            "exact_status": self.exact.status.value, "exact_method": self.exact.method,
            "exact_seconds": round(self.exact.seconds, 6),
            "violations": [v.to_dict() for v in self.evaluation.violations + self.rule_violations],
            "metrics": self.evaluation.metrics,
            **self._criteria(),
        }

    def _criteria(self) -> dict:
        """For a rule with criteria: each criterion of the assignment and of the exact answer, in order, and
        how far each is above the exact answer's."""
        if self.criteria is None:
            return {}
        best = self.optimum_criteria
        excess = None if not best else {k: json_number(v - best[k]) for k, v in self.criteria.items() if k in best}
        return {"criteria": self.criteria, "optimum_criteria": best if self.proven else None,
                "best_found_criteria": best, "criteria_excess": excess}

    def criteria_text(self) -> str:
        """``cross_rack 3 (optimum 1), revoked 0 (optimum 0)``, or "" for a rule without criteria; ``best found``
        in place of ``optimum`` when the exact model did not prove its answer."""
        if not self.criteria:
            return ""
        best = self.optimum_criteria or {}
        word = "optimum" if self.proven else "best found"
        return ", ".join(f"{k} {json_number(v)} ({word} {json_number(best.get(k))})" for k, v in self.criteria.items())

    def __repr__(self) -> str:
        """One line: the verdict and the numbers (the exact solution and the evaluation are attributes).
        ``optimum`` is the exact model's best objective, proven only when :attr:`proven` (the JSON prints it
        as ``best_found``, and ``optimum`` there only when proven)."""
        return (f"CheckResult(rule={self.rule!r}, ok={self.ok}, feasible={self.feasible}, "
                f"objective={self.objective!r}, optimum={self.optimum!r}, bound={self.bound!r}, gap={self.gap!r}, "
                f"exact={self.exact.method} {self.exact.status.value})")

    @property
    def proven(self) -> bool:
        """Whether ``optimum`` is a proven optimum (else the exact model's best answer, ``bound`` below it)."""
        return self.exact.status is Status.OPTIMAL

    def optimum_text(self) -> str:
        """``optimum 12``, or ``best found 14 (bound 12, exact.spread feasible)`` when it is not proven."""
        if self.proven:
            return f"optimum {json_number(self.optimum)}"
        return (f"best found {json_number(self.optimum)} (bound {json_number(self.bound)}, "
                f"{self.exact.method} {self.exact.status.value})")


def exact_optimum(instance: Instance, rule: str | None = None, time_limit: float | None = None) -> Solution:
    """The exact model of ``rule`` solved on ``instance`` (what :func:`check` compares with)."""
    instance = as_instance(instance)
    found = get_rule(rule, instance.family)
    exact = solve(instance, found.exact_method, time_limit=time_limit)
    if exact.status is Status.ERROR:
        raise MethodError(f"the exact model for {found.name} failed: {exact.message}")
    return exact


def resolve_rule(instance: Instance, rule: str | None, method: str | None = None, field: str = "--rule") -> Rule:
    """The rule ``check`` uses: ``rule`` when given, else the rule of the solution's ``method``, else the
    family's only rule; otherwise an :class:`InstanceError` naming the choices."""
    if rule is not None:
        if not isinstance(rule, str):
            raise InputTypeError(field, f"must be a rule's name (a string), got {type(rule).__name__}")
        try:
            return get_rule(rule, instance.family)
        except InstanceError as exc:
            raise InstanceError(field, exc.message) from None
    names = sorted(n for n, x in rules().items() if x.family == instance.family)
    if method is not None:
        found = method_rule(instance, method)
        if found is None:
            raise InstanceError(field, f"the solution's method {method!r} is not a kipopt method of family "
                                       f"{instance.family}; name the rule: one of {', '.join(names)}")
        return found
    if len(names) == 1:
        return get_rule(names[0], instance.family)
    raise InstanceError(field, f"which rule? the solution names no method; for a {instance.family} instance give "
                               f"one of {', '.join(names)}")


def check(instance: Instance, assignment: Answer | Solution | Assignment | Mapping | str, rule: str | None = None,
          tolerance: float | str | Mapping | Tolerance = 0.0, time_limit: float | None = None,
          exact: Solution | None = None, priorities: Sequence[str] | str | None = None) -> CheckResult:
    """Evaluate ``assignment`` and compare it with the exact optimum of ``rule``.

    ``assignment`` may be a solution (a :class:`Solution` as :func:`solve` returns it, an :class:`Answer`, a
    solution dict or a path) or a parsed assignment: a solution's ``target``, when present, is scored as
    :func:`solve` scores it, and its ``method`` names the rule when ``rule`` is None (:func:`resolve_rule`).
    ``tolerance`` is a relative gap or a per-criterion allowance
    (:func:`kipopt.tolerance.parse_tolerance`).
    ``exact`` is that optimum when the caller already has it (from :func:`exact_optimum`
    on the same instance and rule): a batch checks many assignments against one solve.
    ``priorities`` reorders the ``joint`` rule's stages (:func:`with_priorities`); by default a solution is scored
    in the order it records (``metrics.joint_order``, what ``solve --priorities`` wrote).
    """
    instance = as_instance(instance)
    answer = as_answer(instance, assignment)
    instance = with_priorities(instance, priorities if priorities is not None else answer.priorities)
    tolerance = parse_tolerance(tolerance)
    found = resolve_rule(instance, rule, answer.method)
    if priorities is not None and found.name != "joint":
        raise InstanceError("--priorities", f"orders the joint rule's stages; the check is on rule {found.name}")
    scored = answer.scored
    criteria = found.criteria(instance, scored) if found.criteria is not None else None
    tolerance.check_names(found.name, None if criteria is None else list(criteria))
    if exact is None:
        exact = exact_optimum(instance, found.name, time_limit)
    elif exact.method != found.exact_method:
        raise ValueError(f"exact solution of {exact.method} given, rule {found.name} needs {found.exact_method}")
    objective = found.objective(instance, scored)
    optimum = exact.objective
    bound = exact.bound if exact.bound is not None else optimum
    evaluation = evaluate_answer(instance, answer)
    rule_violations = _new_rules(evaluation.violations, found.violations(instance, scored))
    return CheckResult(found.name, objective, optimum, bound, relative_gap(objective, bound), tolerance,
                       evaluation, rule_violations, exact, criteria)
