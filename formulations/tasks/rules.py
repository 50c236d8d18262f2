r"""KIP-441 and KIP-708 rules for Kafka Streams tasks: ``lag_active`` and ``tag_standby``.

Both objectives and all hard constraints are recomputed from an assignment
alone, with the evaluator's own definitions (:mod:`kipopt.evaluation.tasks`:
ranks, most caught-up clients, tag keys, tag shortfall), so a rule's value
and the metrics of ``kipopt evaluate`` always agree. Each rule is
lexicographic; its single objective is the standard integer encoding
``Σ_i level_i · W^(L-i)`` with ``W = |T| + 1`` larger than any lower level
(each lower level is an integer in ``[0, |T|]`` on a feasible assignment), so
comparing objectives compares the level vectors lexicographically. Both are
minimised (``sense = "min"``): every level is a shortfall, an excess or a
count whose ideal is 0 or a fixed floor.

Notation: ``T`` all tasks, ``T_s ⊆ T`` the stateful ones, ``G`` the
sub-topologies (``T_g`` the tasks of g), ``C`` the clients, ``k_c`` the
capacity (stream threads) of client c. In an assignment, ``a(t)`` is the
client listing t as active, ``S(t)`` the clients listing t as standby,
``n_c`` the number of actives and ``s_c`` the number of standbys of c,
``n_{c,g}`` the actives of sub-topology g on c. Warm-ups are neither
standbys nor hosts in either rule (KIP-441: they do not count towards
``num_standby_replicas``).

``lag_active`` (KIP-441: actives on the most caught-up clients, balanced)
    Hard: every task, stateful **and stateless**, active on exactly one
    client (``unassigned_active``, ``duplicate_active``, the evaluator's
    names). Nothing is required of standbys or warm-ups.

    With ``lag_c(t)`` the client's lag (the task's ``end_offset`` when it
    holds no state) and ``rank_c(t) = 0`` if ``lag_c(t) <=
    acceptable_recovery_lag`` else ``lag_c(t)`` (caught-up as Kafka defines
    it; KIP-441's rank), the most caught-up clients of t are
    ``MC(t) = argmin_c rank_c(t)``. Levels, in lexicographic order:

    1. ``N = |{t ∈ T_s : a(t) ∉ MC(t)}|`` — stateful actives not on a most
       caught-up client (the evaluator's ``actives_not_caught_up``).
    2. ``B = max(0, I − β)`` with ``β = 1`` (KIP-441's balance factor) and
       ``I = max_c ⌈n_c / k_c⌉ − min_c ⌊n_c / k_c⌋``: the thread-level
       imbalance, i.e. KIP-441's instance balance counted per stream thread
       (a client's actives spread evenly over its threads); "within the
       balance factor" means ``B = 0``.
    3. ``S = Σ_g (max_c n_{c,g} − min_c n_{c,g})`` — sub-topology spread
       (the sum of the evaluator's ``subtopology_spread``).
    4. ``M = |{t ∈ T : a(t) ∉ A⁰(t)}|`` — movements against the instance's
       current owners ``A⁰(t)`` (its ``active`` lists; a task no one owns
       counts as moved).

    objective ``= ((N·W + B)·W + S)·W + M``, ``W = |T| + 1``.

    Why these are objectives and not constraints: Kafka imposes no room
    limit on a client, so every stateful task can always sit on a most
    caught-up client and ``min N = 0``; Kafka's ``HighAvailabilityTaskAssignor``
    reaches it (its ``TaskMovement`` step moves every active whose client
    lags more than the best client, to a caught-up client or to the head
    of the lag ranking, and no later step moves that active again), but it
    does so *after* balancing, and moving an active without a standby to
    swap with changes two loads, so Kafka's final ``B`` can be anything
    (KIP-441's own scale-in story ends unbalanced). The KIP-924
    ``StickyTaskAssignor`` ignores lags, so it may have ``N > 0``. Both
    ports therefore always meet the hard constraints; only their objective
    may be worse. ``min B = 0`` is always attainable ignoring level 1 (give
    every thread ``⌊|T|/K⌋`` or ``⌈|T|/K⌉`` tasks, ``K = Σ k_c``).

``tag_standby`` (KIP-708: standbys spread over tag values, on the current actives)
    Hard: every client's actives are exactly the instance's
    (``active_changed``); every stateful task t has exactly
    ``σ = min(num_standby_replicas, |C| − 1)`` standby clients, none of them
    its active client (``standby_count``; colocation, duplicates and
    standbys of stateless tasks are the evaluator's
    ``active_standby_colocated``, ``duplicate_in_list``,
    ``standby_of_stateless``). The instance must have each task active on
    exactly one client, or no assignment keeping its actives is feasible.

    With tag keys ``K`` (the configured ``rack_aware_assignment_tags``, else
    every key some client carries), ``V_k`` the values of key k over all
    clients and hosts ``H(t) = {a(t)} ∪ S(t)``, levels in lexicographic
    order:

    1. ``D = Σ_{t} Σ_{k ∈ K} (min(|H(t)|, |V_k|) − |{tag_k(c) : c ∈ H(t)}|)``
       — the tag shortfall against the ideal (the evaluator's
       ``tag_shortfall``; a client without key k adds no value of k).
       Minimising D maximises the distinct tag values over each task's
       hosts, summed over tasks and keys; with the actives fixed and
       ``|H(t)| = 1 + σ`` the ideal term is a constant.
    2. ``J = max_c ⌈s_c / k_c⌉ − min_c ⌊s_c / k_c⌋`` — standby load
       imbalance per stream thread.

    objective ``= D·W + J``, ``W = |T| + 1``.

    Kafka's ``ClientTagAwareStandbyTaskAssignor`` meets the hard constraints:
    it keeps the actives, never polls a client already holding a copy, and
    its pending pass fills each task up to ``num_standby_replicas`` from any
    client without a copy, so every task ends with exactly σ standbys
    (Kafka runs a standby assignor only when ``num_standby_replicas > 0``;
    with 0 its do-while loop would still place one standby, which this rule
    rejects, so a port must not call it then).

>>> from kipopt.instance import from_dict
>>> from kipopt.solution import TaskRoles
>>> x = from_dict({"format": 1, "family": "tasks", "topics": {"in": {"racks": [[]]}, "cl": {"racks": [[]]}},
...     "tasks": {"0_0": {"inputs": ["in-0"], "changelogs": ["cl-0"], "end_offset": 50000}},
...     "clients": {"p1": {"tags": {"zone": "a"}, "active": ["0_0"], "lags": {"0_0": 20000}},
...                 "p2": {"tags": {"zone": "b"}, "lags": {"0_0": 0}},
...                 "p3": {"tags": {"zone": "a"}}},
...     "config": {"num_standby_replicas": 1}})
>>> lag_active_levels(x, {"p1": TaskRoles(("0_0",)), "p2": TaskRoles(), "p3": TaskRoles()})
Levels(not_caught_up=1, balance_excess=0, subtopology_spread=1, movements=0)
>>> kept = {"p1": TaskRoles(("0_0",), ("0_0",)), "p2": TaskRoles(), "p3": TaskRoles()}
>>> [v.rule for v in tag_standby_violations(x, kept)]
['standby_count']
>>> tag_standby_levels(x, {"p1": TaskRoles(("0_0",)), "p2": TaskRoles((), ("0_0",)), "p3": TaskRoles()})
TagLevels(tag_shortfall=0, standby_imbalance=1)
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, astuple, dataclass
from typing import Iterable, Mapping

from kipopt.evaluation.tasks import _caught_up, _subtopology_spread, _tags
from kipopt.instance import TasksInstance
from kipopt.methods import Rule, Violation
from kipopt.solution import TaskRoles

BALANCE_FACTOR = 1
"""KIP-441's ``balance_factor`` (its default; Kafka has no setting for it)."""

EXAMPLES = 5


@dataclass(frozen=True)
class Levels:
    """The four ``lag_active`` levels, most important first."""

    not_caught_up: int
    balance_excess: int
    subtopology_spread: int
    movements: int


@dataclass(frozen=True)
class TagLevels:
    """The two ``tag_standby`` levels, most important first."""

    tag_shortfall: int
    standby_imbalance: int


def weight(instance: TasksInstance) -> int:
    """``W = |T| + 1``: larger than any lower level of either rule."""
    return len(instance.tasks) + 1


def lexicographic(instance: TasksInstance, levels: Iterable[float]) -> float:
    """``Σ_i level_i · W^(L-1-i)``, levels most important first.

    >>> from kipopt.datasets import generate
    >>> x = generate("tasks", 1, tasks=9)    # W = 10
    >>> lexicographic(x, (1, 2, 3, 4))
    1234.0
    """
    w, total = weight(instance), 0
    for level in levels:
        total = total * w + level
    return float(total)


def thread_imbalance(counts: Mapping[str, int], capacity: Mapping[str, int]) -> int:
    """``max_c ⌈n_c/k_c⌉ − min_c ⌊n_c/k_c⌋`` over the clients of ``capacity``.

    >>> thread_imbalance({"a": 3, "b": 1}, {"a": 2, "b": 1})   # ⌈3/2⌉ - ⌊1/1⌋
    1
    """
    hi = max(-(-counts.get(c, 0) // k) for c, k in capacity.items())
    lo = min(counts.get(c, 0) // k for c, k in capacity.items())
    return hi - lo


def _capacities(instance: TasksInstance) -> dict[str, int]:
    return {c: instance.clients[c].capacity for c in instance.client_ids}


def _owners(assignment: Mapping[str, TaskRoles]) -> dict[str, set[str]]:
    owners: dict[str, set[str]] = defaultdict(set)
    for cid, roles in assignment.items():
        for t in roles.active:
            owners[t].add(cid)
    return owners


def _violation(rule: str, found: list[str]) -> list[Violation]:
    return [Violation(rule, len(found), tuple(found[:EXAMPLES]))] if found else []


# --------------------------------------------------------------------------- lag_active


def lag_active_levels(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> Levels:
    """The levels ``(N, B, S, M)`` of ``lag_active`` (module docstring)."""
    counts = {cid: len(set(roles.active)) for cid, roles in assignment.items()}
    imbalance = thread_imbalance(counts, _capacities(instance))
    spread = sum(_subtopology_spread(instance, assignment)["subtopology_spread"].values())
    before = {cid: set(c.active) for cid, c in instance.clients.items()}
    moved = 0
    for cid, roles in assignment.items():
        moved += sum(1 for t in set(roles.active) if t not in before[cid])
    missing = len(set(instance.tasks) - set(_owners(assignment)))
    return Levels(_caught_up(instance, assignment)["actives_not_caught_up"],
                  max(0, imbalance - BALANCE_FACTOR), int(spread), moved + missing)


def lag_active_objective(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> float:
    return lexicographic(instance, astuple(lag_active_levels(instance, assignment)))


def lag_active_violations(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> list[Violation]:
    """Every task, stateful or not, active on exactly one client (the evaluator's rule names)."""
    owners = _owners(assignment)
    missing = [f"{t} has no active client" for t in instance.task_ids if not owners.get(t)]
    twice = [f"{t} is active on {', '.join(sorted(owners[t]))}" for t in instance.task_ids
             if len(owners.get(t, ())) > 1]
    return _violation("unassigned_active", missing) + _violation("duplicate_active", twice)


# --------------------------------------------------------------------------- tag_standby


def standby_target(instance: TasksInstance) -> int:
    """``σ = min(num_standby_replicas, |C| − 1)``: the standbys every stateful task gets."""
    return min(instance.config.num_standby_replicas, len(instance.clients) - 1)


def tag_standby_levels(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> TagLevels:
    """The levels ``(D, J)`` of ``tag_standby`` (module docstring)."""
    counts = {cid: len(set(roles.standby)) for cid, roles in assignment.items()}
    return TagLevels(int(_tags(instance, assignment)["tag_shortfall"]),
                     thread_imbalance(counts, _capacities(instance)))


def tag_standby_objective(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> float:
    return lexicographic(instance, astuple(tag_standby_levels(instance, assignment)))


def tag_standby_violations(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> list[Violation]:
    """Actives changed; a stateful task without exactly σ standby clients besides its active one."""
    moved = [f"{cid}: active tasks differ from the instance's" for cid in instance.client_ids
             if set(assignment.get(cid, TaskRoles()).active) != set(instance.clients[cid].active)]
    sigma = standby_target(instance)
    holders: dict[str, set[str]] = defaultdict(set)
    for cid, roles in assignment.items():
        mine = set(roles.active)
        for t in roles.standby:
            if t not in mine:
                holders[t].add(cid)
    wrong = [f"{t}: {len(holders[t])} standby clients, the rule wants {sigma}"
             for t in instance.task_ids if instance.tasks[t].stateful and len(holders[t]) != sigma]
    return _violation("active_changed", moved) + _violation("standby_count", wrong)


def lag_active_criteria(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> dict[str, float]:
    """The levels by name, most important first (the bench reports each one's own gap)."""
    return asdict(lag_active_levels(instance, assignment))


def tag_standby_criteria(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> dict[str, float]:
    return asdict(tag_standby_levels(instance, assignment))


RULES = [
    Rule("lag_active", "tasks", "exact.lag_active", lag_active_objective, lag_active_violations,
         "KIP-441: every task active once; lexicographically (1) stateful actives not on a most caught-up "
         "client, (2) thread-level load imbalance beyond the balance factor 1, (3) sub-topology spread, "
         "(4) movements against the current owners; objective ((N·W+B)·W+S)·W+M, W = |T|+1",
         criteria=lag_active_criteria),
    Rule("tag_standby", "tasks", "exact.tag_standby", tag_standby_objective, tag_standby_violations,
         "KIP-708 on the current actives: min(num_standby_replicas, clients-1) standbys per stateful task, "
         "never on its active's client; lexicographically (1) tag shortfall against the ideal distinct values, "
         "(2) standby imbalance per thread; objective D·W+J, W = |T|+1",
         criteria=tag_standby_criteria),
]
