"""The parts of Kafka Streams' ``ClientState`` the high-availability assignor reads.

Port of ``org.apache.kafka.streams.processor.internals.assignment.ClientState``
as far as ``HighAvailabilityTaskAssignor``, ``TaskMovement`` and the standby
assignors use it: the *assigned* active and standby sets (Kafka keeps them in
``TreeSet``s, so they iterate in ``TaskId`` order), the capacity (stream
threads), the client tags, and the loads ``assignedTaskLoad`` =
(actives + standbys) / capacity and ``activeTaskLoad`` = actives / capacity,
computed in doubles as Kafka does. Lags live with the assignor (``lagFor``).

Clients are in Kafka's process order (``TasksInstance.client_ids``, §0 of the
digest); :class:`StreamsClientStates` extends the rack-aware port's
:class:`~kipopt.solvers.tasks.rack_graphs.ClientStates`, so the KIP-925
optimisers run on it unchanged.

>>> from kipopt.datasets import load_scenario
>>> s = StreamsClientStates.empty(load_scenario("kip441_scale_out"))
>>> s.assign("active", "I1", "0_0"); s.assign("standby", "I1", "0_1")
>>> s.assigned_task_load("I1"), s.active_task_load("I1"), s.holds("I1", "0_1")
(2.0, 1.0, True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from kipopt.instance import TasksInstance, parse_task_id

from kipopt.solvers.tasks.rack_graphs import ClientStates


def sorted_tasks(tasks) -> list[str]:
    """Tasks in ``TaskId`` order (subtopology, partition), as Kafka's ``TreeSet<TaskId>`` iterates them."""
    return sorted(tasks, key=parse_task_id)


@dataclass
class StreamsClientStates(ClientStates):
    """Every client's assigned tasks by role, with its capacity and tags."""

    capacity: dict[str, int] = field(default_factory=dict)
    tags: dict[str, Mapping[str, str]] = field(default_factory=dict)

    @classmethod
    def empty(cls, instance: TasksInstance) -> StreamsClientStates:
        """Nothing assigned yet: the state ``HighAvailabilityTaskAssignor.assign`` starts from."""
        order = instance.client_ids
        return cls(order, {c: set() for c in order}, {c: set() for c in order},
                   capacity={c: instance.clients[c].capacity for c in order},
                   tags={c: dict(instance.clients[c].tags) for c in order})

    @classmethod
    def with_actives(cls, instance: TasksInstance) -> StreamsClientStates:
        """The instance's current actives assigned, no standbys (the input of ``kafka.tag_standby``)."""
        states = cls.empty(instance)
        for c in states.order:
            states.active[c].update(instance.clients[c].active)
        return states

    def assigned_task_count(self, client: str) -> int:
        return len(self.active[client]) + len(self.standby[client])

    def assigned_task_load(self, client: str) -> float:
        """``assignedTaskLoad``: (actives + standbys) / capacity."""
        return self.assigned_task_count(client) / self.capacity[client]

    def active_task_load(self, client: str) -> float:
        """``activeTaskLoad``: actives / capacity."""
        return len(self.active[client]) / self.capacity[client]
