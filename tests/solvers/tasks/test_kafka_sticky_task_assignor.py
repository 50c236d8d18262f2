"""The port of Kafka's KIP-924 ``StickyTaskAssignor`` (``kafka.sticky``) and of ``TaskAssignmentUtils``.

First Kafka's own scenarios: ``CustomStickyTaskAssignorTest`` (Kafka's tests
of the KIP-924 ``StickyTaskAssignor``) and the ``TaskAssignmentUtilsTest``
scenarios of the two rack-aware optimisers, rebuilt as kipopt instances
(Kafka's ``processId(n)`` is client ``p<n>``; ``mkTaskInfo``'s partition
``test-topic-<subtopology>``/``<partition>`` is the task's input and, for a
stateful task, its changelog). Then assignments produced by Kafka's own
``StickyTaskAssignor`` on generated instances, the quirks of the KIP-924
helpers, and properties on generated instances.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipopt import api
from kipopt.datasets import generate
from kipopt.instance import from_dict
from kipopt.methods import methods
from kipopt.solution import Status
from kipopt.solvers.java_util import hashset_copy_order, task_id_hash
from kipopt.solvers.tasks.rack_aware import tag_aware_move_predicate
from kipopt.solvers.tasks.rack_graphs import ClientStates
from kipopt.solvers.tasks.sticky_task_assignor import STICKY_TASK_ASSIGNOR, StickyTaskAssignor, run_sticky
from kipopt.solvers.tasks.assignment_utils import (RackAwareOptimizationParams, graph_constructor,
                                                        optimize_rack_aware_active_tasks,
                                                        optimize_rack_aware_standby_tasks, skip_reason,
                                                        task_partitions)

STRATEGIES = ("none", "min_traffic", "balance_subtopology")
DATA = Path(__file__).parent / "data" / "sticky_kafka_outputs.json"

# --------------------------------------------------------------------------- Kafka's test fixtures


def _instance(tasks: dict[str, bool], clients: dict[int, dict], num_standby: int = 0, strategy: str = "none",
              costs: tuple[int, int] | None = None, task_racks: dict[str, list[str]] | None = None,
              tags: list[str] | None = None) -> object:
    """``TestApplicationState`` of ``mkTaskInfo`` tasks and ``mkStreamState`` clients.

    ``clients[n]`` = dict(capacity, rack, active, standby, tags). A task without
    racks gets a partition with an empty replica-rack list (Kafka: no racks).
    """
    task_racks = task_racks or {}
    width: Counter = Counter()
    for t in tasks:
        g, p = map(int, t.split("_"))
        width[g] = max(width[g], p + 1)
    topics = {f"test-topic-{g}": {"racks": [[] for _ in range(n)]} for g, n in width.items()}
    specs = {}
    for t, stateful in tasks.items():
        g, p = t.split("_")
        topics[f"test-topic-{g}"]["racks"][int(p)] = task_racks.get(t, [])
        partition = f"test-topic-{g}-{p}"
        specs[t] = {"inputs": [partition], "changelogs": [partition] if stateful else [], "stateful": stateful}
    config = {"num_standby_replicas": num_standby, "rack_aware_assignment_strategy": strategy}
    if costs is not None:
        config.update(rack_aware_assignment_traffic_cost=costs[0], rack_aware_assignment_non_overlap_cost=costs[1])
    if tags:
        config["rack_aware_assignment_tags"] = tags
    cs = {f"p{n}": {"capacity": c.get("capacity", 1), "rack": c.get("rack"), "active": c.get("active", []),
                    "standby": c.get("standby", []), "tags": c.get("tags", {})} for n, c in clients.items()}
    return from_dict({"format": 1, "family": "tasks", "topics": topics, "tasks": specs, "clients": cs,
                      "config": config})


def _clients(*capacities: int, **lists) -> dict[int, dict]:
    """``mkStreamState(n, capacity, Optional.empty(), active, standby)`` for n = 1, 2, ..."""
    out = {}
    for n, capacity in enumerate(capacities, start=1):
        out[n] = {"capacity": capacity, "active": lists.get(f"a{n}", []), "standby": lists.get(f"s{n}", [])}
    return out


def _assign(x):
    return StickyTaskAssignor(x).assign()


def _tasks(r, n: int) -> set[str]:
    return set(r.active[f"p{n}"]) | set(r.standby[f"p{n}"])


STATELESS3 = {"0_0": False, "0_1": False, "0_2": False}
STATEFUL3 = {"0_0": True, "0_1": True, "0_2": True}

# --------------------------------------------------------------------------- CustomStickyTaskAssignorTest


@pytest.mark.parametrize("strategy", STRATEGIES)
class TestCustomStickyTaskAssignorScenarios:
    def test_one_active_task_to_each_process_when_task_count_same_as_process_count(self, strategy):
        r = _assign(_instance(STATELESS3, _clients(1, 1, 1), strategy=strategy))
        assert all(len(_tasks(r, n)) == 1 for n in (1, 2, 3))

    @pytest.mark.parametrize("num_standby", [0, 1])
    def test_topic_group_ids_evenly_across_clients(self, strategy, num_standby):
        tasks = {t: False for t in ("1_0", "1_1", "2_2", "2_0", "2_1", "1_2")}
        r = _assign(_instance(tasks, _clients(2, 2, 2), num_standby, strategy))
        for n in (1, 2, 3):
            assert sorted(int(t.split("_")[0]) for t in _tasks(r, n)) == [1, 2]

    def test_does_not_migrate_active_task_to_other_process(self, strategy):
        r = _assign(_instance(STATELESS3, _clients(1, 1, a1=["0_0"], a2=["0_1"]), strategy=strategy))
        assert "0_0" in r.active["p1"] and "0_1" in r.active["p2"]
        r = _assign(_instance(STATELESS3, _clients(1, 1, a1=["0_1"], a2=["0_0"]), strategy=strategy))
        assert "0_1" in r.active["p1"] and "0_0" in r.active["p2"]

    def test_migrates_active_tasks_to_new_process_without_changing_all_assignments(self, strategy):
        r = _assign(_instance(STATELESS3, _clients(1, 1, 1, a1=["0_0", "0_2"], a2=["0_1"]), strategy=strategy))
        assert [len(_tasks(r, n)) for n in (1, 2, 3)] == [1, 1, 1]
        assert "0_1" in r.active["p2"]

    def test_assigns_based_on_capacity(self, strategy):
        r = _assign(_instance(STATELESS3, _clients(1, 2), strategy=strategy))
        assert (len(_tasks(r, 1)), len(_tasks(r, 2))) == (1, 2)

    def test_assigns_tasks_evenly_with_unequal_topic_group_sizes(self, strategy):
        tasks = {"1_0": False, **{f"0_{p}": False for p in range(6)}}
        r = _assign(_instance(tasks, _clients(1, 1, a1=sorted(tasks)), strategy=strategy))
        one, two = set(r.active["p1"]), set(r.active["p2"])
        assert sorted((len(one), len(two))) == [3, 4]
        assert two == set(tasks) - one

    def test_keeps_active_task_stickiness_when_more_clients_than_active_tasks(self, strategy):
        r = _assign(_instance(STATELESS3, _clients(1, 1, 1, 1, 1, a1=["0_0"], a2=["0_2"], a3=["0_1"]),
                              strategy=strategy))
        assert [len(_tasks(r, n)) for n in range(1, 6)] == [1, 1, 1, 0, 0]
        assert (r.active["p1"], r.active["p2"], r.active["p3"]) == (("0_0",), ("0_2",), ("0_1",))
        r = _assign(_instance(STATELESS3, _clients(1, 1, 1, 1, 1, a3=["0_1"], a4=["0_0"], a5=["0_2"]),
                              strategy=strategy))
        assert [len(_tasks(r, n)) for n in range(1, 6)] == [0, 0, 1, 1, 1]
        assert (r.active["p3"], r.active["p4"], r.active["p5"]) == (("0_1",), ("0_0",), ("0_2",))

    # Kafka's next two tests give *stateless* tasks previous standbys, which a kipopt instance cannot
    # state; with no standbys configured and no optimisation, stateful tasks behave identically.
    def test_assigns_tasks_to_client_with_previous_standby_tasks(self, strategy):
        r = _assign(_instance(STATEFUL3, _clients(1, 1, 1, s1=["0_2"], s2=["0_1"], s3=["0_0"]), strategy=strategy))
        assert (r.active["p1"], r.active["p2"], r.active["p3"]) == (("0_2",), ("0_1",), ("0_0",))

    def test_assigns_based_on_capacity_when_multiple_clients_have_standby_tasks(self, strategy):
        r = _assign(_instance(STATEFUL3, _clients(1, 2, a1=["0_0"], s1=["0_1"], a2=["0_2"], s2=["0_1"]),
                              strategy=strategy))
        assert (len(_tasks(r, 1)), len(_tasks(r, 2))) == (1, 2)
        assert r.active["p1"] == ("0_0",) and set(r.active["p2"]) == {"0_1", "0_2"}

    def test_standbys_on_a_different_client_than_their_active(self, strategy):
        tasks = {f"0_{p}": True for p in range(4)}
        r = _assign(_instance(tasks, _clients(1, 1, 1, 1, a1=["0_0"], a2=["0_1"], a3=["0_2"], a4=["0_3"]), 1,
                              strategy))
        for n in range(1, 5):
            assert len(r.standby[f"p{n}"]) <= 2
            assert f"0_{n - 1}" in r.active[f"p{n}"] and f"0_{n - 1}" not in r.standby[f"p{n}"]
        assert sum(1 for n in range(1, 5) if r.standby[f"p{n}"]) >= 3
        assert {t for n in range(1, 5) for t in r.standby[f"p{n}"]} == set(tasks)

    def test_assigns_multiple_replicas_of_standby_task(self, strategy):
        r = _assign(_instance(STATEFUL3, _clients(1, 1, 1, a1=["0_0"], a2=["0_1"], a3=["0_2"]), 2, strategy))
        assert (r.active["p1"], r.active["p2"], r.active["p3"]) == (("0_0",), ("0_1",), ("0_2",))
        assert (r.standby["p1"], r.standby["p2"], r.standby["p3"]) == (("0_1", "0_2"), ("0_0", "0_2"), ("0_0", "0_1"))

    def test_no_standby_replica_when_no_client_is_free_of_the_task(self, strategy):
        r = _assign(_instance({"0_0": True}, _clients(1, a1=["0_0"]), 2, strategy))
        assert (r.active["p1"], r.standby["p1"]) == (("0_0",), ())

    def test_assigns_active_and_standby_tasks(self, strategy):
        r = _assign(_instance(STATEFUL3, _clients(1, 1, 1), 1, strategy))
        assert {t for ts in r.active.values() for t in ts} == set(STATEFUL3)
        assert {t for ts in r.standby.values() for t in ts} == set(STATEFUL3)

    def test_at_least_one_task_to_each_client_if_possible(self, strategy):
        r = _assign(_instance(STATELESS3, _clients(3, 1, 1), strategy=strategy))
        assert [len(r.active[f"p{n}"]) for n in (1, 2, 3)] == [1, 1, 1]

    def test_each_active_task_to_one_client_when_more_clients_than_tasks(self, strategy):
        r = _assign(_instance(STATELESS3, _clients(1, 1, 1, 1, 1, 1), strategy=strategy))
        assert sorted(t for ts in r.active.values() for t in ts) == sorted(STATELESS3)
        assert not any(r.standby.values())
        assert sum(1 for n in range(1, 7) if _tasks(r, n)) >= 3

    def test_balances_active_and_standby_tasks_across_available_clients(self, strategy):
        r = _assign(_instance(STATEFUL3, _clients(1, 1, 1, 1, 1, 1), 1, strategy))
        assert all(_tasks(r, n) for n in range(1, 7))

    def test_more_tasks_to_client_with_more_capacity(self, strategy):
        tasks = {f"{g}_{p}": False for g in range(4) for p in range(3)}
        r = _assign(_instance(tasks, _clients(1, 2), strategy=strategy))
        assert (len(r.active["p1"]), len(r.active["p2"])) == (4, 8)

    @pytest.mark.parametrize("previous", [{}, {"a1": ["0_1", "0_2"], "a2": ["0_3"], "a3": ["0_0"]}])
    def test_no_two_hosts_with_the_same_assignment(self, strategy, previous):
        tasks = {f"0_{p}": True for p in range(4)}
        r = _assign(_instance(tasks, _clients(1, 1, 1, 1, **previous), 1, strategy))
        held = [frozenset(_tasks(r, n)) for n in range(1, 5)]
        assert len(set(held)) == 4

    def test_assigns_multiple_standbys(self, strategy):
        r = _assign(_instance({"0_0": True, "0_1": False, "0_2": False}, _clients(1, 1, 1, 1), 3, strategy))
        assert [r.standby[f"p{n}"] for n in range(1, 5)] == [(), ("0_0",), ("0_0",), ("0_0",)]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_large_assignment_terminates(strategy):
    """``largeAssignmentShouldTerminateWithinAcceptableTime``, a fifth of its size (rack-aware, costs 1 / 2)."""
    topics, per_topic, standbys, n_clients, capacity = 6, 10, 2, 12, 50
    tasks = {f"{i}_{j}": True for i in range(topics) for j in range(per_topic)}
    racks = {f"{i}_{j}": [f"rack-{(i * j) % 31}"] for i in range(topics) for j in range(per_topic)}
    clients = {i + 1: {"capacity": capacity, "rack": f"rack-{i % 31}"} for i in range(n_clients)}
    x = _instance(tasks, clients, standbys, strategy, (1, 2), racks)
    r = _assign(x)
    assert sorted(t for ts in r.active.values() for t in ts) == sorted(tasks)
    assert len([t for ts in r.standby.values() for t in ts]) == len(tasks) * standbys
    assert r.stages["stateful_active"].optimized == r.stages["standby"].optimized == (strategy != "none")
    assert r.stages["stateless_active"].reason in ("no active tasks to optimize",
                                                   "rack.aware.assignment.strategy is none")


# --------------------------------------------------------------------------- TaskAssignmentUtilsTest


def _states(x, active: dict[int, list[str]], standby: dict[int, list[str]] | None = None) -> ClientStates:
    standby = standby or {}
    order = x.client_ids
    return ClientStates(order, {c: set(active.get(int(c[1:]), ())) for c in order},
                        {c: set(standby.get(int(c[1:]), ())) for c in order})


@pytest.mark.parametrize("strategy", ["min_traffic", "balance_subtopology"])
def test_optimize_active_task_simple(strategy):
    x = _instance({"0_0": True, "0_1": True}, {1: {"rack": "rack-1"}, 2: {"rack": "rack-2"}}, 1, strategy,
                  (100, 1), {"0_0": ["rack-2"], "0_1": ["rack-1"]})
    states = _states(x, {1: ["0_0"], 2: ["0_1"]})
    for _ in range(2):  # the second round must not move anything back
        outcome = optimize_rack_aware_active_tasks(x, RackAwareOptimizationParams(), states)
        assert outcome.optimized and states.active == {"p1": {"0_1"}, "p2": {"0_0"}}


@pytest.mark.parametrize("strategy", ["min_traffic", "balance_subtopology"])
def test_optimize_standby_tasks_basic(strategy):
    x = _instance({"0_0": True, "0_1": True}, {n: {"capacity": 2, "rack": f"rack-{n}"} for n in (1, 2, 3)}, 1,
                  strategy, (100, 1), {"0_0": ["rack-2"], "0_1": ["rack-3"]})
    states = _states(x, {1: ["0_0", "0_1"]}, {2: ["0_1"], 3: ["0_0"]})
    outcome = optimize_rack_aware_standby_tasks(x, RackAwareOptimizationParams(), states)
    assert outcome.optimized and outcome.moved == 2
    assert states.standby == {"p1": set(), "p2": {"0_0"}, "p3": {"0_1"}}


@pytest.mark.parametrize("strategy", ["min_traffic", "balance_subtopology"])
def test_does_not_violate_client_tags_during_standby_optimization(strategy):
    zones = {1: "1", 2: "2", 3: "3", 4: "2"}
    clients = {n: {"capacity": 2, "rack": "r1", "tags": {"az": az}} for n, az in zones.items()}
    x = _instance({"0_0": True, "0_1": True}, clients, 2, strategy, (100, 1), {"0_0": ["r1"], "0_1": ["r1"]}, ["az"])
    states = _states(x, {1: ["0_0"], 2: ["0_1"]}, {1: ["0_1"], 2: ["0_0"], 3: ["0_0", "0_1"]})
    optimize_rack_aware_standby_tasks(x, RackAwareOptimizationParams(), states)
    assert [states.active[c] | states.standby[c] for c in x.client_ids] == [{"0_0", "0_1"}] * 3 + [set()]


@pytest.mark.parametrize("strategy", ["min_traffic", "balance_subtopology"])
def test_optimize_active_tasks_with_multiple_racks_keeps_a_free_assignment(strategy):
    racks = {"0_0": ["rack-1", "rack-2"], "0_1": ["rack-2", "rack-3"], "0_2": ["rack-3", "rack-4"]}
    x = _instance(dict.fromkeys(racks, True), {n: {"capacity": 2, "rack": f"rack-{n}"} for n in (1, 2, 3)}, 1,
                  strategy, (100, 1), racks)
    states = _states(x, {1: ["0_0"], 2: ["0_1"], 3: ["0_2"]})
    params = RackAwareOptimizationParams(("0_0", "0_1", "0_2"))
    assert optimize_rack_aware_active_tasks(x, params, states).cost_after == 0
    assert states.active == {"p1": {"0_0"}, "p2": {"0_1"}, "p3": {"0_2"}}


def test_must_preserve_active_task_assignment_keeps_every_previous_active():
    x = _instance(STATELESS3, _clients(1, 1, 1, a1=["0_0", "0_1", "0_2"]), strategy="min_traffic", costs=(1, 1))
    r = StickyTaskAssignor(x, must_preserve_active_task_assignment=True).assign()
    assert r.active == {"p1": ("0_0", "0_1", "0_2"), "p2": (), "p3": ()} and not r.stages
    assert [len(ts) for ts in _assign(x).active.values()] == [1, 1, 1]


# --------------------------------------------------------------------------- Kafka's own outputs


def _kafka_cases():
    return json.loads(DATA.read_text())["cases"]


@pytest.mark.parametrize("case", _kafka_cases(), ids=lambda c: f"{len(c['instance']['tasks'])}x"
                         f"{len(c['instance']['clients'])}-{c['instance']['config']['rack_aware_assignment_strategy']}")
def test_reproduces_kafkas_assignment(case):
    """Assignments of Kafka's ``StickyTaskAssignor`` (compiled at the pinned commit) on generated instances."""
    x = from_dict(case["instance"])
    r = _assign(x)
    got = {c: {"active": list(r.active[c]), "standby": list(r.standby[c])} for c in x.client_ids}
    assert got == case["kafka"]


def test_kafka_cases_cover_every_stage():
    seen = Counter()
    for case in _kafka_cases():
        x = from_dict(case["instance"])
        for name, o in _assign(x).stages.items():
            seen[name, o.optimized and o.moved > 0] += 1
    assert all(seen[name, True] for name in ("stateful_active", "stateless_active", "standby"))


# --------------------------------------------------------------------------- KIP-924 helper quirks


def _two_rack_instance(**config) -> object:
    """Stateful 0_0 and 0_1 on one client of rack a; their input is on rack b, their changelog on rack a."""
    d = {"format": 1, "family": "tasks",
         "topics": {"in": {"racks": [["b"], ["b"]]}, "cl": {"racks": [["a"], ["a"]]}},
         "tasks": {f"0_{p}": {"inputs": [f"in-{p}"], "changelogs": [f"cl-{p}"]} for p in (0, 1)},
         "clients": {"x": {"rack": "a", "active": ["0_0"]}, "y": {"rack": "b", "active": ["0_1"]}},
         "config": {"rack_aware_assignment_strategy": "min_traffic", **config}}
    return from_dict(d)


def test_optimisers_need_configured_costs_even_with_overrides():
    x = _two_rack_instance()
    states = _states_of(x)
    outcome = optimize_rack_aware_active_tasks(x, RackAwareOptimizationParams(None, 1, 10), states)
    assert not outcome.optimized and "traffic_cost" in outcome.reason
    x = _two_rack_instance(rack_aware_assignment_traffic_cost=1)
    assert "non_overlap_cost" in skip_reason(x, standby=False)


def _states_of(x) -> ClientStates:
    return ClientStates(x.client_ids, {c: set(x.clients[c].active) for c in x.client_ids},
                        {c: set(x.clients[c].standby) for c in x.client_ids})


def test_active_cost_counts_inputs_and_changelogs():
    x = _two_rack_instance(rack_aware_assignment_traffic_cost=10, rack_aware_assignment_non_overlap_cost=1)
    assert task_partitions(x, "0_0", standby=False) == ("in-0", "cl-0")
    assert task_partitions(x, "0_0", standby=True) == ("cl-0",)
    # Each task has one partition on each rack, so every placement costs the same: nothing moves
    # (the legacy cost over inputs alone would pay nothing to trade the two tasks).
    states = _states_of(x)
    outcome = optimize_rack_aware_active_tasks(x, RackAwareOptimizationParams(), states)
    assert outcome.optimized and outcome.moved == 0 and outcome.cost_before == outcome.cost_after == 20


def test_rack_checks_cover_every_task_and_client():
    d = json.loads(json.dumps({"format": 1, "family": "tasks",
                               "topics": {"in": {"racks": [["a"], ["a"]]}, "cl": {"racks": [["a"], []]}},
                               "tasks": {"0_0": {"inputs": ["in-0"]},
                                         "1_0": {"inputs": ["in-1"], "changelogs": ["cl-1"]}},
                               "clients": {"x": {"rack": "a", "active": ["0_0", "1_0"]}, "y": {"rack": "a"}},
                               "config": {"rack_aware_assignment_strategy": "min_traffic",
                                          "rack_aware_assignment_traffic_cost": 1,
                                          "rack_aware_assignment_non_overlap_cost": 1}}))
    x = from_dict(d)
    # the stateless pass is skipped too: a *stateful* task's changelog has no racks
    assert skip_reason(x, standby=False) == "partition cl-1 of task 1_0 has no replica racks"
    d["topics"]["cl"]["racks"][1] = ["a"]
    d["clients"]["y"]["rack"] = None
    assert skip_reason(from_dict(d), standby=True) == "client y has no rack"


def test_standby_predicate_sees_the_source_as_destination():
    """Kafka's movable-task filter checks the tag predicate with (source, source): it always allows the move."""
    topics = {"in": {"racks": [["ra"], ["ra"]]}, "cl": {"racks": [["rb"], ["ra"]]}}
    clients = {"p": {"rack": "rb", "tags": {"zone": "z2"}, "active": ["0_0"]},
               "q": {"rack": "ra", "tags": {"zone": "z1"}, "active": ["0_1"]},
               "x": {"rack": "ra", "tags": {"zone": "z1"}, "standby": ["0_0"]},
               "y": {"rack": "rb", "tags": {"zone": "z2"}, "standby": ["0_1"]}}
    x = from_dict({"format": 1, "family": "tasks", "topics": topics,
                   "tasks": {f"0_{p}": {"inputs": [f"in-{p}"], "changelogs": [f"cl-{p}"]} for p in (0, 1)},
                   "clients": clients,
                   "config": {"rack_aware_assignment_strategy": "min_traffic", "num_standby_replicas": 1,
                              "rack_aware_assignment_traffic_cost": 10, "rack_aware_assignment_non_overlap_cost": 1,
                              "rack_aware_assignment_tags": ["zone"]}})
    states = _states_of(x)
    # The legacy (HA) predicate refuses to move 0_0's standby next to its active's zone ...
    assert not tag_aware_move_predicate(x)("x", "y", "0_0", states)
    outcome = optimize_rack_aware_standby_tasks(x, RackAwareOptimizationParams(), states)
    # ... the KIP-924 helper swaps the two standbys onto their changelogs' racks anyway.
    assert outcome.moved == 2 and states.standby["y"] == {"0_0"} and states.standby["x"] == {"0_1"}


def test_balance_subtopology_groups_are_those_of_the_optimized_tasks():
    c = graph_constructor("balance_subtopology", ["2_1", "0_0", "2_0"])
    assert c.groups == (("0_0",), ("2_0", "2_1"))


def test_unassigned_tasks_iterate_as_a_hashset_copy():
    # new HashSet<>(allTasks.keySet()) for 13 tasks has 32 buckets: 0_p sits in bucket 31 - p
    order = hashset_copy_order([f"0_{p}" for p in range(13)], task_id_hash)
    assert order == [f"0_{p}" for p in range(12, -1, -1)]


# --------------------------------------------------------------------------- registration and properties


def test_registered_with_its_rule_and_kafka_class():
    m = methods()["kafka.sticky"]
    assert (m.family, m.rule, m.kafka_class) == ("tasks", "lag_active", STICKY_TASK_ASSIGNOR)


def test_facade_accepts_the_port():
    x = generate("tasks", 5, tasks=30, clients=6, num_standby_replicas=2)
    sol = api.solve(x, "kafka.sticky")
    assert sol.status == Status.FEASIBLE and not sol.message
    assert run_sticky(x, None).objective == sol.objective


PROPERTY = settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(seed=st.integers(0, 10_000), subtopologies=st.integers(1, 3), tasks=st.integers(3, 40),
       clients=st.integers(1, 9), standbys=st.integers(0, 3), strategy=st.sampled_from(STRATEGIES),
       stateless=st.sampled_from([0, 0.3, 1.0]),
       new_clients=st.integers(0, 2), max_capacity=st.integers(1, 4), tags=st.integers(0, 2))
def test_properties_on_generated_instances(seed, subtopologies, tasks, clients, standbys, strategy, stateless,
                                           new_clients, max_capacity, tags):
    x = generate("tasks", seed, subtopologies=subtopologies, tasks=tasks, clients=clients + new_clients,
                 num_standby_replicas=standbys, strategy=strategy, stateless_share=stateless, new_clients=new_clients,
                 max_capacity=max_capacity, tags=tags)
    r = _assign(x)
    owners = Counter(t for ts in r.active.values() for t in ts)
    assert owners == Counter(set(x.tasks))  # every task active exactly once
    wanted = min(standbys, len(x.clients) - 1)
    copies = Counter(t for ts in r.standby.values() for t in ts)
    for t, task in x.tasks.items():
        assert copies[t] == (wanted if task.stateful else 0)
    for c in x.client_ids:
        assert not set(r.active[c]) & set(r.standby[c])  # never beside its own active
    # Kafka's capacity-proportional bound: the sticky passes keep a client below capacity x floor(T / threads),
    # the fallback picks the least loaded client, and the rack optimisers keep every client's count.
    threads = sum(cl.capacity for cl in x.clients.values())
    for c in x.client_ids:
        assert len(r.active[c]) <= x.clients[c].capacity * math.ceil(len(x.tasks) / threads)


@pytest.mark.parametrize("seed", range(4))
def test_exact_lag_active_never_worse_than_the_port(seed):
    x = generate("tasks", seed, tasks=10 + 3 * seed, clients=3 + seed % 4, num_standby_replicas=seed % 3,
                 strategy=STRATEGIES[seed % 3])
    port, exact = api.solve(x, "kafka.sticky"), api.solve(x, "exact.lag_active", time_limit=30)
    assert port.status == Status.FEASIBLE and exact.status == Status.OPTIMAL
    assert exact.objective <= port.objective
