"""Port of Kafka Streams' KIP-924 built-in ``StickyTaskAssignor`` (``kafka.sticky``).

``org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor``
(selected with ``task.assignor.class``) assigns in four steps:

1. **Actives.** With ``per_thread = tasks // total threads``: each previous
   active stays on its client while that client holds fewer than
   ``capacity * per_thread`` actives (tasks in ``HashMap`` order); a task still
   unassigned goes to the first previous standby holder with such room (tasks
   in ``HashSet`` order, holders in ``HashSet<ProcessId>`` order); the rest, in
   sorted order, go to the "best" client: the previous owner unless it is
   loaded (load >= 1 and some client is less loaded), then a previous standby
   holder, else the least loaded client, preferring one that forms a task
   pair not seen on one client before.
2. **Rack-aware actives**: ``TaskAssignmentUtils.optimizeRackAwareActiveTasks``
   on the stateful tasks (costs: the configured ones, else traffic 1 /
   non-overlap 10), then on the stateless tasks (always 1 / 0).
3. **Standbys**: for each task with a changelog, ``num_standby_replicas`` times
   the best client among those not holding it (same choice as above).
4. **Rack-aware standbys**: ``optimizeRackAwareStandbyTasks`` (see
   :mod:`kipopt.solvers.tasks.assignment_utils`).

How the instance maps onto Kafka's ``ApplicationState`` (digest §8), and the
choices this port had to make:

* Clients are ``ProcessId`` = ``UUID(0, rank)``, rank = 0-based position of the
  id in the sorted client ids; ``UUID.hashCode`` is then the rank, which fixes
  every ``HashSet<ProcessId>`` order. ``kafkaStreamsStates()`` is a ``HashMap``
  of all clients, so it iterates in sorted order.
* Previous actives / standbys are the instance's ``active`` / ``standby``
  lists (sorted, as ``DefaultKafkaStreamsState`` keeps them); capacity =
  threads, rack and tags as given. Lags are not read by this assignor.
* ``allTasks()`` is a ``HashMap<TaskId, TaskInfo>`` filled in sorted task order
  (as ``StreamsPartitionAssignor`` does through the partition grouper); a
  task's partitions are its inputs plus, for a ``stateful`` task, its
  changelogs; ``isStateful`` = the instance's ``stateful``.
* The standby pass iterates a ``HashSet<TaskInfo>``. Kafka's
  ``DefaultTaskInfo`` does not override ``hashCode``, so in Kafka that order
  follows identity hashes and changes from run to run; this port uses the
  ``TaskId`` hash (as the digest, §6, states), i.e. the order of a
  ``HashSet<TaskId>`` filled in ``allTasks()`` order.
* ``HashMap`` bins that Java turns into trees (9 tasks of one hash bucket:
  ``(s, p), (s+1, p-31), ...`` share a hash, so they are common at 10,000
  tasks) follow the JDK's ``TreeNode`` order
  (:mod:`kipopt.solvers.java_tree_bin`); tasks of equal hash are ordered
  there by ``TaskId.compareTo``, which is also what this port assumes for
  the ``HashSet<TaskInfo>`` above.
* The optimisers run only when both costs are *configured*
  (``canPerformRackAwareOptimization`` checks the configuration, not the
  overrides), so the 1 / 10 defaults above are never used in practice: with
  unset costs nothing is optimised; with set costs those are used.

>>> from kipopt.instance import from_dict
>>> x = from_dict({"format": 1, "family": "tasks",
...     "topics": {"in": {"racks": [["r1"], ["r1"], ["r1"]]}},
...     "tasks": {f"0_{p}": {"inputs": [f"in-{p}"]} for p in range(3)},
...     "clients": {"a": {"active": ["0_0", "0_2"]}, "b": {"active": ["0_1"]}, "c": {}}})
>>> StickyTaskAssignor(x).assign().active  # previous actives visited in HashMap order: 0_2, 0_1, 0_0
{'a': ('0_2',), 'b': ('0_1',), 'c': ('0_0',)}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from kipopt.formulations.tasks.rules import lag_active_objective
from kipopt.instance import TasksInstance, parse_task_id
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solution import Status, TaskRoles

from kipopt.solvers.java_util import (JavaHashMapOrder, hashmap_order, hashset_copy_order, task_hashmap_order, task_id_hash,
                        to_int32, uuid_hash)
from kipopt.solvers.tasks.rack_graphs import ClientStates
from kipopt.solvers.tasks.assignment_utils import (OptimizationOutcome, RackAwareOptimizationParams,
                                          optimize_rack_aware_active_tasks, optimize_rack_aware_standby_tasks)

#: ``DEFAULT_STICKY_TRAFFIC_COST`` / ``DEFAULT_STICKY_NON_OVERLAP_COST``
DEFAULT_STICKY_TRAFFIC_COST = 1
DEFAULT_STICKY_NON_OVERLAP_COST = 10
#: ``RackAwareTaskAssignor.STATELESS_TRAFFIC_COST`` / ``STATELESS_NON_OVERLAP_COST``
STATELESS_TRAFFIC_COST = 1
STATELESS_NON_OVERLAP_COST = 0

STICKY_TASK_ASSIGNOR = "org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor"

#: Client ``i`` of the sorted ids is ``ProcessId(UUID(0, i + PROCESS_ID_RANK_BASE))`` (digest §0: "rank" = position).
PROCESS_ID_RANK_BASE = 0


class JavaArithmeticError(Exception):
    """Java throws ``ArithmeticException: / by zero`` (thread counts summing past ``int`` wrap to 0)."""


def _java_div(a: int, b: int) -> int:
    """Java ``int`` division (truncates toward zero)."""
    if b == 0:
        raise JavaArithmeticError("/ by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


@dataclass
class StickyResult:
    """The assignment ``assign`` returns, with what each optimiser did."""

    active: dict[str, tuple[str, ...]]
    standby: dict[str, tuple[str, ...]]
    stages: dict[str, OptimizationOutcome] = field(default_factory=dict)


class _TaskPairs:
    """``TaskPairs``: unordered task pairs already placed together on one client."""

    def __init__(self, task_count: int) -> None:
        self.max_pairs = _java_div(to_int32(task_count * (task_count - 1)), 2)
        self.pairs: set[tuple[str, str]] = set()

    @staticmethod
    def pair(first: str, second: str) -> tuple[str, str]:
        return (first, second) if parse_task_id(first) < parse_task_id(second) else (second, first)

    def has_new_pair(self, task: str, tasks: Sequence[str]) -> bool:
        if len(self.pairs) == self.max_pairs:
            return False
        return any(self.pair(task, t) not in self.pairs for t in tasks)

    def add_pairs(self, task: str, assigned: Sequence[str]) -> None:
        for t in assigned:
            self.pairs.add(self.pair(t, task))


class StickyTaskAssignor:
    """Port of ``StickyTaskAssignor.assign`` for one kipopt tasks instance."""

    def __init__(self, instance: TasksInstance, must_preserve_active_task_assignment: bool = False) -> None:
        self.instance = instance
        self.preserve = must_preserve_active_task_assignment
        self.clients = instance.client_ids
        self.rank = {c: i + PROCESS_ID_RANK_BASE for i, c in enumerate(self.clients)}
        self.capacity = {c: instance.clients[c].capacity for c in self.clients}
        self.all_tasks = set(instance.task_ids)
        # allTasks(): a HashMap<TaskId, TaskInfo> filled in sorted order.
        self.all_tasks_order = task_hashmap_order(instance.task_ids)
        self.previous_active, self.previous_active_order = self._previous_actives()
        self.previous_standby = self._previous_standbys()
        self.pairs = _TaskPairs(len(instance.tasks))
        self.states = ClientStates(self.clients, {c: set() for c in self.clients}, {c: set() for c in self.clients})
        self.locations: dict[str, set[str]] = {t: set() for t in self.previous_active}

    # ------------------------------------------------------------------ Java orders

    def _pid_hash(self, client: str) -> int:
        return uuid_hash((0, self.rank[client]))

    def _pid_set(self, clients: Sequence[str]) -> list[str]:
        """Iteration order of a ``HashSet<ProcessId>`` filled with ``add`` in the given order."""
        return hashmap_order(clients, self._pid_hash)

    def _previous_actives(self) -> tuple[dict[str, str], list[str]]:
        """``mapPreviousActiveTasks``: a HashMap<TaskId, ProcessId>; a task listed twice keeps its last client."""
        owner: dict[str, str] = {}
        order = JavaHashMapOrder(task_id_hash)
        for c in self.clients:
            for t in sorted(self.instance.clients[c].active, key=parse_task_id):
                owner[t] = c
                order.put(t)
        return owner, order.keys()

    def _previous_standbys(self) -> dict[str, list[str]]:
        """``mapPreviousStandbyTasks``: each task's holders, in ``HashSet<ProcessId>`` order."""
        holders: dict[str, list[str]] = {}
        for c in self.clients:
            for t in self.instance.clients[c].standby:
                holders.setdefault(t, []).append(c)
        return {t: self._pid_set(cs) for t, cs in holders.items()}

    # ------------------------------------------------------------------ AssignmentState

    def _finalize(self, task: str, client: str, role: str) -> None:
        self.pairs.add_pairs(task, self._tasks_of(client))
        self.states.assign(role, client, task)
        self.locations.setdefault(task, set()).add(client)

    def _tasks_of(self, client: str) -> list[str]:
        return [*self.states.active[client], *self.states.standby[client]]

    def _load(self, client: str) -> float:
        return (len(self.states.active[client]) + len(self.states.standby[client])) / self.capacity[client]

    def _has_room_for_active(self, client: str, per_thread: int) -> bool:
        return len(self.states.active[client]) < to_int32(self.capacity[client] * per_thread)

    def _least_loaded(self, task: str, clients: Sequence[str]) -> str | None:
        """``findLeastLoadedClient``: an empty client at once, else the least loaded that forms a new pair."""
        least: str | None = None
        for c in clients:
            load = self._load(c)
            if load == 0:
                return c
            if (least is None or load < self._load(least)) and self.pairs.has_new_pair(task, self._tasks_of(c)):
                least = c
        if least is not None:
            return least
        for c in clients:
            if least is None or self._load(c) < self._load(least):
                least = c
        return least

    def _least_loaded_previous_standby(self, task: str, within: set[str]) -> str | None:
        holders = hashset_copy_order(self.previous_standby.get(task, ()), self._pid_hash)
        return self._least_loaded(task, [c for c in holders if c in within])

    def _should_balance_load(self, client: str) -> bool:
        load = self._load(client)
        return load >= 1 and any(self._load(other) < load for other in self.clients)

    def _best_client(self, task: str, clients: Sequence[str]) -> str | None:
        """``findBestClientForTask`` over ``clients`` (in their HashSet order)."""
        if len(clients) == 1:
            return clients[0]
        within = set(clients)
        previous = self.previous_active.get(task)
        if previous is None or previous not in within:
            previous = self._least_loaded_previous_standby(task, within)
        if previous is None:
            return self._least_loaded(task, clients)
        if self._should_balance_load(previous):
            standby = self._least_loaded_previous_standby(task, within)
            if standby is None or self._should_balance_load(standby):
                return self._least_loaded(task, clients)
            return standby
        return previous

    # ------------------------------------------------------------------ steps

    def assign_active(self) -> None:
        """``assignActive``: previous owners with room, then previous standby holders, then the best client."""
        total = 0
        for c in self.clients:
            total = to_int32(total + self.capacity[c])
        per_thread = _java_div(len(self.all_tasks), total)
        unassigned = set(self.all_tasks)
        for task in self.previous_active_order:
            client = self.previous_active[task]
            if task in self.all_tasks and (self.preserve or self._has_room_for_active(client, per_thread)):
                self._finalize(task, client, "active")
                unassigned.discard(task)
        for task in hashset_copy_order(self.all_tasks_order, task_id_hash):
            if task not in unassigned:
                continue
            for client in self.previous_standby.get(task, ()):
                if self._has_room_for_active(client, per_thread):
                    self._finalize(task, client, "active")
                    unassigned.discard(task)
                    break
        everyone = self._pid_set(self.clients)
        for task in sorted(unassigned, key=parse_task_id):
            self._finalize(task, self._best_client(task, everyone), "active")

    def assign_standby(self) -> None:
        """``assignStandby``: each task with a changelog gets up to ``num_standby_replicas`` best clients."""
        x = self.instance
        stateful = [t for t in self.all_tasks_order if x.tasks[t].stateful]
        for task in task_hashmap_order(stateful):  # a HashSet<TaskInfo>, hashed here by TaskId
            for _ in range(x.config.num_standby_replicas):
                candidates = self._pid_set([c for c in self.clients if c not in self.locations[task]])
                if not candidates:
                    break  # Kafka logs a warning and leaves the task short
                self._finalize(task, self._best_client(task, candidates), "standby")

    def _process_optimized(self) -> None:
        """``processOptimizedAssignments``: task locations recomputed from the optimised assignment."""
        self.locations = {}
        for c in self.clients:
            for t in self._tasks_of(c):
                self.locations.setdefault(t, set()).add(c)

    def _cost_overrides(self) -> RackAwareOptimizationParams:
        config = self.instance.config
        traffic = config.rack_aware_assignment_traffic_cost
        non_overlap = config.rack_aware_assignment_non_overlap_cost
        return RackAwareOptimizationParams(
            None, DEFAULT_STICKY_TRAFFIC_COST if traffic is None else traffic,
            DEFAULT_STICKY_NON_OVERLAP_COST if non_overlap is None else non_overlap)

    def optimize_active(self, stages: dict[str, OptimizationOutcome]) -> None:
        if self.preserve:
            return
        x = self.instance
        stages["stateful_active"] = optimize_rack_aware_active_tasks(
            x, self._cost_overrides().for_stateful_tasks(x), self.states)
        stateless = RackAwareOptimizationParams(None, STATELESS_TRAFFIC_COST, STATELESS_NON_OVERLAP_COST)
        stages["stateless_active"] = optimize_rack_aware_active_tasks(
            x, stateless.for_stateless_tasks(x), self.states)
        self._process_optimized()

    def optimize_standby(self, stages: dict[str, OptimizationOutcome]) -> None:
        if self.instance.config.num_standby_replicas <= 0 or self.preserve:
            return
        stages["standby"] = optimize_rack_aware_standby_tasks(self.instance, self._cost_overrides(), self.states)
        self._process_optimized()

    def assign(self) -> StickyResult:
        """``assign``: actives, their rack optimisation, standbys, their rack optimisation."""
        stages: dict[str, OptimizationOutcome] = {}
        self.assign_active()
        self.optimize_active(stages)
        self.assign_standby()
        self.optimize_standby(stages)
        s = self.states
        return StickyResult({c: tuple(sorted(s.active[c], key=parse_task_id)) for c in self.clients},
                            {c: tuple(sorted(s.standby[c], key=parse_task_id)) for c in self.clients}, stages)


# ---------------------------------------------------------------------- method


def _stage_info(outcome: OptimizationOutcome) -> dict:
    if not outcome.optimized:
        return {"optimized": False, "reason": outcome.reason}
    info = {"optimized": True, "kafka_cost_before": outcome.cost_before, "kafka_cost_after": outcome.cost_after,
            "moved": outcome.moved, "negative_cycles_canceled": outcome.cycles_canceled}
    if outcome.rounds:
        info["rounds"] = outcome.rounds
    return info


def run_sticky(instance: TasksInstance, options: SolveOptions) -> MethodResult:
    """``kafka.sticky``: ``StickyTaskAssignor.assign`` from the instance's previous actives and standbys.

    The objective is the rule ``lag_active``'s (this assignor ignores lags, so its first level may be > 0).
    """
    try:
        result = StickyTaskAssignor(instance).assign()
    except JavaArithmeticError:  # Kafka's assignor fails on this input, so the port has no answer either
        return MethodResult({}, Status.INFEASIBLE, message="the clients' capacities sum past a Java int to 0 and "
                                                           "Kafka's StickyTaskAssignor throws ArithmeticException")
    assignment = {c: TaskRoles(result.active[c], result.standby[c]) for c in instance.client_ids}
    moved = sum(len(set(result.active[c]) - set(instance.clients[c].active)) for c in instance.client_ids)
    info = {"rack_aware": {name: _stage_info(o) for name, o in result.stages.items()},
            "moved_actives": moved}
    return MethodResult(assignment, Status.FEASIBLE, objective=lag_active_objective(instance, assignment), info=info)


METHODS = [
    Method("kafka.sticky", "tasks", "lag_active", run_sticky,
           "KIP-924 StickyTaskAssignor: sticky actives and load-balanced standbys, then the TaskAssignmentUtils "
           "rack-aware optimisers", kafka_class=STICKY_TASK_ASSIGNOR),
]
RULES: list = []
