"""Port of Kafka Streams' ``RackAwareTaskAssignor`` (KIP-925) and the methods built on it.

``kafka.rack_active`` runs ``optimizeActiveTasks`` over all tasks of an
instance at once, from the instance's ``active`` lists; ``kafka.rack_standby``
runs ``optimizeStandbyTasks`` (pairwise local search) from its ``active`` and
``standby`` lists with the high-availability assignor's movement predicate.
Both keep Kafka's guard ``canEnableRackAwareAssignor``: when Kafka would not
optimise (strategy ``none``, a rack-less client, a partition without replica
racks) the input comes back unchanged with the reason. Kafka checks changelog
racks only when standbys are configured; ``kafka.rack_standby`` always checks
them (Kafka calls ``optimizeStandbyTasks`` only in that case), and so does
``kafka.rack_active`` when ``rack_aware_assignment_cost_partitions`` is
``"all"`` (changelogs then enter the active cost).

The instance maps onto Kafka's inputs as the digest (§8) says: clients in
``instance.client_ids`` order, tasks in ``instance.task_ids`` order, one
subtopology group per subtopology. Costs come from
:func:`kipopt.costs.cross_rack_partitions`.

>>> from kipopt.instance import from_dict
>>> x = from_dict({"format": 1, "family": "tasks",
...     "topics": {"in": {"racks": [["r2"], ["r1"]]}},
...     "tasks": {"0_0": {"inputs": ["in-0"]}, "0_1": {"inputs": ["in-1"]}},
...     "clients": {"a": {"rack": "r1", "active": ["0_0"]}, "b": {"rack": "r2", "active": ["0_1"]}},
...     "config": {"rack_aware_assignment_strategy": "min_traffic"}})
>>> r = run_rack_active(x, SolveOptions())
>>> {c: roles.active for c, roles in r.assignment.items()}, r.objective
({'a': ('0_1',), 'b': ('0_0',)}, 2.0)
"""

from __future__ import annotations

from typing import Callable, Sequence

from kipopt.costs import cross_rack_partitions
from kipopt.errors import InstanceError
from kipopt.instance import TasksInstance, parse_task_id
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solution import Status, TaskRoles

from kipopt.solvers.tasks.rack_graphs import (BalanceSubtopologyGraphConstructor, ClientStates, MinTrafficGraphConstructor,
                                TaskGraph)

#: ``STANDBY_OPTIMIZER_MAX_ITERATION``: rounds of pairwise standby swaps.
STANDBY_OPTIMIZER_MAX_ITERATION = 4

#: ``MoveStandbyTaskPredicate.canMove(source, destination, task, clientStates)``
MovePredicate = Callable[[str, str, str, ClientStates], bool]


def _sorted_tasks(tasks) -> list[str]:
    return sorted(tasks, key=parse_task_id)


def always_movable(source: str, destination: str, task: str, states: ClientStates) -> bool:
    """The default standby assignor's movement predicate: every move is allowed."""
    return True


def tag_aware_move_predicate(instance: TasksInstance) -> MovePredicate:
    """``ClientTagAwareStandbyTaskAssignor.isAllowedTaskMovement`` (4-argument form).

    Let S be the (tag key, value) pairs of every *other* client holding the
    task in any role plus the source's, D the same with the destination
    instead of the source; the move is allowed when ``|D| >= |S|``. All tags
    of the clients count, not only the configured keys.
    """
    tags = {c: set(client.tags.items()) for c, client in instance.clients.items()}

    def can_move(source: str, destination: str, task: str, states: ClientStates) -> bool:
        if source == destination:
            return True  # S and D are built from the same clients (the KIP-924 helper's call), so they are equal
        with_source, with_destination = set(tags[source]), set(tags[destination])
        for c in states.order:
            if c != source and c != destination and states.holds(c, task):
                with_source |= tags[c]
                with_destination |= tags[c]
        return len(with_destination) >= len(with_source)

    return can_move


class RackAwareTaskAssignor:
    """Port of ``RackAwareTaskAssignor`` for one kipopt tasks instance."""

    def __init__(self, instance: TasksInstance) -> None:
        self.instance = instance
        self.strategy = instance.config.rack_aware_assignment_strategy
        self._cross: dict[tuple[str, str, bool], int] = {}

    # ------------------------------------------------------------------ guard

    def disabled_reason(self, check_changelogs: bool | None = None) -> str | None:
        """Why ``canEnableRackAwareAssignor`` is false, or None when it is true.

        Changelog racks are checked when standbys are configured (as Kafka
        does) or when ``check_changelogs`` asks for it.
        """
        x = self.instance
        if self.strategy == "none":
            return "rack.aware.assignment.strategy is none"
        for cid in x.client_ids:
            if x.clients[cid].rack is None:
                return f"client {cid} has no rack, so Kafka disables rack-aware assignment for every client"
        racks = x.partition_racks
        for tid in x.task_ids:
            for p in x.tasks[tid].inputs:
                if not racks[p]:
                    return f"input partition {p} of task {tid} has no replica racks"
        if check_changelogs is None:
            check_changelogs = x.config.num_standby_replicas > 0
        if check_changelogs:
            return self._changelog_reason()
        return None

    def _changelog_reason(self) -> str | None:
        # Kafka describes every changelog topic and needs racks on all of its partitions.
        x = self.instance
        topics = sorted({p.rpartition("-")[0] for t in x.task_ids for p in x.tasks[t].changelogs
                         if x.tasks[t].stateful or x.config.rack_aware_assignment_cost_partitions == "all"})
        for topic in topics:
            for number, racks in enumerate(x.topics[topic].racks):
                if not racks:
                    return f"changelog partition {topic}-{number} has no replica racks"
        return None

    # ------------------------------------------------------------------ costs

    def get_cost(self, task: str, client: str, in_current: bool, traffic_cost: int, non_overlap_cost: int,
                 is_standby: bool) -> int:
        """``getCost``: traffic x cross-rack partitions, plus non-overlap if the client does not hold it now."""
        key = (task, client, is_standby)
        cross = self._cross.get(key)
        if cross is None:
            role = "standby" if is_standby else "active"
            if not self.instance.cost_partitions(task, role):
                raise InstanceError(f"tasks.{task}", f"task {task} has no {role} cost partitions")
            cross = self._cross[key] = cross_rack_partitions(self.instance, task, self.instance.clients[client].rack,
                                                             role)
        return cross * traffic_cost + (0 if in_current else non_overlap_cost)

    def active_tasks_cost(self, tasks: Sequence[str], states: ClientStates, traffic_cost: int,
                          non_overlap_cost: int) -> int:
        """``activeTasksCost``: the cost of the current actives (pure traffic: every used edge is current)."""
        return self._tasks_cost(tasks, states, "active", traffic_cost, non_overlap_cost, False)

    def standby_tasks_cost(self, tasks: Sequence[str], states: ClientStates, traffic_cost: int,
                           non_overlap_cost: int) -> int:
        """``standByTasksCost``: the cost of the current standbys of ``tasks``."""
        return self._tasks_cost(tasks, states, "standby", traffic_cost, non_overlap_cost, True)

    def _tasks_cost(self, tasks: Sequence[str], states: ClientStates, role: str, traffic_cost: int,
                    non_overlap_cost: int, has_replica: bool) -> int:
        if not tasks:
            return 0
        tg = MinTrafficGraphConstructor().construct_task_graph(
            states.order, _sorted_tasks(tasks), states, role, self.get_cost, traffic_cost, non_overlap_cost,
            has_replica, role == "standby")
        return tg.graph.total_cost()

    # ------------------------------------------------------------------ optimisers

    def graph_constructor(self) -> MinTrafficGraphConstructor | BalanceSubtopologyGraphConstructor:
        """``RackAwareGraphConstructorFactory.create`` for the configured strategy."""
        if self.strategy == "min_traffic":
            return MinTrafficGraphConstructor()
        if self.strategy == "balance_subtopology":
            groups: dict[int, list[str]] = {}
            for tid in self.instance.task_ids:
                groups.setdefault(parse_task_id(tid)[0], []).append(tid)
            return BalanceSubtopologyGraphConstructor(tuple(tuple(groups[g]) for g in sorted(groups)))
        raise ValueError("Rack aware assignment is disabled")

    def optimize_active_tasks(self, tasks: Sequence[str], states: ClientStates, traffic_cost: int,
                              non_overlap_cost: int) -> tuple[int, TaskGraph | None]:
        """``optimizeActiveTasks``: min-cost flow over ``tasks``, per-client counts kept; returns (cost, graph)."""
        if not tasks:
            return 0, None
        task_list = _sorted_tasks(tasks)
        constructor = self.graph_constructor()
        tg = constructor.construct_task_graph(states.order, task_list, states, "active", self.get_cost,
                                              traffic_cost, non_overlap_cost, False, False)
        tg.graph.solve_min_cost_flow()
        cost = tg.graph.total_cost()
        constructor.assign_task_from_min_cost_flow(tg, states.order, task_list, states, "active")
        return cost, tg

    def optimize_standby_tasks(self, states: ClientStates, traffic_cost: int, non_overlap_cost: int,
                               can_move: MovePredicate) -> tuple[int, int]:
        """``optimizeStandbyTasks``: up to 4 rounds of pairwise swaps; returns (cost after, rounds run)."""
        order = states.order
        standbys = _sorted_tasks({t for c in order for t in states.standby[c]})
        constructor = MinTrafficGraphConstructor()
        moved, rounds = True, 0
        while moved and rounds < STANDBY_OPTIMIZER_MAX_ITERATION:
            moved = False
            rounds += 1
            for i, first in enumerate(order):
                for second in order[i + 1:]:
                    moved |= self._swap_standbys(first, second, states, constructor, traffic_cost,
                                                 non_overlap_cost, can_move)
        return self.standby_tasks_cost(standbys, states, traffic_cost, non_overlap_cost), rounds

    def _swap_standbys(self, first: str, second: str, states: ClientStates, constructor: MinTrafficGraphConstructor,
                       traffic_cost: int, non_overlap_cost: int, can_move: MovePredicate) -> bool:
        clients = self.instance.clients
        if clients[first].rack == clients[second].rack:
            return False  # cross-rack traffic cannot change between clients of one rack
        movable_first = self._movable(first, second, states, can_move)
        movable_second = self._movable(second, first, states, can_move)
        if not movable_first or not movable_second:
            return False  # only swaps keep both clients' loads
        task_list = _sorted_tasks(movable_first + movable_second)
        pair = (first, second)  # already in client order
        tg = constructor.construct_task_graph(pair, task_list, states, "standby", self.get_cost, traffic_cost,
                                              non_overlap_cost, True, True)
        tg.graph.solve_min_cost_flow()
        return constructor.assign_task_from_min_cost_flow(tg, pair, task_list, states, "standby")

    @staticmethod
    def _movable(source: str, destination: str, states: ClientStates, can_move: MovePredicate) -> list[str]:
        return _sorted_tasks(t for t in states.standby[source]
                             if not states.holds(destination, t) and can_move(source, destination, t, states))


# ---------------------------------------------------------------------- methods


def _require_single_owner(instance: TasksInstance) -> None:
    owners: dict[str, list[str]] = {t: [] for t in instance.task_ids}
    for cid in instance.client_ids:
        for t in instance.clients[cid].active:
            owners[t].append(cid)
            if len(owners[t]) > 1:
                raise InstanceError(f"clients.{cid}.active", f"task {t} is active on {' and '.join(owners[t])}; "
                                    "kafka.rack_active starts from a current assignment with one owner per task")
    for t, where in owners.items():
        if not where:
            raise InstanceError(f"tasks.{t}", f"task {t} is active on no client; "
                                "kafka.rack_active starts from a current assignment with one owner per task")


def _unchanged(instance: TasksInstance, reason: str) -> MethodResult:
    assignment = {c: TaskRoles(instance.clients[c].active, instance.clients[c].standby) for c in instance.client_ids}
    return MethodResult(assignment, Status.FEASIBLE, message=f"Kafka does not optimise: {reason}",
                        info={"rack_aware": False, "reason": reason})


def _states(instance: TasksInstance, with_standby: bool) -> ClientStates:
    order = instance.client_ids
    active = {c: set(instance.clients[c].active) for c in order}
    standby = {c: set(instance.clients[c].standby) if with_standby else set() for c in order}
    return ClientStates(order, active, standby)


def run_rack_active(instance: TasksInstance, options: SolveOptions) -> MethodResult:
    """``kafka.rack_active``: ``optimizeActiveTasks`` on all tasks from the instance's actives."""
    _require_single_owner(instance)
    assignor = RackAwareTaskAssignor(instance)
    reason = assignor.disabled_reason(
        check_changelogs=instance.config.num_standby_replicas > 0
        or instance.config.rack_aware_assignment_cost_partitions == "all")
    if reason is not None:
        return _unchanged(instance, reason)
    traffic, non_overlap = instance.config.traffic_cost, instance.config.non_overlap_cost
    states = _states(instance, with_standby=False)
    tasks = instance.task_ids
    before = assignor.active_tasks_cost(tasks, states, traffic, non_overlap)
    cost, tg = assignor.optimize_active_tasks(tasks, states, traffic, non_overlap)
    after_traffic = assignor.active_tasks_cost(tasks, states, traffic, non_overlap)
    moved = sum(len(states.active[c] - set(instance.clients[c].active)) for c in instance.client_ids)
    # Kafka optimises actives before standbys exist. The instance's standbys pass through, except one on a
    # client that has just become the task's active (a task is never both on one client), exactly as the
    # exact models do, so the two outputs compare directly.
    dropped = {c: states.active[c] & set(instance.clients[c].standby) for c in instance.client_ids}
    assignment = {c: TaskRoles(tuple(_sorted_tasks(states.active[c])),
                               tuple(t for t in instance.clients[c].standby if t not in dropped[c]))
                  for c in instance.client_ids}
    info = {"rack_aware": True, "strategy": assignor.strategy, "kafka_cost_before": before,
            "kafka_cost_after": cost, "kafka_traffic_after": after_traffic, "moved_tasks": moved,
            "negative_cycles_canceled": tg.graph.cycles_canceled if tg else 0,
            "standbys_dropped_for_new_active": sum(len(d) for d in dropped.values())}
    return MethodResult(assignment, Status.OPTIMAL, objective=float(cost), bound=float(cost), info=info)


def run_rack_standby(instance: TasksInstance, options: SolveOptions) -> MethodResult:
    """``kafka.rack_standby``: ``optimizeStandbyTasks`` from the instance's actives and standbys."""
    assignor = RackAwareTaskAssignor(instance)
    # Kafka reaches optimizeStandbyTasks only with standbys configured, i.e. with changelog racks checked.
    reason = assignor.disabled_reason(check_changelogs=True)
    if reason is not None:
        return _unchanged(instance, reason)
    traffic, non_overlap = instance.config.traffic_cost, instance.config.non_overlap_cost
    can_move = tag_aware_move_predicate(instance) if instance.config.rack_aware_assignment_tags else always_movable
    states = _states(instance, with_standby=True)
    standbys = _sorted_tasks({t for c in states.order for t in states.standby[c]})
    before = assignor.standby_tasks_cost(standbys, states, traffic, non_overlap)
    after, rounds = assignor.optimize_standby_tasks(states, traffic, non_overlap, can_move)
    moved = sum(len(states.standby[c] - set(instance.clients[c].standby)) for c in instance.client_ids)
    assignment = {c: TaskRoles(instance.clients[c].active, tuple(_sorted_tasks(states.standby[c])))
                  for c in instance.client_ids}
    info = {"rack_aware": True, "kafka_cost_before": before, "kafka_cost_after": after,
            "standby_rounds": rounds, "moved_standbys": moved,
            "move_predicate": "client_tags" if instance.config.rack_aware_assignment_tags else "always"}
    return MethodResult(assignment, Status.FEASIBLE, info=info)


RACK_AWARE_TASK_ASSIGNOR = "org.apache.kafka.streams.processor.internals.assignment.RackAwareTaskAssignor"

METHODS = [
    Method("kafka.rack_active", "tasks", "rack_active", run_rack_active,
           "RackAwareTaskAssignor.optimizeActiveTasks over all tasks from the current actives (cycle canceling)",
           kafka_class=RACK_AWARE_TASK_ASSIGNOR),
    Method("kafka.rack_standby", "tasks", "rack_standby", run_rack_standby,
           "RackAwareTaskAssignor.optimizeStandbyTasks from the current actives and standbys (pairwise swaps)",
           kafka_class=RACK_AWARE_TASK_ASSIGNOR),
]
RULES: list = []
