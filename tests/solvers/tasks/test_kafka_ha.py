"""``kafka.ha``: KIP-441's stories and Kafka's ``HighAvailabilityTaskAssignorTest`` scenarios.

Kafka's test clients ``PID_1..PID_3`` are ``p1..p3`` here. Kafka's scenarios
are parameterised over the three rack strategies with a mock cluster; these
ports run them with strategy ``none`` (the rack-aware steps are the KIP-925
port's, cross-checked elsewhere). ``Long.MAX_VALUE`` lags stay Long.MAX_VALUE.
"""

from __future__ import annotations

import dataclasses

import pytest

from kipopt.datasets import load_scenario, scenario_solutions
from kipopt.instance import from_dict
from kipopt.solvers.tasks.high_availability import run_ha

LONG_MAX = 2**63 - 1


def ha_instance(clients: dict[str, dict], stateful: list[str], stateless: list[str] = (), **config):
    """Clients ``{id: {"capacity": k, "lags": {task: lag}}}``; every stateful task's lag is given."""
    tasks = list(stateful) + list(stateless)
    doc = {"format": 1, "family": "tasks",
           "topics": {"in": {"racks": [[]] * len(tasks)}, "cl": {"racks": [[]] * len(tasks)}},
           "tasks": {t: ({"inputs": [f"in-{i}"], "changelogs": [f"cl-{i}"], "end_offset": LONG_MAX}
                         if t in stateful else {"inputs": [f"in-{i}"]}) for i, t in enumerate(tasks)},
           "clients": clients, "config": config}
    return from_dict(doc)


def caught_up_on(previous: set[str], stateful: list[str], capacity: int = 1) -> dict:
    """``getMockClientWithPreviousCaughtUpTasks``: lag 0 on its previous tasks, Long.MAX_VALUE elsewhere."""
    return {"capacity": capacity, "active": sorted(previous),
            "lags": {t: 0 if t in previous else LONG_MAX for t in stateful}}


def roles(result) -> dict[str, tuple[set[str], set[str], set[str]]]:
    return {c: (set(r.active), set(r.standby), set(r.warmup)) for c, r in result.assignment.items()}


def assigned(result, client: str) -> int:
    r = result.assignment[client]
    return len(r.active) + len(r.standby) + len(r.warmup)


def copies(result) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in result.assignment.values():
        for t in r.active + r.standby + r.warmup:
            out[t] = out.get(t, 0) + 1
    return out


NINE = ["0_0", "0_1", "0_2", "1_0", "1_1", "1_2", "2_0", "2_1", "2_2"]
STATEFUL4 = ["0_0", "0_1", "0_2", "0_3"]


# --------------------------------------------------------------------------- KIP-441's stories


def _kip_roles(solution) -> dict[str, tuple[set[str], set[str], set[str]]]:
    return {c: (set(r["active"]), set(r["standby"]), set(r["warmup"])) for c, r in solution["assignment"].items()}


@pytest.mark.parametrize("name", ["kip441_scale_in_a", "kip441_scale_in_b"])
def test_kip441_scale_in_first_rebalance_is_the_kips_table(name):
    r = run_ha(load_scenario(name), None)
    assert roles(r) == _kip_roles(scenario_solutions(name)["first_rebalance"])
    assert r.info["probing_rebalance_needed"]


def test_kip441_scale_in_b_second_rebalance_once_i3_restored_t4():
    """Feed the first rebalance back: I2 now runs T1, T2, T4 (caught up); I3 restored T4, still lags on T2."""
    x = load_scenario("kip441_scale_in_b")
    clients = dict(x.clients)
    clients["I2"] = dataclasses.replace(clients["I2"], active=("0_0", "0_1", "0_3"), standby=("0_2",),
                                        lags={"0_0": 0, "0_1": 0, "0_3": 0})
    clients["I3"] = dataclasses.replace(clients["I3"], active=("0_2",), standby=("0_0", "0_1", "0_3"),
                                        lags={"0_2": 0, "0_3": 0, "0_1": 52_000})
    r = run_ha(dataclasses.replace(x, clients=clients), None)
    assert roles(r) == _kip_roles(scenario_solutions("kip441_scale_in_b")["second_rebalance"])


def test_kip441_scale_out_first_rebalance_keeps_actives_and_warms_up_the_new_instance():
    """The KIP's table: actives unchanged, I3 warms up two tasks (max.warmup.replicas = 2), a probing rebalance
    follows. Kafka picks T2 and T3 for I3's warm-ups where the KIP's table shows T1 and T3."""
    r = run_ha(load_scenario("kip441_scale_out"), None)
    kip = _kip_roles(scenario_solutions("kip441_scale_out")["first_rebalance"])
    assert {c: a for c, (a, _, _) in roles(r).items()} == {c: a for c, (a, _, _) in kip.items()}
    assert roles(r)["I3"] == (set(), set(), {"0_1", "0_2"})
    assert r.info == dict(r.info, probing_rebalance_needed=True, active_task_movements=1, standby_task_movements=2)


def test_kip441_scale_out_second_rebalance_moves_t3_to_the_warmed_up_instance():
    """Feed the first rebalance back (I3 caught up on what it warmed): the KIP's stable actives, one standby per
    task, no warm-ups, no probing rebalance."""
    x = load_scenario("kip441_scale_out")
    clients = dict(x.clients)
    clients["I3"] = dataclasses.replace(clients["I3"], standby=("0_1", "0_2"), lags={"0_1": 0, "0_2": 0})
    r = run_ha(dataclasses.replace(x, clients=clients), None)
    kip = _kip_roles(scenario_solutions("kip441_scale_out")["second_rebalance"])
    assert {c: a for c, (a, _, _) in roles(r).items()} == {c: a for c, (a, _, _) in kip.items()}
    assert copies(r) == {"0_0": 2, "0_1": 2, "0_2": 2} and not any(w for _, _, w in roles(r).values())
    assert r.info["probing_rebalance_needed"] is False


# --------------------------------------------------------------------------- HighAvailabilityTaskAssignorTest


def test_should_be_sticky_for_active_and_standby_tasks_while_warming_up():
    clients = {"p1": {"lags": {t: 0 for t in NINE}}, "p2": {"lags": {t: 10 for t in NINE}},
               "p3": {"lags": {t: LONG_MAX for t in NINE}}}
    r = run_ha(ha_instance(clients, NINE, acceptable_recovery_lag=11, max_warmup_replicas=2,
                           num_standby_replicas=1), None)
    assert (assigned(r, "p1"), assigned(r, "p2"), assigned(r, "p3")) == (9, 9, 2)
    assert r.info["probing_rebalance_needed"] is True


def test_should_skip_warmups_when_acceptable_lag_is_max():
    clients = {"p1": {"lags": {t: 0 for t in NINE}}, "p2": {"lags": {t: LONG_MAX for t in NINE}},
               "p3": {"lags": {t: LONG_MAX for t in NINE}}}
    r = run_ha(ha_instance(clients, NINE, acceptable_recovery_lag=LONG_MAX, max_warmup_replicas=1,
                           num_standby_replicas=1), None)
    assert (assigned(r, "p1"), assigned(r, "p2"), assigned(r, "p3")) == (6, 6, 6)
    assert r.info["probing_rebalance_needed"] is False


def test_should_compute_new_assignment_if_active_tasks_was_not_on_caught_up_client():
    clients = {"p1": {"active": ["0_0"], "lags": {"0_0": 500}}, "p2": {"active": ["0_1"], "lags": {"0_0": 0}}}
    r = run_ha(ha_instance(clients, ["0_0"], ["0_1"], acceptable_recovery_lag=100), None)
    assert roles(r)["p1"][0] == {"0_1"} and roles(r)["p2"][0] == {"0_0"}
    assert r.info["probing_rebalance_needed"] is True


def test_should_assign_to_most_caught_up_if_active_tasks_was_not_on_caught_up_client():
    clients = {"p1": {"lags": {"0_0": LONG_MAX}}, "p2": {"lags": {"0_0": 1000}}, "p3": {"lags": {"0_0": 500}}}
    r = run_ha(ha_instance(clients, ["0_0"], acceptable_recovery_lag=100, num_standby_replicas=1), None)
    # Kafka: p1 keeps a warm-up standby, p2 the standby, p3 the active
    assert roles(r) == {"p1": (set(), set(), {"0_0"}), "p2": (set(), {"0_0"}, set()), "p3": ({"0_0"}, set(), set())}
    assert r.info["probing_rebalance_needed"] is True


def test_should_assign_warmup_replicas_even_if_no_standby_replicas_configured():
    clients = {"p1": caught_up_on({"0_0", "0_1"}, ["0_0", "0_1"]), "p2": caught_up_on(set(), ["0_0", "0_1"])}
    r = run_ha(ha_instance(clients, ["0_0", "0_1"], acceptable_recovery_lag=100), None)
    got = roles(r)
    assert got["p1"] == ({"0_0", "0_1"}, set(), set())
    assert not got["p2"][0] and len(got["p2"][1] | got["p2"][2]) == 1
    assert r.info["probing_rebalance_needed"] is True


def test_should_not_assign_more_than_max_warmup_replicas():
    clients = {"p1": caught_up_on(set(STATEFUL4), STATEFUL4), "p2": caught_up_on(set(), STATEFUL4)}
    r = run_ha(ha_instance(clients, STATEFUL4, acceptable_recovery_lag=100, max_warmup_replicas=1), None)
    got = roles(r)
    assert got["p1"] == (set(STATEFUL4), set(), set())
    assert not got["p2"][0] and len(got["p2"][1] | got["p2"][2]) == 1
    assert r.info["probing_rebalance_needed"] is True


def test_should_not_assign_warmup_and_standby_to_the_same_client():
    clients = {"p1": caught_up_on(set(STATEFUL4), STATEFUL4), "p2": caught_up_on(set(), STATEFUL4)}
    r = run_ha(ha_instance(clients, STATEFUL4, acceptable_recovery_lag=100, max_warmup_replicas=1,
                           num_standby_replicas=1), None)
    got = roles(r)
    assert got["p1"] == (set(STATEFUL4), set(), set())
    assert not got["p2"][0] and got["p2"][1] | got["p2"][2] == set(STATEFUL4)
    assert not got["p2"][1] & got["p2"][2]
    assert r.info["probing_rebalance_needed"] is True


@pytest.mark.parametrize("previous", [{"0_0", "0_1"}, set()])
def test_a_single_client_gets_every_active_and_no_standby(previous):
    """shouldNotAssignAnyStandbysWithInsufficientCapacity / shouldAssignActiveTasksToNotCaughtUpClientIfNoneExist."""
    clients = {"p1": caught_up_on(previous, ["0_0", "0_1"])}
    r = run_ha(ha_instance(clients, ["0_0", "0_1"], acceptable_recovery_lag=100, num_standby_replicas=1), None)
    assert roles(r) == {"p1": ({"0_0", "0_1"}, set(), set())}
    assert r.info["probing_rebalance_needed"] is False


def test_should_not_assign_more_than_max_warmup_replicas_with_standbys():
    clients = {"p1": caught_up_on(set(STATEFUL4), STATEFUL4), "p2": caught_up_on(set(), STATEFUL4),
               "p3": caught_up_on(set(), STATEFUL4)}
    r = run_ha(ha_instance(clients, STATEFUL4, acceptable_recovery_lag=100, num_standby_replicas=1), None)
    # assertValidAssignment(1 standby, 2 warm-ups): 2 copies per task, 3 for at most two tasks
    extra = sorted(n - 2 for n in copies(r).values())
    assert extra[:2] == [0, 0] and all(e in (0, 1) for e in extra) and sum(extra) <= 2
    assert sum(len(w) for _, _, w in roles(r).values()) == sum(extra)
    assert r.info["probing_rebalance_needed"] is True


def test_should_distribute_stateless_tasks_to_balance_total_task_load():
    clients = {"p1": caught_up_on(set(STATEFUL4), STATEFUL4), "p2": caught_up_on(set(), STATEFUL4)}
    r = run_ha(ha_instance(clients, STATEFUL4, ["1_0", "1_1", "1_2"], acceptable_recovery_lag=100,
                           num_standby_replicas=1), None)
    got = roles(r)
    # only p1 is caught up on the stateful tasks, so p2 gets every stateless task
    assert got["p1"][0] == set(STATEFUL4) and got["p2"][0] == {"1_0", "1_1", "1_2"}
    assert r.info["probing_rebalance_needed"] is True


def test_should_assign_active_stateful_tasks_evenly_over_unevenly_distributed_stream_threads():
    six = ["0_0", "0_1", "0_2", "1_0", "1_1", "1_2"]
    clients = {c: {"capacity": k, "lags": {t: 10 for t in six}} for c, k in (("p1", 1), ("p2", 2), ("p3", 3))}
    r = run_ha(ha_instance(clients, six, acceptable_recovery_lag=0, max_warmup_replicas=1), None)
    assert [len(roles(r)[c][0]) for c in ("p1", "p2", "p3")] == [1, 2, 3]
    assert r.info["probing_rebalance_needed"] is False


def test_should_assign_warm_up_tasks_if_stateful_active_tasks_balanced_over_stream_threads_but_not_over_clients():
    four = ["0_0", "0_1", "1_0", "1_1"]
    clients = {"p1": {"capacity": 5, "active": four, "lags": {t: 0 for t in four}},
               "p2": {"capacity": 5, "lags": {t: LONG_MAX for t in four}},
               "p3": {"capacity": 5, "lags": {t: LONG_MAX for t in four}}}
    r = run_ha(ha_instance(clients, four, acceptable_recovery_lag=0, max_warmup_replicas=2), None)
    got = roles(r)
    assert got["p1"][0] == set(four)
    assert len(got["p2"][2]) >= 1 and len(got["p3"][2]) >= 1
    assert r.info["probing_rebalance_needed"] is True


def test_should_distribute_stateless_tasks_evenly_over_clients_with_unevenly_distributed_threads():
    stateless = ["0_0", "0_1", "0_2", "0_3", "1_0", "1_1", "1_2"]
    clients = {c: {"capacity": k} for c, k in (("p1", 1), ("p2", 2), ("p3", 3))}
    r = run_ha(ha_instance(clients, [], stateless, acceptable_recovery_lag=0, max_warmup_replicas=1), None)
    loads = [len(roles(r)[c][0]) / k for c, k in (("p1", 1), ("p2", 2), ("p3", 3))]
    assert sum(len(roles(r)[c][0]) for c in roles(r)) == 7 and max(loads) - min(loads) <= 1
    assert r.info["probing_rebalance_needed"] is False
