"""Port of Kafka Streams' ``TaskMovement`` (KIP-441 lag-ranked movements with warm-ups).

``org.apache.kafka.streams.processor.internals.assignment.TaskMovement`` (the
digest, §1.4-1.5). After the balanced assignment, a task whose client is not
caught up while some client is strictly less lagging is *moved*: the active
goes to a caught-up client (preferably one holding a standby, which swaps
roles), or to the most caught-up one; the old client keeps the task as a
*warm-up* standby while the shared ``max.warmup.replicas`` budget lasts.
Standbys on lagging clients are moved likewise. Movements run in order of
(number of caught-up clients, task id) out of a ``java.util.PriorityQueue``,
whose tie order between two standby movements of one task this port keeps
(:class:`~kipopt.solvers.java_util.JavaPriorityQueue`).

:class:`Lags` holds what ``ClientState.lagFor`` and the assignor's
``tasksToCaughtUpClients`` / ``tasksToClientByLag`` maps provide.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from kipopt.instance import TasksInstance, parse_task_id

from kipopt.solvers.java_util import JavaPriorityQueue
from kipopt.solvers.tasks.client_state import StreamsClientStates, sorted_tasks
from kipopt.solvers.tasks.priority_set import ConstrainedPrioritySet

#: ``Task.LATEST_OFFSET``: the lag Kafka reports for a task running active on the client.
LATEST_OFFSET = -2
#: ``Long.MAX_VALUE``: an ``acceptable.recovery.lag`` that makes every client caught up.
UNBOUNDED_LAG = 2**63 - 1


@dataclass(frozen=True)
class Lags:
    """Per task: each client's lag, the caught-up clients, and all clients by (lag, client order)."""

    lag: Mapping[str, Mapping[str, int]]  # task -> client -> lag
    caught_up: Mapping[str, frozenset[str]]
    by_lag: Mapping[str, tuple[str, ...]]

    @classmethod
    def of(cls, instance: TasksInstance, stateful_tasks: list[str]) -> Lags:
        """``tasksToCaughtUpClients`` and ``tasksToClientByLag`` (§1.3)."""
        order = instance.client_ids
        rank = {c: i for i, c in enumerate(order)}
        acceptable = instance.config.acceptable_recovery_lag
        lag, caught_up, by_lag = {}, {}, {}
        clients = [(c, instance.clients[c].lags) for c in order]
        for task in stateful_tasks:
            end_offset = instance.tasks[task].end_offset
            lags = {c: held.get(task, end_offset) for c, held in clients}
            lag[task] = lags
            caught_up[task] = frozenset(c for c in order if lags[c] == LATEST_OFFSET or acceptable == UNBOUNDED_LAG
                                        or 0 <= lags[c] <= acceptable)
            by_lag[task] = tuple(sorted(order, key=lambda c: (lags[c], rank[c])))
        return cls(lag, caught_up, by_lag)

    def should_move(self, task: str, client: str) -> bool:
        """``taskIsNotCaughtUpOnClientAndOtherMoreCaughtUpClientsExist``."""
        if client in self.caught_up[task]:
            return False
        lags = self.lag[task]
        return lags[self.by_lag[task][0]] < lags[client]

    def most_caught_up_eligible(self, task: str, destination: str,
                                eligible: Callable[[str], bool] = lambda c: True) -> str | None:
        """``mostCaughtUpEligibleClient``: the first eligible client by lag, before reaching the destination."""
        for client in self.by_lag[task]:
            if client == destination:
                return None
            if eligible(client):
                return client
        return None


class WarmupBudget:
    """``remainingWarmupReplicas``: one counter for active and standby movements, read then decremented."""

    def __init__(self, max_warmup_replicas: int) -> None:
        self.remaining = max_warmup_replicas

    def take(self) -> bool:
        granted = self.remaining > 0
        self.remaining -= 1
        return granted


def _schedule(states: StreamsClientStates, lags: Lags, role: str, skip: Mapping[str, set[str]],
              clients_by_load: ConstrainedPrioritySet) -> JavaPriorityQueue:
    movements = JavaPriorityQueue(lambda m: (len(lags.caught_up[m[0]]), parse_task_id(m[0])))
    for client in states.order:
        for task in sorted_tasks(getattr(states, role)[client]):
            if task not in skip.get(client, ()) and lags.should_move(task, client):
                movements.add((task, client))
        clients_by_load.offer(client)
    return movements


def _caught_up_by_load(states: StreamsClientStates, lags: Lags) -> ConstrainedPrioritySet:
    return ConstrainedPrioritySet(states.order, lambda client, task: client in lags.caught_up[task],
                                  states.assigned_task_load)


def assign_active_task_movements(states: StreamsClientStates, lags: Lags, warmups: dict[str, set[str]],
                                 budget: WarmupBudget) -> int:
    """``assignActiveTaskMovements``: returns the number of movements scheduled (all count for probing)."""
    clients_by_load = _caught_up_by_load(states, lags)
    movements = _schedule(states, lags, "active", {}, clients_by_load)
    needed = len(movements)
    while movements:
        task, destination = movements.poll()
        source = clients_by_load.poll(task, lambda c: task in states.standby[c])
        if source is not None:
            _swap_standby_and_active(states, task, source, destination)
        else:
            source = clients_by_load.poll(task)
            if source is None:
                source = lags.most_caught_up_eligible(task, destination)
                if source is None:
                    raise RuntimeError("Tried to move task to more caught-up client as scheduled before but none exist")
            if task in states.standby[source]:  # only possible for the most caught-up (not caught-up) client
                _swap_standby_and_active(states, task, source, destination)
            else:
                _move_active_and_try_to_warm_up(states, budget, task, source, destination,
                                                warmups.setdefault(destination, set()))
        clients_by_load.offer_all((source, destination))
    return needed


def assign_standby_task_movements(states: StreamsClientStates, lags: Lags, warmups: Mapping[str, set[str]],
                                  budget: WarmupBudget, standby_warmups: dict[str, set[str]]) -> int:
    """``assignStandbyTaskMovements``: returns the movements done (those that found a source).

    Kafka does not record the lagging standbys a destination keeps on a
    warm-up here; ``standby_warmups`` collects them for kipopt's ``warmup`` lists.
    """
    clients_by_load = _caught_up_by_load(states, lags)
    movements = _schedule(states, lags, "standby", warmups, clients_by_load)
    done = 0
    while movements:
        task, destination = movements.poll()

        def eligible(client: str, task: str = task) -> bool:
            return not states.holds(client, task)

        source = clients_by_load.poll(task, eligible)
        if source is None:
            source = lags.most_caught_up_eligible(task, destination, eligible)
        if source is None:
            continue  # no client without a copy: nowhere to move it
        states.assign("standby", source, task)
        if budget.take():
            standby_warmups.setdefault(destination, set()).add(task)
        else:
            states.unassign("standby", destination, task)
        clients_by_load.offer_all((source, destination))
        done += 1
    return done


def _move_active_and_try_to_warm_up(states: StreamsClientStates, budget: WarmupBudget, task: str, source: str,
                                    destination: str, warmups: set[str]) -> None:
    states.assign("active", source, task)
    states.unassign("active", destination, task)
    if budget.take():
        states.assign("standby", destination, task)
        warmups.add(task)


def _swap_standby_and_active(states: StreamsClientStates, task: str, source: str, destination: str) -> None:
    states.unassign("standby", source, task)
    states.assign("active", source, task)
    states.unassign("active", destination, task)
    states.assign("standby", destination, task)
