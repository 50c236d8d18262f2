"""Port of the rack-aware optimisers of Kafka Streams' KIP-924 ``TaskAssignmentUtils``.

``org.apache.kafka.streams.processor.assignment.TaskAssignmentUtils`` offers
custom task assignors ``optimizeRackAwareActiveTasks`` and
``optimizeRackAwareStandbyTasks``. They reuse the KIP-925 graph constructors
and cycle-canceling solver (:mod:`kipopt.solvers.tasks.rack_graphs`,
:mod:`kipopt.solvers.tasks.graph`) but differ from the legacy
``RackAwareTaskAssignor`` path (:mod:`kipopt.solvers.tasks.rack_aware`):

* **Skip rules** (``canPerformRackAwareOptimization``): nothing happens when
  the strategy is ``none``, when the *configured* traffic or non-overlap cost
  is unset (a cost override passed by the caller does not lift this: Kafka
  checks the configuration, and uses the override only as the value), when a
  client has no rack, or when a partition of *any* task (all its partitions
  for actives, its changelogs for standbys) has no replica rack.
* **Active cost** counts all of a task's partitions (inputs and changelogs).
* **Graph constructor** follows the strategy for standbys too
  (``balance_subtopology`` is possible); its subtopology groups are those of
  the tasks being optimised only.
* **Movable standbys**: the move predicate is called with the *source*
  client as both source and destination (Kafka reads
  ``kafkaStreamsStates.get(source.processId())`` twice), so the tag check
  always passes: the two tag sets it compares are the same set.

Clients are iterated in ``kafkaStreamsStates().keySet()`` order; with
``ProcessId`` = ``UUID(0, rank)`` every client of the ``HashMap`` sits in its own
bucket, so that is the sorted client order.

>>> from kipopt.instance import from_dict
>>> x = from_dict({"format": 1, "family": "tasks",
...     "topics": {"in": {"racks": [["r2"], ["r1"]]}},
...     "tasks": {"0_0": {"inputs": ["in-0"]}, "0_1": {"inputs": ["in-1"]}},
...     "clients": {"a": {"rack": "r1"}, "b": {"rack": "r2"}},
...     "config": {"rack_aware_assignment_strategy": "min_traffic",
...                "rack_aware_assignment_traffic_cost": 10, "rack_aware_assignment_non_overlap_cost": 1}})
>>> states = ClientStates(("a", "b"), {"a": {"0_0"}, "b": {"0_1"}}, {"a": set(), "b": set()})
>>> optimize_rack_aware_active_tasks(x, RackAwareOptimizationParams(), states).optimized, states.active
(True, {'a': {'0_1'}, 'b': {'0_0'}})
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from kipopt.instance import TasksInstance, parse_task_id

from kipopt.solvers.tasks.rack_aware import tag_aware_move_predicate
from kipopt.solvers.tasks.rack_graphs import (BalanceSubtopologyGraphConstructor, ClientStates, CostFunction,
                                MinTrafficGraphConstructor)

#: ``STANDBY_OPTIMIZER_MAX_ITERATION``: rounds of pairwise standby swaps.
STANDBY_OPTIMIZER_MAX_ITERATION = 4

#: ``MoveStandbyTaskPredicate.canMoveStandbyTask(source, destination, task, assignments)``
MoveStandbyTaskPredicate = Callable[[str, str, str, ClientStates], bool]


@dataclass(frozen=True)
class RackAwareOptimizationParams:
    """``RackAwareOptimizationParams``: which tasks to optimise and cost overrides (None = not given).

    ``tasks_to_optimize`` None means "every task the assignment holds in the role".
    """

    tasks_to_optimize: tuple[str, ...] | None = None
    traffic_cost_override: int | None = None
    non_overlap_cost_override: int | None = None

    def for_stateful_tasks(self, instance: TasksInstance) -> RackAwareOptimizationParams:
        return self._for(tuple(t for t in instance.task_ids if instance.tasks[t].stateful))

    def for_stateless_tasks(self, instance: TasksInstance) -> RackAwareOptimizationParams:
        return self._for(tuple(t for t in instance.task_ids if not instance.tasks[t].stateful))

    def _for(self, tasks: tuple[str, ...]) -> RackAwareOptimizationParams:
        return RackAwareOptimizationParams(tasks, self.traffic_cost_override, self.non_overlap_cost_override)


@dataclass(frozen=True)
class OptimizationOutcome:
    """What one optimiser call did: whether it ran (else why not), its costs and moves."""

    optimized: bool
    reason: str | None = None
    cost_before: int | None = None
    cost_after: int | None = None
    moved: int = 0
    rounds: int = 0
    cycles_canceled: int = 0


def task_partitions(instance: TasksInstance, task: str, standby: bool) -> tuple[str, ...]:
    """``TaskInfo.topicPartitions()`` (inputs, plus changelogs of a stateful task); only changelogs for standbys.

    A partition that is both an input and a changelog is one ``TaskTopicPartition``.
    """
    t = instance.tasks[task]
    changelogs = t.changelogs if t.stateful else ()
    if standby:
        return changelogs
    return t.inputs + tuple(p for p in changelogs if p not in t.inputs)


def skip_reason(instance: TasksInstance, standby: bool) -> str | None:
    """Why ``canPerformRackAwareOptimization`` is false, or None when the optimiser runs."""
    config = instance.config
    if config.rack_aware_assignment_strategy == "none":
        return "rack.aware.assignment.strategy is none"
    if config.rack_aware_assignment_traffic_cost is None:
        return "rack.aware.assignment.traffic_cost is not configured"
    if config.rack_aware_assignment_non_overlap_cost is None:
        return "rack.aware.assignment.non_overlap_cost is not configured"
    for cid in instance.client_ids:
        if instance.clients[cid].rack is None:
            return f"client {cid} has no rack"
    racks = instance.partition_racks
    for tid in instance.task_ids:
        for p in task_partitions(instance, tid, standby):
            if not racks[p]:
                return f"partition {p} of task {tid} has no replica racks"
    return None


def _tasks_to_optimize(params: RackAwareOptimizationParams, states: ClientStates, role: str) -> tuple[str, ...]:
    if params.tasks_to_optimize is not None:
        return params.tasks_to_optimize
    return tuple(sorted({t for c in states.order for t in states.tasks(role, c)}, key=parse_task_id))


def _costs(instance: TasksInstance, params: RackAwareOptimizationParams) -> tuple[int, int]:
    config = instance.config
    traffic = params.traffic_cost_override
    non_overlap = params.non_overlap_cost_override
    return (config.rack_aware_assignment_traffic_cost if traffic is None else traffic,
            config.rack_aware_assignment_non_overlap_cost if non_overlap is None else non_overlap)


def cost_function(instance: TasksInstance, standby: bool, traffic_cost: int, non_overlap_cost: int) -> CostFunction:
    """The cost lambda of ``buildTaskGraph``: traffic per partition without a replica on the client's rack."""
    racks = instance.partition_racks
    cross: dict[tuple[str, str], int] = {}

    def cost(task: str, client: str, in_current: bool, _traffic: int, _non_overlap: int, _standby: bool) -> int:
        rack = instance.clients[client].rack
        n = cross.get((task, rack))
        if n is None:
            n = cross[(task, rack)] = sum(1 for p in task_partitions(instance, task, standby) if rack not in racks[p])
        return (0 if in_current else non_overlap_cost) + n * traffic_cost

    return cost


def total_assignment_cost(tasks: Sequence[str], states: ClientStates, role: str, cost: CostFunction) -> int:
    """``computeTotalAssignmentCost``: the cost of the current placements (only current edges carry flow)."""
    wanted = set(tasks)
    return sum(cost(t, c, True, 0, 0, role == "standby")
               for c in states.order for t in states.tasks(role, c) if t in wanted)


def graph_constructor(strategy: str,
                      tasks: Sequence[str]) -> MinTrafficGraphConstructor | BalanceSubtopologyGraphConstructor:
    """``RackAwareGraphConstructorFactory.create(strategy, tasks)``: groups are the subtopologies of ``tasks``."""
    if strategy == "min_traffic":
        return MinTrafficGraphConstructor()
    if strategy == "balance_subtopology":
        groups: dict[int, list[str]] = {}
        for t in tasks:
            groups.setdefault(parse_task_id(t)[0], []).append(t)
        return BalanceSubtopologyGraphConstructor(
            tuple(tuple(sorted(groups[g], key=parse_task_id)) for g in sorted(groups)))
    raise ValueError("Rack aware assignment is disabled")


def optimize_rack_aware_active_tasks(instance: TasksInstance, params: RackAwareOptimizationParams,
                                     states: ClientStates) -> OptimizationOutcome:
    """``optimizeRackAwareActiveTasks``: min-cost flow over the tasks, per-client counts kept; ``states`` changes."""
    tasks = _tasks_to_optimize(params, states, "active")
    if not tasks:
        return OptimizationOutcome(False, "no active tasks to optimize")
    reason = skip_reason(instance, standby=False)
    if reason is not None:
        return OptimizationOutcome(False, reason)
    traffic, non_overlap = _costs(instance, params)
    cost = cost_function(instance, False, traffic, non_overlap)
    before = {c: set(states.active[c]) for c in states.order}
    cost_before = total_assignment_cost(tasks, states, "active", cost)
    constructor = graph_constructor(instance.config.rack_aware_assignment_strategy, tasks)
    tg = constructor.construct_task_graph(states.order, tasks, states, "active", cost, traffic, non_overlap,
                                          False, False)
    tg.graph.solve_min_cost_flow()
    constructor.assign_task_from_min_cost_flow(tg, states.order, tasks, states, "active")
    moved = sum(len(states.active[c] - before[c]) for c in states.order)
    return OptimizationOutcome(True, None, cost_before, tg.graph.total_cost(), moved,
                               cycles_canceled=tg.graph.cycles_canceled)


def standby_move_predicate(instance: TasksInstance) -> MoveStandbyTaskPredicate:
    """``getStandbyTaskMovePredicate``: with tags configured, the destination must not lose tag diversity.

    S = (key, value) tags of every other client holding the task plus the
    source's, D the same with the destination's; allowed when |D| >= |S|.
    """
    if not instance.config.rack_aware_assignment_tags:
        return lambda source, destination, task, states: True
    return tag_aware_move_predicate(instance)  # the same S/D test as the legacy assignor's


def _movable(source: str, destination: str, states: ClientStates, can_move: MoveStandbyTaskPredicate) -> list[str]:
    # Kafka passes the source's state as the destination too (see the module docstring).
    return sorted((t for t in states.standby[source]
                   if not states.holds(destination, t) and can_move(source, source, t, states)),
                  key=parse_task_id)


def optimize_rack_aware_standby_tasks(instance: TasksInstance, params: RackAwareOptimizationParams,
                                      states: ClientStates) -> OptimizationOutcome:
    """``optimizeRackAwareStandbyTasks``: up to 4 rounds of pairwise swaps between clients on different racks."""
    tasks = _tasks_to_optimize(params, states, "standby")
    if not tasks:
        return OptimizationOutcome(False, "no standby tasks to optimize")
    reason = skip_reason(instance, standby=True)
    if reason is not None:
        return OptimizationOutcome(False, reason)
    traffic, non_overlap = _costs(instance, params)
    cost = cost_function(instance, True, traffic, non_overlap)
    before = {c: set(states.standby[c]) for c in states.order}
    cost_before = total_assignment_cost(tasks, states, "standby", cost)
    can_move = standby_move_predicate(instance)
    constructor = graph_constructor(instance.config.rack_aware_assignment_strategy, tasks)
    clients = instance.clients
    order = states.order
    moved, rounds, cycles = True, 0, 0
    while moved and rounds < STANDBY_OPTIMIZER_MAX_ITERATION:
        moved = False
        rounds += 1
        for i, first in enumerate(order):
            for second in order[i + 1:]:
                if clients[first].rack == clients[second].rack:
                    continue
                movable_first = _movable(first, second, states, can_move)
                movable_second = _movable(second, first, states, can_move)
                if not movable_first or not movable_second:
                    continue
                task_list = sorted(movable_first + movable_second, key=parse_task_id)
                pair = (first, second)
                tg = constructor.construct_task_graph(pair, task_list, states, "standby", cost, traffic,
                                                      non_overlap, True, True)
                tg.graph.solve_min_cost_flow()
                cycles += tg.graph.cycles_canceled
                moved |= constructor.assign_task_from_min_cost_flow(tg, pair, task_list, states, "standby")
    cost_after = total_assignment_cost(tasks, states, "standby", cost)
    n_moved = sum(len(states.standby[c] - before[c]) for c in order)
    return OptimizationOutcome(True, None, cost_before, cost_after, n_moved, rounds, cycles)
