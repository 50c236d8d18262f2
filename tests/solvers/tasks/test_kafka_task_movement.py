"""Kafka's ``TaskMovementTest`` scenarios, ported with Kafka's expectations (kipopt.solvers.tasks.task_movement).

Kafka's tests hand ``assignActiveTaskMovements`` the caught-up sets and lag
orders directly; so do these, through :class:`Lags`. Clients ``p1..p3`` are
Kafka's ``PID_1..PID_3``; capacity 1 each.
"""

from __future__ import annotations

from kipopt.solvers.tasks.client_state import StreamsClientStates
from kipopt.solvers.tasks.task_movement import Lags, WarmupBudget, assign_active_task_movements

ALL = ("0_0", "0_1", "0_2", "1_0", "1_1", "1_2")
UNLIMITED = 2**31 - 1


def _states(actives: dict[str, set[str]]) -> StreamsClientStates:
    order = tuple(sorted(actives))
    return StreamsClientStates(order, {c: set(actives[c]) for c in order}, {c: set() for c in order},
                               capacity={c: 1 for c in order}, tags={c: {} for c in order})


def _lags(caught_up_tasks: dict[str, set[str]], tasks, caught_up: dict[str, set[str]],
          by_lag: dict[str, tuple[str, ...]], lags: dict[str, dict[str, int]] | None = None) -> Lags:
    """``getClientStateWithActiveAssignment``: lag 0 on the client's caught-up tasks, 10000 elsewhere."""
    if lags is None:
        lags = {t: {c: 0 if t in caught_up_tasks[c] else 10_000 for c in caught_up_tasks} for t in tasks}
    return Lags(lags, {t: frozenset(cs) for t, cs in caught_up.items()}, by_lag)


def _roles(states: StreamsClientStates) -> dict[str, tuple[set[str], set[str]]]:
    return {c: (states.active[c], states.standby[c]) for c in states.order}


def test_should_assign_tasks_to_clients_and_return_false_when_all_clients_caught_up():
    states = _states({"p1": {"0_0", "1_0"}, "p2": {"0_1", "1_1"}, "p3": {"0_2", "1_2"}})
    everyone = {c: set(ALL) for c in states.order}
    lags = _lags(everyone, ALL, {t: set(states.order) for t in ALL}, {t: ("p1", "p2", "p3") for t in ALL})
    assert assign_active_task_movements(states, lags, {}, WarmupBudget(UNLIMITED)) == 0


def test_should_assign_all_tasks_to_clients_and_return_false_if_no_clients_are_caught_up():
    states = _states({"p1": {"0_0", "1_0"}, "p2": {"0_1", "1_1"}, "p3": {"0_2", "1_2"}})
    nobody = {c: set() for c in states.order}
    lags = _lags(nobody, ALL, {t: set() for t in ALL}, {t: ("p1", "p2", "p3") for t in ALL})
    assert assign_active_task_movements(states, lags, {}, WarmupBudget(UNLIMITED)) == 0


def _three_way(max_warmups: int) -> tuple[StreamsClientStates, int]:
    tasks = ("0_0", "0_1", "0_2")
    states = _states({"p1": {"0_0"}, "p2": {"0_1"}, "p3": {"0_2"}})
    lags = _lags({"p1": {"0_0"}, "p2": {"0_2"}, "p3": {"0_1"}}, tasks,
                 {"0_0": {"p1"}, "0_1": {"p3"}, "0_2": {"p2"}},
                 {"0_0": ("p1", "p2", "p3"), "0_1": ("p3", "p1", "p2"), "0_2": ("p2", "p1", "p3")})
    return states, assign_active_task_movements(states, lags, {}, WarmupBudget(max_warmups))


def test_should_move_tasks_to_caught_up_clients_and_assign_warmup_replicas_in_their_place():
    states, movements = _three_way(UNLIMITED)
    assert movements == 2
    assert _roles(states) == {"p1": ({"0_0"}, set()), "p2": ({"0_2"}, {"0_1"}), "p3": ({"0_1"}, {"0_2"})}


def test_should_move_tasks_to_most_caught_up_clients_and_assign_warmup_replicas_in_their_place():
    tasks = ("0_0", "0_1", "0_2")
    states = _states({"p1": {"0_0"}, "p2": {"0_1"}, "p3": {"0_2"}})
    states.standby["p3"].add("0_1")  # the task is already a standby on the most caught-up client
    lags = {"0_0": {"p1": 10_000, "p2": 20_000, "p3": 30_000},
            "0_1": {"p1": 20_000, "p2": 30_000, "p3": 10_000},
            "0_2": {"p1": 30_000, "p2": 10_000, "p3": 20_000}}
    lag_info = _lags({}, tasks, {t: set() for t in tasks},
                     {"0_0": ("p1", "p2", "p3"), "0_1": ("p3", "p1", "p2"), "0_2": ("p2", "p3", "p1")}, lags)
    assert assign_active_task_movements(states, lag_info, {}, WarmupBudget(UNLIMITED)) == 2
    assert _roles(states) == {"p1": ({"0_0"}, set()), "p2": ({"0_2"}, {"0_1"}), "p3": ({"0_1"}, {"0_2"})}


def test_should_only_get_up_to_max_warmup_replicas_and_return_true():
    states, movements = _three_way(1)
    assert movements == 2
    # the actives still move to caught-up clients; only the first movement keeps a warm-up
    assert _roles(states) == {"p1": ({"0_0"}, set()), "p2": ({"0_2"}, {"0_1"}), "p3": ({"0_1"}, set())}


def test_should_not_count_previous_standby_tasks_towards_max_warmup_replicas():
    states = _states({"p1": set(), "p2": {"0_0"}})
    states.standby["p1"].add("0_0")
    lags = _lags({"p1": {"0_0"}, "p2": set()}, ("0_0",), {"0_0": {"p1"}}, {"0_0": ("p1", "p2")})
    warmups: dict[str, set[str]] = {}
    assert assign_active_task_movements(states, lags, warmups, WarmupBudget(0)) == 1
    # a caught-up standby swaps roles with the lagging active: no warm-up is needed or recorded
    assert _roles(states) == {"p1": ({"0_0"}, set()), "p2": (set(), {"0_0"})}
    assert not any(warmups.values())
