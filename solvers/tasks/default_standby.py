"""Port of Kafka Streams' ``DefaultStandbyTaskAssignor``.

``org.apache.kafka.streams.processor.internals.assignment.DefaultStandbyTaskAssignor``
(the standby assignor ``HighAvailabilityTaskAssignor`` uses when
``rack.aware.assignment.tags`` is empty): for each stateful task in the given
order, up to ``num.standby.replicas`` times, the least-loaded client (total
load, ties by client order) that holds no copy of the task gets a standby. A
task is left short when clients run out. Every movement is allowed.

>>> from kipopt.datasets import load_scenario
>>> from kipopt.solvers.tasks.client_state import StreamsClientStates
>>> s = StreamsClientStates.with_actives(load_scenario("kip441_scale_out"))
>>> DefaultStandbyTaskAssignor(1).assign(s, ["0_0", "0_1", "0_2"])
>>> {c: sorted(s.standby[c]) for c in s.order}
{'I1': [], 'I2': ['0_2'], 'I3': ['0_0', '0_1']}
"""

from __future__ import annotations

from typing import Sequence

from kipopt.solvers.tasks.client_state import StreamsClientStates
from kipopt.solvers.tasks.rack_graphs import ClientStates
from kipopt.solvers.tasks.standby_utils import (least_loaded_set_constrained_by_assigned_task, poll_and_assign_standbys,
                                  tasks_to_remaining_standbys)


class DefaultStandbyTaskAssignor:
    """Least-loaded standby placement, tags ignored."""

    def __init__(self, num_standby_replicas: int) -> None:
        self.num_standby_replicas = num_standby_replicas

    def assign(self, states: StreamsClientStates, stateful_tasks: Sequence[str]) -> None:
        remaining = tasks_to_remaining_standbys(self.num_standby_replicas, stateful_tasks)
        clients_by_load = least_loaded_set_constrained_by_assigned_task(states)
        clients_by_load.offer_all(states.order)
        for task in stateful_tasks:
            poll_and_assign_standbys(states, remaining, clients_by_load, task)

    def is_allowed_task_movement(self, source: str, destination: str) -> bool:
        """The two-argument ``isAllowedTaskMovement`` (thread balancing): always allowed."""
        return True

    def can_move_standby(self, source: str, destination: str, task: str, states: ClientStates) -> bool:
        """The four-argument ``isAllowedTaskMovement`` (rack-aware standby swaps): always allowed."""
        return True
