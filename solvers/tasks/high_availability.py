"""Port of Kafka Streams' ``HighAvailabilityTaskAssignor`` (KIP-441) and the ``kafka.ha`` method.

``org.apache.kafka.streams.processor.internals.assignment.HighAvailabilityTaskAssignor.assign``
end to end, in Kafka's order (the digest, §1):

1. stateful actives round robin over the sorted clients (lags ignored), then
   ``balanceTasksOverThreads``, then ``optimizeActiveTasks`` with the
   configured strategy and costs (10/1 when unset) if rack awareness can be
   enabled;
2. with ``num.standby.replicas`` > 0: ``DefaultStandbyTaskAssignor``, or
   ``ClientTagAwareStandbyTaskAssignor`` when tags are configured, thread
   balancing with its movement predicate, then ``optimizeStandbyTasks``;
3. ``TaskMovement``: actives, then standbys, moved towards caught-up clients
   with warm-ups from one shared ``max.warmup.replicas`` budget;
4. stateless actives to the least active-loaded clients, then
   ``optimizeActiveTasks`` with costs 1/0;
5. a probing rebalance is needed iff any movement was scheduled (actives) or
   done (standbys).

The assignor never reads the instance's ``active``/``standby`` lists, only
its lags (§8). Kafka returns warm-ups as ordinary standbys; the method lists
a standby under ``warmup`` when a client kept it because a warm-up was
granted (active or standby movement) and still holds it at the end.

>>> from kipopt.datasets import load_scenario
>>> r = run_ha(load_scenario("kip441_scale_out"), None)
>>> {c: (roles.active, roles.standby, roles.warmup) for c, roles in r.assignment.items()}
{'I1': (('0_0', '0_2'), ('0_1',), ()), 'I2': (('0_1',), ('0_0', '0_2'), ()), 'I3': ((), (), ('0_1', '0_2'))}
>>> r.info["probing_rebalance_needed"], r.info["active_task_movements"], r.info["standby_task_movements"]
(True, 1, 2)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from kipopt.instance import TasksInstance, parse_task_id
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solution import Status, TaskRoles

from kipopt.solvers.tasks.client_state import StreamsClientStates, sorted_tasks
from kipopt.solvers.tasks.default_standby import DefaultStandbyTaskAssignor
from kipopt.solvers.tasks.priority_set import ConstrainedPrioritySet
from kipopt.solvers.tasks.rack_aware import RackAwareTaskAssignor
from kipopt.solvers.tasks.tag_standby import ClientTagAwareStandbyTaskAssignor
from kipopt.solvers.tasks.task_movement import Lags, WarmupBudget, assign_active_task_movements, assign_standby_task_movements

#: ``STATELESS_TRAFFIC_COST`` / ``STATELESS_NON_OVERLAP_COST``: the stateless pass ignores the configured costs.
STATELESS_TRAFFIC_COST = 1
STATELESS_NON_OVERLAP_COST = 0


def should_move_a_task(states: StreamsClientStates, source: str, destination: str) -> bool:
    """``shouldMoveATask``: move only if it lowers the load skew without reversing it."""
    skew = states.assigned_task_load(source) - states.assigned_task_load(destination)
    if skew <= 0:
        return False
    at_destination = (states.assigned_task_count(destination) + 1.0) / states.capacity[destination]
    at_source = (states.assigned_task_count(source) - 1.0) / states.capacity[source]
    proposed = at_source - at_destination
    return proposed >= 0 and proposed < skew


def balance_tasks_over_threads(states: StreamsClientStates, role: str,
                               may_move: Callable[[str, str], bool]) -> int:
    """``balanceTasksOverThreads`` on the ``role`` sets; passes repeat until one moves nothing.

    Returns the number of passes (the last one moves nothing).
    """
    tasks = getattr(states, role)
    keys: dict[str, tuple[int, int]] = {}
    passes, keep_balancing = 0, True
    while keep_balancing:
        keep_balancing = False
        passes += 1
        for source in states.order:
            for destination in states.order:
                if source == destination or not should_move_a_task(states, source, destination):
                    continue  # Kafka's walk would stop before its first task
                snapshot = sorted(tasks[source], key=lambda t: keys.get(t) or keys.setdefault(t, parse_task_id(t)))
                for task in snapshot:
                    if not should_move_a_task(states, source, destination):
                        break
                    if not states.holds(destination, task) and may_move(source, destination):
                        tasks[source].remove(task)
                        tasks[destination].add(task)
                        keep_balancing = True
    return passes


@dataclass
class HighAvailabilityOutcome:
    """What ``assign`` leaves behind: the client states and the movement bookkeeping."""

    states: StreamsClientStates
    probing_rebalance_needed: bool
    active_task_movements: int
    standby_task_movements: int
    warmups: dict[str, set[str]] = field(default_factory=dict)
    rack_aware: bool = False
    rack_aware_reason: str | None = None
    standby_assignor: str | None = None


class HighAvailabilityTaskAssignor:
    """``HighAvailabilityTaskAssignor`` for one kipopt tasks instance."""

    def __init__(self, instance: TasksInstance) -> None:
        self.instance = instance
        self.config = instance.config
        self.rack = RackAwareTaskAssignor(instance)
        # canEnableRackAwareAssignor is evaluated once and cached, as in Kafka.
        self.rack_reason = self.rack.disabled_reason(
            check_changelogs=self.config.num_standby_replicas > 0
            or self.config.rack_aware_assignment_cost_partitions == "all")

    @property
    def rack_aware(self) -> bool:
        return self.rack_reason is None

    def assign(self) -> HighAvailabilityOutcome:
        x = self.instance
        states = StreamsClientStates.empty(x)
        stateful = sorted_tasks(t for t in x.task_ids if x.tasks[t].stateful)
        self._assign_active_stateful_tasks(states, stateful)
        standby_assignor = self._assign_standby_replica_tasks(states, stateful)
        lags = Lags.of(x, stateful)
        budget = WarmupBudget(self.config.max_warmup_replicas)
        warmups: dict[str, set[str]] = {}
        active_moves = assign_active_task_movements(states, lags, warmups, budget)
        standby_warmups: dict[str, set[str]] = {}
        standby_moves = assign_standby_task_movements(states, lags, warmups, budget, standby_warmups)
        self._assign_stateless_active_tasks(states, sorted_tasks(t for t in x.task_ids if not x.tasks[t].stateful))
        kept = {c: (warmups.get(c, set()) | standby_warmups.get(c, set())) & states.standby[c] for c in states.order}
        return HighAvailabilityOutcome(states, active_moves + standby_moves > 0, active_moves, standby_moves,
                                       {c: w for c, w in kept.items() if w}, self.rack_aware, self.rack_reason,
                                       type(standby_assignor).__name__ if standby_assignor else None)

    def _assign_active_stateful_tasks(self, states: StreamsClientStates, stateful: list[str]) -> None:
        order = states.order
        for i, task in enumerate(stateful):
            states.active[order[i % len(order)]].add(task)
        balance_tasks_over_threads(states, "active", lambda source, destination: True)
        if self.rack_aware:
            self.rack.optimize_active_tasks(stateful, states, self.config.traffic_cost, self.config.non_overlap_cost)

    def _assign_standby_replica_tasks(self, states: StreamsClientStates, stateful: list[str]):
        if self.config.num_standby_replicas == 0:
            return None
        if self.config.rack_aware_assignment_tags:  # StandbyTaskAssignorFactory.create(configs, null)
            assignor = ClientTagAwareStandbyTaskAssignor(self.instance)
        else:
            assignor = DefaultStandbyTaskAssignor(self.config.num_standby_replicas)
        assignor.assign(states, stateful)
        balance_tasks_over_threads(states, "standby", assignor.is_allowed_task_movement)
        if self.rack_aware:
            self.rack.optimize_standby_tasks(states, self.config.traffic_cost, self.config.non_overlap_cost,
                                             assignor.can_move_standby)
        return assignor

    def _assign_stateless_active_tasks(self, states: StreamsClientStates, stateless: list[str]) -> None:
        clients_by_active_load = ConstrainedPrioritySet(states.order, lambda client, task: True,
                                                        states.active_task_load)
        clients_by_active_load.offer_all(states.order)
        for task in stateless:
            client = clients_by_active_load.poll(task)
            states.assign("active", client, task)
            clients_by_active_load.offer(client)
        if self.rack_aware:
            self.rack.optimize_active_tasks(stateless, states, STATELESS_TRAFFIC_COST, STATELESS_NON_OVERLAP_COST)


# ---------------------------------------------------------------------- method


def run_ha(instance: TasksInstance, options: SolveOptions | None) -> MethodResult:
    """``kafka.ha``: ``HighAvailabilityTaskAssignor.assign``; warm-ups listed apart from standbys."""
    outcome = HighAvailabilityTaskAssignor(instance).assign()
    states = outcome.states
    assignment = {}
    for c in states.order:
        warm = outcome.warmups.get(c, set())
        assignment[c] = TaskRoles(tuple(sorted_tasks(states.active[c])),
                                  tuple(sorted_tasks(states.standby[c] - warm)), tuple(sorted_tasks(warm)))
    info = {"probing_rebalance_needed": outcome.probing_rebalance_needed,
            "active_task_movements": outcome.active_task_movements,
            "standby_task_movements": outcome.standby_task_movements,
            "rack_aware": outcome.rack_aware, "standby_assignor": outcome.standby_assignor}
    if outcome.rack_aware_reason is not None:
        info["rack_aware_reason"] = outcome.rack_aware_reason
    return MethodResult(assignment, Status.FEASIBLE, info=info)


METHODS = [
    Method("kafka.ha", "tasks", "lag_active", run_ha,
           "HighAvailabilityTaskAssignor (KIP-441): balanced actives, standbys, lag-ranked movements with warm-ups",
           kafka_class="org.apache.kafka.streams.processor.internals.assignment.HighAvailabilityTaskAssignor"),
]
RULES: list = []
