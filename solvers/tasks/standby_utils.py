"""Port of Kafka Streams' ``StandbyTaskAssignmentUtils`` (helpers shared by both standby assignors).

``org.apache.kafka.streams.processor.internals.assignment.StandbyTaskAssignmentUtils``:
the least-loaded priority set constrained to clients that hold no copy of the
task, the "poll, assign a standby, re-offer" loop that leaves a task short
(Kafka only logs a warning) when no client is left, and the initial
remaining-standby counts.
"""

from __future__ import annotations

from typing import Iterable

from kipopt.solvers.tasks.client_state import StreamsClientStates
from kipopt.solvers.tasks.priority_set import ConstrainedPrioritySet


def least_loaded_set_constrained_by_assigned_task(states: StreamsClientStates) -> ConstrainedPrioritySet:
    """``createLeastLoadedPrioritySetConstrainedByAssignedTask``: weight = total load, no copy of the task."""
    return ConstrainedPrioritySet(states.order, lambda client, task: not states.holds(client, task),
                                  states.assigned_task_load)


def poll_and_assign_standbys(states: StreamsClientStates, remaining: dict[str, int],
                             clients_by_load: ConstrainedPrioritySet, task: str) -> None:
    """``pollClientAndMaybeAssignAndUpdateRemainingStandbyTasks``: fill the task's remaining standbys."""
    left = remaining[task]
    while left > 0:
        client = clients_by_load.poll(task)
        if client is None:
            break  # Kafka warns that the task stays short of standbys
        states.assign("standby", client, task)
        left -= 1
        clients_by_load.offer(client)
        remaining[task] = left


def tasks_to_remaining_standbys(num_standby_replicas: int, stateful_tasks: Iterable[str]) -> dict[str, int]:
    """``computeTasksToRemainingStandbys``."""
    return {task: num_standby_replicas for task in stateful_tasks}
