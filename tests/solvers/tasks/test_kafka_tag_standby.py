"""Kafka's ``ClientTagAwareStandbyTaskAssignorTest`` scenarios and KIP-708's examples, for ``kafka.tag_standby``.

Clients ``p1..p9`` are Kafka's ``PID_1..PID_9`` (same order). Kafka's tests
pass the actives' ``HashSet`` as the stateful tasks (``findAllActiveTasks``),
so :func:`kafka_test_assign` iterates them in that hash order, as the tests
do; the high-availability assignor and ``kafka.tag_standby`` pass them sorted.
"""

from __future__ import annotations

import pytest

from kipopt.datasets import load_scenario, scenario_solutions
from kipopt.instance import from_dict
from kipopt.solution import TaskRoles
from kipopt.solvers.java_util import task_hashmap_order
from kipopt.solvers.tasks.client_state import StreamsClientStates
from kipopt.solvers.tasks.rack_aware import tag_aware_move_predicate
from kipopt.solvers.tasks.tag_standby import ClientTagAwareStandbyTaskAssignor, run_tag_standby

Z1, Z2, Z3 = "eu-central-1a", "eu-central-1b", "eu-central-1c"
K1, K2, K3 = "k8s-cluster1", "k8s-cluster2", "k8s-cluster3"


def instance(clients: dict[str, tuple[int, dict[str, str], tuple[str, ...]]], num_standby: int, tags: list[str],
             tasks: tuple[str, ...] = ()):
    """A tasks instance with the given (capacity, tags, actives) per client; every task stateful."""
    task_ids = sorted({t for _, _, active in clients.values() for t in active} | set(tasks))
    return from_dict({
        "format": 1, "family": "tasks",
        "topics": {"in": {"racks": [[]] * len(task_ids)}, "cl": {"racks": [[]] * len(task_ids)}},
        "tasks": {t: {"inputs": [f"in-{i}"], "changelogs": [f"cl-{i}"]} for i, t in enumerate(task_ids)},
        "clients": {c: {"capacity": cap, "tags": tg, "active": list(active)} for c, (cap, tg, active) in clients.items()},
        "config": {"num_standby_replicas": num_standby, "rack_aware_assignment_tags": tags}})


class _Result:
    def __init__(self, assignment):
        self.assignment = assignment


def kafka_test_assign(x) -> _Result:
    """``standbyTaskAssignor.assign(clientStates, allActiveTasks, allActiveTasks, configs)`` as Kafka's tests call it."""
    states = StreamsClientStates.with_actives(x)
    tasks = [t for c in states.order for t in sorted(states.active[c])]
    ClientTagAwareStandbyTaskAssignor(x).assign(states, task_hashmap_order(tasks))
    return _Result({c: TaskRoles(tuple(states.active[c]), tuple(states.standby[c])) for c in states.order})


def standbys(result) -> dict[str, set[str]]:
    """task -> clients holding it as a standby."""
    out: dict[str, set[str]] = {}
    for c, roles in result.assignment.items():
        for t in roles.standby:
            out.setdefault(t, set()).add(c)
    return out


def counts(result) -> dict[str, int]:
    return {c: len(roles.standby) for c, roles in result.assignment.items()}


def _zone_cluster(zone: str, cluster: str) -> dict[str, str]:
    return {"zone": zone, "cluster": cluster}


def _nine(actives: dict[str, tuple[str, ...]]) -> dict:
    grid = [(z, k) for k in (K1, K2, K3) for z in (Z1, Z2, Z3)]
    return {f"p{i + 1}": (2, _zone_cluster(*grid[i]), actives.get(f"p{i + 1}", ())) for i in range(9)}


def test_should_distribute_standby_tasks_when_active_tasks_are_located_on_same_zone():
    x = instance(_nine({"p1": ("0_0", "1_0"), "p4": ("0_1", "1_1"), "p7": ("0_2", "1_2")}), 2, ["zone", "cluster"])
    r = kafka_test_assign(x)
    assert all(len(roles.active) + len(roles.standby) >= 2 for roles in r.assignment.values())  # reachedCapacity
    assert counts(r) == {"p1": 0, "p4": 0, "p7": 0, **{c: 2 for c in ("p2", "p3", "p5", "p6", "p8", "p9")}}
    s = standbys(r)
    for t in ("0_0", "1_0"):
        assert s[t] in ({"p9", "p5"}, {"p6", "p8"})
    for t in ("0_1", "1_1"):
        assert s[t] in ({"p2", "p9"}, {"p3", "p8"})
    for t in ("0_2", "1_2"):
        assert s[t] in ({"p5", "p3"}, {"p2", "p6"})


def test_should_distribute_standby_tasks_when_active_tasks_are_located_on_same_cluster():
    x = instance(_nine({"p1": ("0_0", "1_0"), "p2": ("0_1", "1_1"), "p3": ("0_2", "1_2")}), 2, ["zone", "cluster"])
    r = kafka_test_assign(x)
    assert counts(r) == {"p1": 0, "p2": 0, "p3": 0, **{c: 2 for c in ("p4", "p5", "p6", "p7", "p8", "p9")}}
    s = standbys(r)
    for t in ("0_0", "1_0"):
        assert s[t] in ({"p9", "p5"}, {"p6", "p8"})
    for t in ("0_1", "1_1"):
        assert s[t] in ({"p4", "p9"}, {"p6", "p7"})
    for t in ("0_2", "1_2"):
        assert s[t] in ({"p5", "p7"}, {"p4", "p8"})


def test_should_do_the_partial_rack_awareness():
    tags = [{"cluster": K1, "zone": Z1}, {"cluster": K1, "zone": Z2}, {"cluster": K1, "zone": Z3},
            {"cluster": K2, "zone": Z1}, {"cluster": K2, "zone": Z2}, {"cluster": K2, "zone": Z3}]
    clients = {f"p{i + 1}": (1, tags[i], ()) for i in range(6)}
    clients["p1"] = (1, tags[0], ("0_0",))
    clients["p6"] = (1, tags[5], ("1_0",))
    r = kafka_test_assign(instance(clients, 2, ["cluster", "zone"]))
    c = counts(r)
    assert c["p2"] == 1 and c["p5"] == 1 and all(c[p] in (0, 1) for p in ("p1", "p3", "p4", "p6"))
    assert sum(c.values()) == 4
    s = standbys(r)
    assert s["0_0"] in ({"p5", "p3"}, {"p5", "p6"})
    assert s["1_0"] in ({"p2", "p4"}, {"p2", "p1"})


def test_should_distribute_clients_on_different_zone_tags_even_when_clients_reached_capacity():
    zones = (Z1, Z2, Z3, Z1, Z2, Z3)
    actives = ("0_0", "0_1", "0_2", "1_0", "1_1", "1_2")
    clients = {f"p{i + 1}": (1, _zone_cluster(zones[i], K1), (actives[i],)) for i in range(6)}
    r = kafka_test_assign(instance(clients, 1, ["zone", "cluster"]))
    assert counts(r) == {c: 1 for c in clients}
    s = standbys(r)
    for t in ("0_0", "1_0"):
        assert s[t] in ({"p2"}, {"p5"}, {"p3"}, {"p6"})
    for t in ("0_1", "1_1"):
        assert s[t] in ({"p1"}, {"p4"}, {"p3"}, {"p6"})
    for t in ("0_2", "1_2"):
        assert s[t] in ({"p1"}, {"p4"}, {"p2"}, {"p5"})


def test_should_ignore_tags_that_are_not_present_in_rack_awareness():
    clients = {"p1": (1, {"cluster": K1, "zone": Z1}, ("0_0",)), "p2": (2, {"cluster": K1, "zone": Z2}, ()),
               "p3": (1, {"cluster": K2, "zone": Z1}, ())}
    r = kafka_test_assign(instance(clients, 1, ["cluster"]))
    assert sum(counts(r).values()) == 1 and counts(r)["p3"] == 1


def test_should_handle_overlapping_tag_values_between_different_tag_keys():
    clients = {"p1": (2, {"zone": Z1, "cluster": K1}, ("0_0",)), "p2": (2, {"zone": K1, "cluster": K3}, ())}
    r = kafka_test_assign(instance(clients, 1, ["zone", "cluster"]))
    assert standbys(r) == {"0_0": {"p2"}}


def test_should_distribute_standby_tasks_on_least_loaded_clients_when_clients_are_not_on_different_tag_dimensions():
    same = {"cluster": K1, "zone": Z1}
    clients = {f"p{i + 1}": (3, same, (t,)) for i, t in enumerate(("0_0", "0_1", "0_2", "1_0"))}
    r = kafka_test_assign(instance(clients, 1, ["cluster", "zone"]))
    assert counts(r) == {c: 1 for c in clients}


def test_should_not_assign_standby_tasks_if_there_are_no_enough_clients():
    r = kafka_test_assign(instance({"p1": (3, {"cluster": K1, "zone": Z1}, ("0_0",))}, 1, ["cluster", "zone"]))
    assert counts(r) == {"p1": 0}


def test_should_not_assign_stateless_tasks_to_any_clients():
    x = from_dict({"format": 1, "family": "tasks", "topics": {"in": {"racks": [[], []]}, "cl": {"racks": [[]]}},
                   "tasks": {"0_0": {"inputs": ["in-0"], "changelogs": ["cl-0"]}, "1_0": {"inputs": ["in-1"]}},
                   "clients": {"p1": {"tags": {"zone": Z1}, "active": ["0_0", "1_0"]}, "p2": {"tags": {"zone": Z2}}},
                   "config": {"num_standby_replicas": 1, "rack_aware_assignment_tags": ["zone"]}})
    assert standbys(run_tag_standby(x, None)) == {"0_0": {"p2"}}


# --------------------------------------------------------------------------- movement predicates


def _pair_instance(source_tags, destination_tags, other_tags=None):
    clients = {"p1": (1, source_tags, ()), "p2": (1, destination_tags, ())}
    if other_tags is not None:
        clients["p3"] = (1, other_tags, ("0_0",))
    return instance(clients, 1, ["zone", "cluster"], tasks=("0_0",))


@pytest.mark.parametrize("destination, allowed", [(_zone_cluster(Z1, K1), True), (_zone_cluster(Z2, K1), False)])
def test_two_argument_movement_needs_matching_tags(destination, allowed):
    """shouldPermitTaskMovementWhenClientTagsMatch / shouldDeclineTaskMovementWhenClientTagsDoNotMatch."""
    x = _pair_instance(_zone_cluster(Z1, K1), destination)
    assert ClientTagAwareStandbyTaskAssignor(x).is_allowed_task_movement("p1", "p2") is allowed


@pytest.mark.parametrize("destination, allowed", [
    (_zone_cluster(Z1, K1), True),   # shouldPermitSingleTaskMoveWhenClientTagMatch
    (_zone_cluster(Z2, K1), True),   # shouldPermitSingleTaskMoveWhenDifferentClientTagCountNotChange
    (_zone_cluster(Z3, K1), False),  # shouldDeclineSingleTaskMoveWhenReduceClientTagCount (the active's zone)
])
def test_single_task_movement_keeps_distinct_tags(destination, allowed):
    x = _pair_instance(_zone_cluster(Z1, K1), destination, _zone_cluster(Z3, K2))
    states = StreamsClientStates.with_actives(x)
    states.standby["p1"].add("0_0")
    assert tag_aware_move_predicate(x)("p1", "p2", "0_0", states) is allowed


# --------------------------------------------------------------------------- the KIP-708 examples and quirks


@pytest.mark.parametrize("name", ["kip708_nine_clients", "kip708_six_nodes"])
def test_kip708_examples_reach_one_of_the_kips_ideal_distributions(name):
    r = run_tag_standby(load_scenario(name), None)
    wanted = [{c: set(roles["standby"]) for c, roles in s["assignment"].items()}
              for s in scenario_solutions(name).values()]
    got = {c: set(roles.standby) for c, roles in r.assignment.items()}
    assert any(all(got[c] == w.get(c, set()) for c in got) for w in wanted)


def test_the_class_places_one_standby_with_zero_replicas_but_the_method_does_not():
    """Kafka's per-task loop is a do-while; the high-availability assignor never calls it with 0 standbys."""
    x = instance({"p1": (1, {"zone": Z1}, ("0_0",)), "p2": (1, {"zone": Z2}, ())}, 0, ["zone"])
    states = StreamsClientStates.with_actives(x)
    ClientTagAwareStandbyTaskAssignor(x).assign(states, ["0_0"])
    assert states.standby == {"p1": set(), "p2": {"0_0"}}
    assert standbys(run_tag_standby(x, None)) == {}


def test_tasks_without_an_active_are_filled_in_hash_map_order():
    """The pending pass visits tasks in Kafka's HashMap order (buckets 15, 14, 0 of 16 -> 1_0 first)."""
    clients = {"p1": (1, {"zone": Z1}, ()), "p2": (1, {"zone": Z2}, ())}
    x = instance(clients, 1, ["zone"], tasks=("0_0", "0_1", "1_0"))
    states = StreamsClientStates.with_actives(x)
    ClientTagAwareStandbyTaskAssignor(x).assign(states, ["0_0", "0_1", "1_0"])
    # 1_0 takes p1 (tie broken by order), 0_1 then p2, 0_0 p1 again
    assert states.standby == {"p1": {"1_0", "0_0"}, "p2": {"0_1"}}


@pytest.mark.parametrize("actives, field", [((("0_0",), ("0_0",)), "clients.p2.active"), (((), ()), "tasks.0_0")])
def test_kafka_tag_standby_needs_one_active_per_task(actives, field):
    """The input of the rule tag_standby (and of exact.tag_standby): every task active on exactly one client."""
    from kipopt.errors import InstanceError
    x = instance({"p1": (1, {}, actives[0]), "p2": (1, {}, actives[1])}, 1, ["zone"], tasks=("0_0",))
    with pytest.raises(InstanceError, match=field):
        run_tag_standby(x, None)
