"""Port of Kafka Streams' ``ClientTagAwareStandbyTaskAssignor`` (KIP-708) and the ``kafka.tag_standby`` method.

``org.apache.kafka.streams.processor.internals.assignment.ClientTagAwareStandbyTaskAssignor``
(the digest, §5.3). Tag statistics run over *all* clients and *all* their tag
keys; only the configured keys (``rack.aware.assignment.tags``) constrain.
For each stateful task in the given order, from the client holding it active:
mark the last used client's configured (key, value) entries as used (clients
with a used value are excluded), except that a key whose number of distinct
values is at most the number of clients used so far is exhausted and all its
entries are released; then poll the least-loaded client with no copy of the
task outside the used entries. A task left short (or without an active)
waits for the pending pass, which fills it from the least-loaded clients
without a copy, tags ignored, in the iteration order of Kafka's
``HashMap<TaskId, Integer>`` (:func:`~kipopt.solvers.java_util.task_hashmap_order`).

One quirk is kept: the per-task loop is a do-while, so the class places one
standby even when ``num.standby.replicas`` is 0 (Kafka never calls it then).
An active task on two clients is processed twice by Kafka's class (which
answers on some such inputs: checked against the compiled class), but not by
this method, whose input has one active per task (below).

``kafka.tag_standby`` runs the class alone on the instance's current actives
(no standbys yet, no thread balancing afterwards, §8). Its input is that of
the rule ``tag_standby`` and of ``exact.tag_standby``: every task active on
exactly one client (anything else is rejected, naming the field; in Kafka's
high-availability assignor every task has one active when the class runs).
With ``num_standby_replicas`` = 0 it places nothing, as the high-availability
assignor, the class's only caller, would not call it. Without configured tags
no tag constrains, so it places every standby on the least-loaded clients
without a copy: Kafka's factory would pick ``DefaultStandbyTaskAssignor``
then, which gives the same standbys (every task has an active, so the
pending pass, whose hash order is the only difference, never runs).

>>> from kipopt.datasets import load_scenario
>>> r = run_tag_standby(load_scenario("kip708_six_nodes"), None)
>>> [c for c, roles in r.assignment.items() if roles.standby]
['Node-5']
"""

from __future__ import annotations

from typing import Mapping, Sequence

from kipopt.errors import InstanceError
from kipopt.instance import TasksInstance
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solution import Status, TaskRoles

from kipopt.solvers.java_util import task_hashmap_order
from kipopt.solvers.tasks.client_state import StreamsClientStates, sorted_tasks
from kipopt.solvers.tasks.priority_set import ConstrainedPrioritySet
from kipopt.solvers.tasks.rack_aware import tag_aware_move_predicate
from kipopt.solvers.tasks.standby_utils import (least_loaded_set_constrained_by_assigned_task, poll_and_assign_standbys,
                                  tasks_to_remaining_standbys)

TagEntry = tuple[str, str]


class ClientTagAwareStandbyTaskAssignor:
    """Standbys on clients whose configured tag values differ from the active's and each other's."""

    def __init__(self, instance: TasksInstance) -> None:
        self.instance = instance
        self.num_standby_replicas = instance.config.num_standby_replicas
        self.configured = frozenset(instance.config.rack_aware_assignment_tags)
        self.tags: dict[str, Mapping[str, str]] = {c: instance.clients[c].tags for c in instance.client_ids}
        self._can_move = tag_aware_move_predicate(instance)

    def assign(self, states: StreamsClientStates, stateful_tasks: Sequence[str]) -> None:
        remaining = tasks_to_remaining_standbys(self.num_standby_replicas, stateful_tasks)
        values, clients_with = self._tag_statistics(states.order)
        clients_by_load = least_loaded_set_constrained_by_assigned_task(states)
        for task in stateful_tasks:
            for client in states.order:
                if task in states.active[client]:
                    self._assign_on_different_tags(task, client, states, clients_by_load, remaining,
                                                   values, clients_with)
        if remaining:
            clients_by_load.offer_all(states.order)
            # Kafka's map was filled with every stateful task, then shrunk: its order is that of the full map.
            for task in task_hashmap_order(stateful_tasks):
                if task in remaining:
                    poll_and_assign_standbys(states, remaining, clients_by_load, task)

    def _tag_statistics(self, order: Sequence[str]) -> tuple[dict[str, set[str]], dict[TagEntry, set[str]]]:
        """``fillClientsTagStatistics``: distinct values per key, clients per (key, value), over all tags."""
        values: dict[str, set[str]] = {}
        clients_with: dict[TagEntry, set[str]] = {}
        for client in order:
            for key, value in self.tags[client].items():
                values.setdefault(key, set()).add(value)
                clients_with.setdefault((key, value), set()).add(client)
        return values, clients_with

    def _assign_on_different_tags(self, task: str, active_client: str, states: StreamsClientStates,
                                  clients_by_load: ConstrainedPrioritySet, remaining: dict[str, int],
                                  values: dict[str, set[str]], clients_with: dict[TagEntry, set[str]]) -> None:
        """``assignStandbyTasksToClientsWithDifferentTags`` (a do-while, as in Kafka)."""
        clients_by_load.offer_all(states.order)
        used_clients, left = 1, remaining[task]
        used: dict[TagEntry, set[str]] = {}
        last = active_client
        while True:
            self._mark_used_tag_entries(last, used_clients, values, clients_with, used)
            excluded = set().union(*used.values())
            client = clients_by_load.poll(task, lambda c: c not in excluded)
            if client is None:
                break
            used_clients += 1
            left -= 1
            states.assign("standby", client, task)
            last = client
            if left <= 0:
                break
        if left > 0:
            remaining[task] = left
        else:
            del remaining[task]

    def _mark_used_tag_entries(self, client: str, used_clients: int, values: dict[str, set[str]],
                               clients_with: dict[TagEntry, set[str]], used: dict[TagEntry, set[str]]) -> None:
        """``updateClientsOnAlreadyUsedTagEntries``: use the client's values, release exhausted keys."""
        for key, value in self.tags[client].items():
            if key not in self.configured:
                continue
            if len(values[key]) <= used_clients:
                for v in values[key]:
                    used.pop((key, v), None)
            else:
                used[(key, value)] = clients_with[(key, value)]

    def is_allowed_task_movement(self, source: str, destination: str) -> bool:
        """Two-argument ``isAllowedTaskMovement`` (thread balancing): the destination has every tag of the source."""
        dest = self.tags[destination]
        return all(dest.get(key) == value for key, value in self.tags[source].items())

    def can_move_standby(self, source: str, destination: str, task: str, states) -> bool:
        """Four-argument ``isAllowedTaskMovement`` (rack-aware swaps): distinct tag entries do not drop."""
        return self._can_move(source, destination, task, states)


# ---------------------------------------------------------------------- method


def _single_actives(instance: TasksInstance) -> None:
    owner: dict[str, str] = {}
    for c in instance.client_ids:
        for t in instance.clients[c].active:
            if t in owner:
                raise InstanceError(f"clients.{c}.active", f"task {t} is active on {owner[t]} and {c}; "
                                    "kafka.tag_standby starts from current actives with one owner per task")
            owner[t] = c
    for t in instance.task_ids:
        if t not in owner:
            raise InstanceError(f"tasks.{t}", f"task {t} is active on no client; "
                                "kafka.tag_standby starts from current actives with one owner per task")


def run_tag_standby(instance: TasksInstance, options: SolveOptions | None) -> MethodResult:
    """``kafka.tag_standby``: ``ClientTagAwareStandbyTaskAssignor.assign`` on the instance's actives."""
    _single_actives(instance)
    states = StreamsClientStates.with_actives(instance)
    stateful = sorted_tasks(t for t in instance.task_ids if instance.tasks[t].stateful)
    if instance.config.num_standby_replicas > 0:
        ClientTagAwareStandbyTaskAssignor(instance).assign(states, stateful)
    wanted = min(instance.config.num_standby_replicas, len(states.order) - 1)
    short = sum(max(0, wanted - sum(t in states.standby[c] for c in states.order)) for t in stateful)
    assignment = {c: TaskRoles(tuple(instance.clients[c].active), tuple(sorted_tasks(states.standby[c])))
                  for c in states.order}
    info = {"configured_tags": list(instance.config.rack_aware_assignment_tags), "standbys_short": short}
    return MethodResult(assignment, Status.FEASIBLE, info=info)


METHODS = [
    Method("kafka.tag_standby", "tasks", "tag_standby", run_tag_standby,
           "ClientTagAwareStandbyTaskAssignor (KIP-708) alone on the current actives: standbys on distinct tag values",
           kafka_class="org.apache.kafka.streams.processor.internals.assignment.ClientTagAwareStandbyTaskAssignor"),
]
RULES: list = []
