"""KIP-925 rules and exact methods for Kafka Streams tasks: ``rack_active``, ``rack_standby``, ``balanced_subtopology``.

Rules (objective and hard constraints, recomputed from an assignment alone):

``rack_active``
    KIP-925 active cost relative to the instance's ``active`` lists
    (:func:`kipopt.costs.role_cost`, configured costs, Kafka's 10/1 when
    unset). Hard: every client keeps its number of actives; with strategy
    ``balance_subtopology`` every (client, sub-topology) count stays within
    Kafka's cap ``ceil(((orig_j * 1.0) / T) * n_g)`` (IEEE doubles). This is
    exactly the network Kafka's ``MinTrafficGraphConstructor`` /
    ``BalanceSubtopologyGraphConstructor`` build over all tasks, so a correct
    port of ``RackAwareTaskAssignor.optimizeActiveTasks`` (cycle canceling is
    exact for its graph) costs exactly the optimum. Strategies ``none`` and
    ``min_traffic`` both mean "no caps" here (with ``none`` Kafka does not
    optimise at all, so its port then simply keeps the input).
``balanced_subtopology``
    The research variant: same cost and per-client counts, but each
    (client, sub-topology) count lies between ``floor`` and ``ceil`` of the
    exact share ``orig_j × n_g / T`` (integer arithmetic, no caps from
    floating point). Always feasible: the fractional assignment giving every
    task of group g to client j with weight ``orig_j / T`` meets every bound,
    and the constraint matrix is totally unimodular, so an integral point
    exists too. Its optimum is never below ``rack_active``'s with Kafka's caps
    on the same instance (the feasible set is smaller: exact ceilings are at
    most Kafka's, and there are floors).
``rack_standby``
    KIP-925 standby cost relative to the instance's ``standby`` lists. Hard:
    actives stay the instance's; every client keeps its number of standbys,
    every task its number of standby copies; no standby on a client where
    the task is active; with ``rack_aware_assignment_tags``, no stateful task
    ends with fewer distinct (tag key, value) pairs over its hosts than it
    had in the instance (Kafka's tag-aware movement predicate, aggregated:
    see :mod:`kipopt.formulations.tasks.rack.standby_model` for why Kafka's port
    always meets it, so the port and the exact model solve one problem).

Methods: ``exact.rack_active`` (without per-sub-topology bounds the
transportation problem of :mod:`kipopt.formulations.tasks.rack.transport`; with
them the PuLP full model when ``T × C <=`` :data:`PULP_MAX_PAIRS`, else the
network over task groups and capped-pair profiles of
:mod:`kipopt.formulations.tasks.rack.balance_relaxed` (a lower bound, independent of the
numbers of clients and sub-topologies, read back to an assignment that meets it), and where
its read-back misses the bound the priced network of
:mod:`kipopt.formulations.tasks.rack.balance_priced`; the
per-client network of :mod:`kipopt.formulations.tasks.rack.balance` and the
rack-grouped LP of :mod:`kipopt.formulations.tasks.rack.model` stay as
cross-checks, and
:func:`solve_active` reaches every model), ``exact.balanced_subtopology``
(same choice) and ``exact.rack_standby``. Each runs within the deadline of
its :class:`~kipopt.methods.SolveOptions`.
Read-back: tasks not optimised keep their instance roles; warm-ups are
empty. A client that becomes active on a task it held as a standby drops
that standby (a task is never both on one client).

Two clients on racks a and b, each running the task whose input lives on
the other rack: swapping costs two moves and saves all traffic.

>>> from kipopt.instance import from_dict
>>> x = from_dict({"format": 1, "family": "tasks",
...     "topics": {"in": {"racks": [["a"], ["b"]]}},
...     "tasks": {"0_0": {"inputs": ["in-0"]}, "0_1": {"inputs": ["in-1"]}},
...     "clients": {"x": {"rack": "b", "active": ["0_0"]}, "y": {"rack": "a", "active": ["0_1"]}}})
>>> for model in ("pulp", "arrays"):
...     problem, sol = solve_active(x, model=model)
...     print(model, sol.status, sol.objective, [problem.clients[c] for c in sol.placement])
pulp optimal 2 ['y', 'x']
arrays optimal 2 ['y', 'x']
>>> r = run_rack_active(x, SolveOptions())
>>> r.assignment["y"].active, r.objective, r.bound
(('0_0',), 2.0, 2.0)
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping

import numpy as np

from kipopt.costs import role_cost
from kipopt.evaluation.tasks import placements
from kipopt.deadline import Deadline
from kipopt.instance import TasksInstance
from kipopt.methods import Method, MethodResult, Rule, SolveOptions, Violation
from kipopt.solution import Status, TaskRoles, current_assignment

from kipopt.formulations.tasks.guard import guarded, named
from kipopt.formulations.tasks.rack.model import (ActiveProblem, ActiveSolution, active_problem, fair_bounds, kafka_cap,
                                                 solve_rack_grouped, unique_owners_reason)
from kipopt.formulations.tasks.rack.standby_classes import place_standbys
from kipopt.formulations.tasks.rack.standby_grouped import client_level_standbys, place_standbys_by_task
from kipopt.formulations.tasks.rack.standby_model import distinct_tag_pairs

PULP_MAX_PAIRS = 2_000
"""``exact.rack_active`` uses the readable PuLP model up to this many task × client pairs."""

MODELS = ("auto", "transport", "relaxed", "balance", "network", "pulp", "arrays")
EXAMPLES = 5


# --------------------------------------------------------------------------- rules


def active_objective(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> float:
    return role_cost(instance, assignment, "active").total


def standby_objective(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> float:
    return role_cost(instance, assignment, "standby").total


def _violation(rule: str, found: list[str]) -> list[Violation]:
    return [Violation(rule, len(found), tuple(found[:EXAMPLES]))] if found else []


def _count_changes(instance: TasksInstance, assignment: Mapping[str, TaskRoles], role: str) -> list[str]:
    out = []
    for cid, client in instance.clients.items():
        roles = assignment.get(cid)
        now = len(getattr(roles, role)) if roles is not None else 0
        before = len(getattr(client, role))
        if now != before:
            out.append(f"{cid}: {now} {role} tasks, had {before}")
    return out


def _group_counts(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> dict[tuple[str, int], int]:
    sub = dict(zip(instance.task_ids, instance.task_subtopologies.tolist()))  # parsed once, not per task id
    counts: Counter = Counter()
    for cid, roles in assignment.items():
        for t in roles.active:
            counts[cid, sub[t]] += 1
    return counts


def _group_sizes(instance: TasksInstance) -> Counter:
    return Counter(instance.task_subtopologies.tolist())


def rack_active_violations(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> list[Violation]:
    """Per-client active counts changed; with ``balance_subtopology`` Kafka's caps exceeded."""
    found = _violation("active_count_changed", _count_changes(instance, assignment, "active"))
    if instance.config.rack_aware_assignment_strategy != "balance_subtopology":
        return found
    total, sizes, counts = len(instance.tasks), _group_sizes(instance), _group_counts(instance, assignment)
    over = []
    for (cid, g), n in sorted(counts.items()):
        cap = kafka_cap(len(instance.clients[cid].active), total, sizes[g])
        if n > cap:
            over.append(f"{cid}: {n} active tasks of sub-topology {g}, Kafka's cap is {cap}")
    return found + _violation("subtopology_cap", over)


def balanced_violations(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> list[Violation]:
    """Per-client active counts changed; a (client, sub-topology) count outside floor/ceil of its share."""
    found = _violation("active_count_changed", _count_changes(instance, assignment, "active"))
    total, sizes, counts = len(instance.tasks), _group_sizes(instance), _group_counts(instance, assignment)
    return found + _violation("subtopology_share", _off_share(instance, total, sizes, counts))


SHARE_CHUNK = 4_000_000
"""(client, sub-topology) pairs :func:`_off_share` checks at once (bounds its arrays' memory)."""


def _off_share(instance: TasksInstance, total: int, sizes: Counter, counts: Mapping[tuple[str, int], int]
               ) -> list[str]:
    """Every (client, sub-topology) count outside :func:`fair_bounds`, clients then sub-topologies sorted: a
    numpy pass over the pairs (clients × sub-topologies of them, most with no task), strings only for those
    outside."""
    cids, groups = sorted(instance.clients), sorted(sizes)
    row, col = {c: i for i, c in enumerate(cids)}, {g: j for j, g in enumerate(groups)}
    orig = np.array([len(instance.clients[c].active) for c in cids], dtype=np.int64)
    size = np.array([sizes[g] for g in groups], dtype=np.int64)
    placed = [(row[c], col[g], n) for (c, g), n in counts.items() if c in row]
    at = np.array([(i, j) for i, j, _ in placed], dtype=np.int64).reshape(-1, 2)
    got = np.array([n for _, _, n in placed], dtype=np.int64)
    order = np.argsort(at[:, 0], kind="stable")
    at, got = at[order], got[order]
    step = max(1, SHARE_CHUNK // max(1, len(groups)))
    off = []
    for first in range(0, len(cids), step):
        rows = slice(first, min(first + step, len(cids)))
        share = np.outer(orig[rows], size)
        lo, hi = share // total, -((-share) // total)
        n = np.zeros_like(share)
        mine = slice(*np.searchsorted(at[:, 0], [rows.start, rows.stop]))
        n[at[mine, 0] - first, at[mine, 1]] = got[mine]
        for i, j in zip(*np.nonzero((n < lo) | (n > hi))):
            off.append(f"{cids[first + i]}: {n[i, j]} active tasks of sub-topology {groups[j]}, "
                       f"fair share allows {lo[i, j]}..{hi[i, j]}")
    return off


def rack_standby_violations(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> list[Violation]:
    """Standby counts per client and per task, standbys on active clients, changed actives, tag distinctness."""
    found = _violation("standby_count_changed", _count_changes(instance, assignment, "standby"))
    try:
        changed, on_active = _standby_placement_checks(instance, assignment)
    except KeyError:  # a task or client the instance does not have: the slow path names what it can
        before = Counter(t for c in instance.clients.values() for t in c.standby)
        after = Counter(t for r in assignment.values() for t in r.standby)
        changed = [f"{t}: {after[t]} standby copies, had {before[t]}" for t in instance.task_ids
                   if after[t] != before[t]]
        active_on = {(cid, t) for cid, c in instance.clients.items() for t in c.active}
        on_active = [f"{cid}: standby of {t}, which is active there" for cid, r in sorted(assignment.items())
                     for t in r.standby if (cid, t) in active_on]
    found += _violation("task_standby_count_changed", changed)
    found += _violation("standby_on_active_client", on_active)
    moved = [f"{cid}: active tasks differ from the instance's" for cid, r in sorted(assignment.items())
             if set(r.active) != set(instance.clients[cid].active)]
    found += _violation("active_changed", moved)
    return found + _violation("tag_distinctness_dropped", _distinctness_drops(instance, assignment))


def _standby_placement_checks(instance: TasksInstance, assignment: Mapping[str, TaskRoles]
                              ) -> tuple[list[str], list[str]]:
    """Tasks whose standby copies changed in number, and standbys on a client running the task: by arrays
    over the placements (linear), messages only for what is broken. ``KeyError`` for an unknown id."""
    T = len(instance.tasks)
    tasks, clients = instance.task_ids, instance.client_ids
    after_task, after_client = placements(instance, assignment, "standby")
    before_task, _ = placements(instance, instance.clients, "standby")
    after, before = np.bincount(after_task, minlength=T), np.bincount(before_task, minlength=T)
    changed = [f"{tasks[t]}: {after[t]} standby copies, had {before[t]}" for t in np.nonzero(after != before)[0]]
    active_task, active_client = placements(instance, instance.clients, "active")
    clash = np.isin(after_client * T + after_task, active_client * T + active_task)
    pairs = sorted((clients[c], tasks[t]) for c, t in zip(after_client[clash].tolist(), after_task[clash].tolist()))
    return changed, [f"{cid}: standby of {t}, which is active there" for cid, t in pairs]


def _distinctness_drops(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> list[str]:
    """Stateful tasks whose hosts carry fewer distinct tag pairs than in the instance (tags configured)."""
    if not instance.config.rack_aware_assignment_tags:
        return []
    before = _distinct_before(instance)
    after = distinct_tag_pairs(instance, assignment)
    return [f"{t}: {after[t]} distinct tag pairs, had {before[t]}" for t in instance.task_ids
            if t in before and after[t] < before[t]]


_BEFORE: dict[int, tuple[TasksInstance, dict]] = {}


def _distinct_before(instance: TasksInstance) -> dict:
    """:func:`distinct_tag_pairs` of the instance's own assignment, kept for the last few instances (every
    scoring of an answer compares with it: ``solve`` and ``check`` score twice, a batch many times)."""
    hit = _BEFORE.get(id(instance))
    if hit is not None and hit[0] is instance:
        return hit[1]
    found = distinct_tag_pairs(instance, current_assignment(instance))
    if len(_BEFORE) >= 8:
        _BEFORE.pop(next(iter(_BEFORE)))
    _BEFORE[id(instance)] = (instance, found)
    return found


# --------------------------------------------------------------------------- solving


def active_bounds(instance: TasksInstance, rule: str) -> str:
    """Which per-(client, sub-topology) bounds ``rule`` imposes on ``instance``."""
    if rule == "balanced_subtopology":
        return "fair"
    if rule == "rack_active":
        return "kafka" if instance.config.rack_aware_assignment_strategy == "balance_subtopology" else "none"
    raise ValueError(f"not an active rule: {rule!r}")


def choose_model(problem: ActiveProblem, model: str = "auto") -> str:
    """``"transport"`` without per-sub-topology bounds; with them ``"pulp"`` up to
    :data:`PULP_MAX_PAIRS` task × client pairs, else ``"relaxed"`` (the network over task groups and
    capped-pair profiles of :mod:`kipopt.formulations.tasks.rack.balance_relaxed`, read back to its bound;
    where the read-back misses it, the priced network of :mod:`kipopt.formulations.tasks.rack.balance_priced`
    decides). ``"balance"`` (the priced network alone), ``"network"`` (the per-client network of
    :mod:`kipopt.formulations.tasks.rack.balance`) and ``"arrays"`` (the rack-grouped LP) are cross-checks."""
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    if model != "auto":
        return model
    if problem.upper is None:
        return "transport"
    return "pulp" if problem.num_tasks * problem.num_clients <= PULP_MAX_PAIRS else "relaxed"


def solve_active(instance: TasksInstance, rule: str = "rack_active", model: str = "auto",
                 time_limit: float | None = None, threads: int | None = None,
                 deadline: Deadline | None = None) -> tuple[ActiveProblem, ActiveSolution]:
    """Solve the active problem of ``rule`` with the chosen model (one of :data:`MODELS`);
    ``deadline`` (default: ``time_limit`` from now) bounds model building and solving."""
    deadline = Deadline.after(time_limit) if deadline is None else deadline
    problem = active_problem(instance, active_bounds(instance, rule))
    chosen = choose_model(problem, model)
    if chosen == "transport":
        from kipopt.formulations.tasks.rack.transport import solve_transport
        return problem, solve_transport(problem, deadline, threads)
    if chosen == "relaxed":
        return problem, _relaxed_then_priced(problem, deadline, threads)
    if chosen == "balance":
        from kipopt.formulations.tasks.rack.balance_priced import solve_balance_priced
        return problem, solve_balance_priced(problem, deadline, threads)
    if chosen == "network":
        from kipopt.formulations.tasks.rack.balance import solve_balance_grouped
        return problem, solve_balance_grouped(problem, deadline, threads)
    if chosen == "pulp":
        from kipopt.formulations.tasks.rack.pulp_models import solve_active_pulp
        return problem, solve_active_pulp(problem, deadline.limit(), threads)
    return problem, solve_rack_grouped(problem, deadline.limit(), threads)


def _relaxed_then_priced(problem: ActiveProblem, deadline: Deadline, threads: int | None) -> ActiveSolution:
    """The relaxed network's answer when its read-back meets its bound; else the priced per-client network's,
    with the relaxed optimum as a bound (a lower bound on the rule's optimum, so the better of the two)."""
    from kipopt.formulations.tasks.rack.balance_priced import solve_balance_priced
    from kipopt.formulations.tasks.rack.balance_relaxed import solve_balance_relaxed
    relaxed = solve_balance_relaxed(problem, deadline, threads)
    if relaxed.status == "optimal":
        return relaxed
    sol = solve_balance_priced(problem, deadline, threads)
    info = {**sol.info, "relaxed_info": relaxed.info, "relaxed_fallback": True}
    bound = max((b for b in (sol.bound, relaxed.bound) if b is not None), default=None)
    status = sol.status
    if sol.objective is not None and bound is not None and sol.objective <= bound + 1e-6:
        status = "optimal"
    return ActiveSolution(sol.placement, status, sol.objective, bound, info)


def placement_assignment(instance: TasksInstance, problem: ActiveProblem,
                         placement: np.ndarray) -> dict[str, TaskRoles]:
    """Assignment with actives from ``placement``; standbys as in the instance, minus new actives."""
    order = np.argsort(placement, kind="stable")  # by client, TaskId order inside each
    ordered = list(map(problem.tasks.__getitem__, order.tolist()))
    bounds = np.searchsorted(placement[order], np.arange(len(problem.clients) + 1)).tolist()
    out = {}
    for j, cid in enumerate(problem.clients):
        active = tuple(ordered[bounds[j]:bounds[j + 1]])
        standby = instance.clients[cid].standby
        if standby and not set(active).isdisjoint(standby):
            mine = set(active)
            standby = tuple(t for t in standby if t not in mine)
        out[cid] = TaskRoles(active, standby, ())
    return out


_STATUS = {"optimal": Status.OPTIMAL, "feasible": Status.FEASIBLE, "infeasible": Status.INFEASIBLE}


def _active_result(instance: TasksInstance, rule: str, options: SolveOptions, model: str = "auto") -> MethodResult:
    deadline = options.deadline()
    problem, sol = solve_active(instance, rule, model, threads=options.threads, deadline=deadline)
    if sol.placement is None and sol.status == "time_limit":
        start = current_assignment(instance)
        if not RULE_VIOLATIONS[rule](instance, start):
            return MethodResult(start, Status.FEASIBLE, active_objective(instance, start), max(sol.bound or 0, 0),
                                message="time limit: HiGHS found no solution, returning the starting assignment",
                                info=sol.info)
        # the start breaks the bounds: an assignment built from one count matrix that meets them
        from kipopt.formulations.tasks.rack.balance_priced import feasible_placement
        placement = feasible_placement(problem)
        message = "time limit: HiGHS found no solution and the starting assignment breaks the rule, " \
                  "returning an assignment built to meet the rule's bounds"
        return MethodResult(placement_assignment(instance, problem, placement), Status.FEASIBLE,
                            float(problem.cost(placement)), max(sol.bound or 0, 0), message=message, info=sol.info)
    if sol.placement is None:
        return MethodResult(current_assignment(instance), Status.ERROR,
                            message=f"HiGHS ended with status {sol.status}", info=sol.info)
    assignment = placement_assignment(instance, problem, sol.placement)
    return MethodResult(assignment, _STATUS.get(sol.status, Status.FEASIBLE), float(sol.objective),
                        sol.bound, info=sol.info)


def active_start(rule: str):
    """The start a guarded active method answers when its model cannot finish
    (:mod:`kipopt.formulations.tasks.guard`): the current assignment when it meets ``rule``, else an
    assignment built to meet the rule's counts and bounds."""
    def start(instance: TasksInstance) -> dict[str, TaskRoles]:
        bounds = active_bounds(instance, rule)
        if bounds == "none":  # only the per-client counts, which the current assignment has
            return current_assignment(instance)
        problem = active_problem(instance, bounds, costs=False)  # counts and bounds only: no traffic to read
        counts = np.zeros_like(problem.upper)
        np.add.at(counts, (problem.owner, problem.group), 1)
        if np.all(counts >= problem.lower) and np.all(counts <= problem.upper):
            return current_assignment(instance)
        from kipopt.formulations.tasks.rack.balance_priced import feasible_placement
        return named(placement_assignment(instance, problem, feasible_placement(problem)),
                     "an assignment built to meet the rule's bounds (the starting assignment breaks them)")
    return start


def run_rack_active(instance: TasksInstance, options: SolveOptions) -> MethodResult:
    """``exact.rack_active``: the KIP-925 active problem with the configured strategy, solved exactly."""
    return _active_result(instance, "rack_active", options)


def run_balanced_subtopology(instance: TasksInstance, options: SolveOptions) -> MethodResult:
    """``exact.balanced_subtopology``: active cost with floor/ceil fair shares per sub-topology."""
    return _active_result(instance, "balanced_subtopology", options)


def run_rack_standby(instance: TasksInstance, options: SolveOptions, model: str = "grouped") -> MethodResult:
    """``exact.rack_standby``: standbys at minimum KIP-925 standby cost, no task losing tag distinctness.

    ``model`` is ``grouped`` (task classes × client groups by rack and tag
    profile), ``tasks`` (a column per task and client group) or ``clients``
    (a column per task and client); the last two are cross-checks.
    """
    deadline = options.deadline()
    if model == "grouped":
        sol = place_standbys(instance, threads=options.threads, deadline=deadline)
    elif model == "tasks":
        sol = place_standbys_by_task(instance, threads=options.threads, deadline=deadline)
    else:
        sol = client_level_standbys(instance, threads=options.threads, deadline=deadline)
    start = current_assignment(instance)
    if sol.standby is None:
        if sol.status == "time_limit":  # the starting assignment always meets the rule
            return MethodResult(start, Status.FEASIBLE, standby_objective(instance, start), max(sol.bound or 0, 0),
                                message="time limit: HiGHS found no solution, returning the starting assignment",
                                info=sol.info)
        # the starting assignment is feasible, so any other status is a solver failure
        return MethodResult(start, Status.ERROR, message=f"rack_standby: HiGHS ended with status {sol.status}",
                            info=sol.info)
    tasks = instance.task_ids
    assignment = {cid: TaskRoles(instance.clients[cid].active, tuple(tasks[t] for t in sorted(s)), ())
                  for cid, s in zip(instance.client_ids, sol.standby)}
    # the placement's own cost: a time-limited incumbent read back may keep a copy it priced as moved
    return MethodResult(assignment, _STATUS.get(sol.status, Status.FEASIBLE), standby_objective(instance, assignment),
                        sol.bound, info=sol.info)


RULE_VIOLATIONS = {"rack_active": rack_active_violations, "balanced_subtopology": balanced_violations,
                   "rack_standby": rack_standby_violations}

RULES = [
    Rule("rack_active", "tasks", "exact.rack_active", active_objective, rack_active_violations,
         "KIP-925 active cost (traffic + non-overlap) with per-client counts fixed; "
         "Kafka's ceil caps per sub-topology under balance_subtopology"),
    Rule("rack_standby", "tasks", "exact.rack_standby", standby_objective, rack_standby_violations,
         "KIP-925 standby cost with per-client and per-task standby counts fixed, "
         "no standby on an active client; with tags configured no stateful task's hosts carry fewer "
         "distinct tag pairs than at the start (Kafka's move predicate)"),
    Rule("balanced_subtopology", "tasks", "exact.balanced_subtopology", active_objective, balanced_violations,
         "KIP-925 active cost with per-client counts fixed and every (client, sub-topology) count "
         "between floor and ceil of its exact fair share"),
]

METHODS = [
    Method("exact.rack_active", "tasks", "rack_active",
           guarded(run_rack_active, active_start("rack_active"), active_objective),
           "RackAwareTaskAssignor.optimizeActiveTasks' problem (same counts, strategy, costs) as an LP",
           requires=unique_owners_reason),
    Method("exact.rack_standby", "tasks", "rack_standby",
           guarded(run_rack_standby, current_assignment, standby_objective),
           "standby placement at minimum KIP-925 cost, counts fixed, tag distinctness kept (LP, ILP if fractional)",
           requires=unique_owners_reason),
    Method("exact.balanced_subtopology", "tasks", "balanced_subtopology",
           guarded(run_balanced_subtopology, active_start("balanced_subtopology"), active_objective),
           "active placement with floor/ceil fair shares per sub-topology (LP)", requires=unique_owners_reason),
]
