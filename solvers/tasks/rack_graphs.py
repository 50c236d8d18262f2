"""Ports of Kafka Streams' rack-aware graph constructors (KIP-925).

``MinTrafficGraphConstructor`` and ``BalanceSubtopologyGraphConstructor``
(package ``org.apache.kafka.streams.processor.internals.assignment``) turn
"which client runs which task" into a flow network whose min-cost flow is
the optimised placement, and read the placement back from the solved flow.
Node numbering, the order edges are read back in and the per-subtopology
caps (ceilings computed in IEEE doubles, in Kafka's operation order) follow
Kafka exactly, because they decide ties.

The client state they read and change is :class:`ClientStates`: each
client's assigned active and standby tasks, as in Kafka's ``ClientState``.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

from kipopt.solvers.tasks.graph import Graph, GraphError

SOURCE_ID = -1

#: ``getCost(task, client, inCurrentAssignment, trafficCost, nonOverlapCost, isStandby)``
CostFunction = Callable[[str, str, bool, int, int, bool], int]


@dataclass
class ClientStates:
    """The assigned tasks of every client, by role, in Kafka's client order.

    >>> s = ClientStates(("p1", "p2"), {"p1": {"0_0"}, "p2": set()}, {"p1": set(), "p2": set()})
    >>> s.unassign("active", "p1", "0_0"); s.assign("active", "p2", "0_0"); s.active
    {'p1': set(), 'p2': {'0_0'}}
    """

    order: tuple[str, ...]
    active: dict[str, set[str]]
    standby: dict[str, set[str]] = field(default_factory=dict)

    def tasks(self, role: str, client: str) -> set[str]:
        return getattr(self, role)[client]

    def has(self, role: str, client: str, task: str) -> bool:
        return task in getattr(self, role)[client]

    def holds(self, client: str, task: str) -> bool:
        """``ClientState.hasAssignedTask``: the client runs the task in any role."""
        return task in self.active[client] or task in self.standby.get(client, ())

    def assign(self, role: str, client: str, task: str) -> None:
        if self.holds(client, task):
            raise GraphError(f"Tried to assign task {task} to {client}, but it is already assigned there")
        getattr(self, role)[client].add(task)

    def unassign(self, role: str, client: str, task: str) -> None:
        tasks = getattr(self, role)[client]
        if task not in tasks:
            raise GraphError(f"Tried to unassign {role} task {task} from {client}, but it is not assigned there")
        tasks.remove(task)

    def count(self, role: str, tasks: Sequence[str]) -> Counter:
        """How many of ``tasks`` each client holds in ``role`` (clients holding none are absent)."""
        wanted = set(tasks)
        return Counter({c: n for c in self.order if (n := len(wanted & getattr(self, role)[c]))})


@dataclass
class TaskGraph:
    """A constructed graph with what the read-back needs."""

    graph: Graph
    task_client: dict[str, str]
    original_counts: Counter


def subtopology_cap(original: int, total_tasks: int, group_tasks: int) -> int:
    """Kafka's per-(client, subtopology) cap ``ceil(original * 1.0 / total * group)`` in doubles.

    The product is evaluated left to right exactly as Java does, so rounding
    can push it just above an integer:

    >>> (7 * 1.0) / 25 * 25
    7.000000000000001
    >>> subtopology_cap(7, 25, 25)
    8
    >>> subtopology_cap(6, 25, 25)
    6
    """
    return math.ceil((original * 1.0) / total_tasks * group_tasks)


def _read_back(graph: Graph, task: str, node: int, clients: Sequence[str], client_of_node: Callable[[int], int],
               task_client: dict[str, str], states: ClientStates, role: str) -> tuple[bool, int]:
    """``assignTaskToClient``: follow the task's first edge with flow, move the task if it changed client."""
    moved, assigned = False, 0
    for dest, edge in graph.edges(node).items():
        if edge.flow > 0:
            assigned += 1
            client = clients[client_of_node(dest)]
            original = task_client.get(task)
            if client == original:
                break
            states.unassign(role, original, task)
            states.assign(role, client, task)
            moved = True
    return moved, assigned


def _validate_assigned(tasks: Sequence[str], assigned: int, states: ClientStates, role: str,
                       original: Counter) -> None:
    if assigned != len(tasks):
        raise GraphError(f"Computed {role} task assignment number {assigned} is different size {len(tasks)}")
    after = states.count(role, tasks)
    if after != original:
        raise GraphError(f"per-client {role} counts changed from {dict(original)} to {dict(after)}")


def _note_owner(task: str, client: str, task_client: dict[str, str], has_replica: bool) -> None:
    if not has_replica and task in task_client:
        raise GraphError(f"Task {task} assigned to multiple clients {client}, {task_client[task]}")
    task_client[task] = client


@dataclass(frozen=True)
class MinTrafficGraphConstructor:
    """Port of ``MinTrafficGraphConstructor``: each client keeps its count, minimise the summed cost.

    Nodes: task ``i`` -> ``i``, client ``j`` -> ``T + j``, source -1, sink ``T + C``;
    the current assignment is the initial flow.
    """

    def construct_task_graph(self, clients: Sequence[str], tasks: Sequence[str], states: ClientStates, role: str,
                             cost: CostFunction, traffic_cost: int, non_overlap_cost: int,
                             has_replica: bool, is_standby: bool) -> TaskGraph:
        original = states.count(role, tasks)
        graph = Graph()
        task_client: dict[str, str] = {}
        n_tasks = len(tasks)
        for i, task in enumerate(tasks):
            for j, client in enumerate(clients):
                flow = 1 if states.has(role, client, task) else 0
                weight = cost(task, client, flow == 1, traffic_cost, non_overlap_cost, is_standby)
                if flow:
                    _note_owner(task, client, task_client, has_replica)
                graph.add_edge(i, n_tasks + j, 1, weight, flow)
            if task not in task_client:
                raise GraphError(f"Task {task} not assigned to any client")
            graph.add_edge(SOURCE_ID, i, 1, 0, 1)
        sink = n_tasks + len(clients)
        for j, client in enumerate(clients):
            capacity = original.get(client, 0)
            graph.add_edge(n_tasks + j, sink, capacity, 0, capacity)
        graph.set_source_node(SOURCE_ID)
        graph.set_sink_node(sink)
        return TaskGraph(graph, task_client, original)

    def assign_task_from_min_cost_flow(self, tg: TaskGraph, clients: Sequence[str], tasks: Sequence[str],
                                       states: ClientStates, role: str) -> bool:
        n_tasks = len(tasks)
        moved_any, assigned = False, 0
        for node, task in enumerate(tasks):
            moved, n = _read_back(tg.graph, task, node, clients, lambda dest: dest - n_tasks,
                                  tg.task_client, states, role)
            moved_any |= moved
            assigned += n
        _validate_assigned(tasks, assigned, states, role, tg.original_counts)
        return moved_any


@dataclass(frozen=True)
class BalanceSubtopologyGraphConstructor:
    """Port of ``BalanceSubtopologyGraphConstructor``: also cap each client's share of each subtopology.

    ``groups`` are the task sets of *all* subtopologies, ascending by
    subtopology. Nodes: tasks group by group (sorted inside a group, listed
    tasks only), (group ``g``, client ``j``) -> ``T + C*g + j``, second-stage
    client ``j`` -> ``T + C*G + j``, sink ``T + C*G + C``. The initial flow is
    zero; a max flow is found first, then cycle canceling.
    """

    groups: tuple[tuple[str, ...], ...]

    def construct_task_graph(self, clients: Sequence[str], tasks: Sequence[str], states: ClientStates, role: str,
                             cost: CostFunction, traffic_cost: int, non_overlap_cost: int,
                             has_replica: bool, is_standby: bool) -> TaskGraph:
        known = {t for group in self.groups for t in group}
        for task in tasks:
            if task not in known:
                raise GraphError(f"Task {task} not in tasksForTopicGroup")
        original = states.count(role, tasks)
        wanted = set(tasks)
        n_tasks, n_clients, n_groups = len(tasks), len(clients), len(self.groups)
        graph = Graph()
        task_client: dict[str, str] = {}
        first_node = 0
        for g, group in enumerate(self.groups):
            listed = [t for t in group if t in wanted]
            for j, client in enumerate(clients):
                client_node = n_tasks + n_clients * g + j
                for offset, task in enumerate(listed):
                    current = states.has(role, client, task)
                    weight = cost(task, client, current, traffic_cost, non_overlap_cost, is_standby)
                    graph.add_edge(first_node + offset, client_node, 1, weight, 0)
                    if current:
                        _note_owner(task, client, task_client, has_replica)
                if listed:
                    cap = subtopology_cap(original[client], n_tasks, len(listed)) if client in original else 0
                    graph.add_edge(client_node, n_tasks + n_clients * n_groups + j, cap, 0, 0)
            first_node += len(listed)
        for node in range(first_node):
            graph.add_edge(SOURCE_ID, node, 1, 0, 0)
        sink = n_tasks + n_clients * n_groups + n_clients
        for j, client in enumerate(clients):
            graph.add_edge(n_tasks + n_clients * n_groups + j, sink, original.get(client, 0), 0, 0)
        graph.set_source_node(SOURCE_ID)
        graph.set_sink_node(sink)
        max_flow = graph.calculate_max_flow()
        if max_flow != n_tasks:
            raise GraphError(f"max flow calculated: {max_flow} doesn't match taskSize: {n_tasks}")
        return TaskGraph(graph, task_client, original)

    def assign_task_from_min_cost_flow(self, tg: TaskGraph, clients: Sequence[str], tasks: Sequence[str],
                                       states: ClientStates, role: str) -> bool:
        wanted = set(tasks)
        n_tasks, n_clients = len(tasks), len(clients)
        node, moved_any, assigned = 0, False, 0
        for g, group in enumerate(self.groups):
            base = n_tasks + n_clients * g
            for task in group:
                if task not in wanted:
                    continue
                moved, n = _read_back(tg.graph, task, node, clients, lambda dest, base=base: dest - base,
                                      tg.task_client, states, role)
                moved_any |= moved
                assigned += n
                node += 1
        _validate_assigned(tasks, assigned, states, role, tg.original_counts)
        return moved_any
