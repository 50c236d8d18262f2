"""Ports of AdminUtils and StripedReplicaPlacer: Kafka's own test expectations and Kafka's real outputs.

The ``KAFKA_OUTPUTS`` vectors were printed by Kafka's unmodified ``AdminUtils``
and ``StripedReplicaPlacer`` classes (commit 1eb7644) on generated clusters;
the other expectations port the scenarios of ``AdminRackAwareTest`` and
``StripedReplicaPlacerTest``.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from kipopt import evaluate, solve
from kipopt.solution import Status
from kipopt.solvers.java_util import JavaRandom, to_int32, to_int64
from kipopt.solvers.replicas.placers import (KafkaRefusal, RackList, assign_replicas_to_brokers,
                                           rack_alternated_brokers, striped_place)

from replica_cases import KIP36_ASSIGNMENT, KIP36_SIX_BROKERS, cluster


class MockRandom(JavaRandom):
    """Kafka's test ``MockRandom``: its own 64-bit LCG behind ``Random.next(bits)``."""

    def __init__(self, state: int = 17):
        self.state = state

    def next_bits(self, bits: int) -> int:
        self.state = to_int64(self.state * 2862933555777941757 + 3037000493)
        return to_int32((self.state & (2**64 - 1)) >> (64 - bits))


# ---------------------------------------------------------------------------- AdminUtils


def test_kip36_six_broker_example():
    """KIP-36: racks interlaced as 0,2,4,1,3,5, then round-robin: every broker 3 replicas, 1 leader."""
    inst = cluster(KIP36_SIX_BROKERS, 6, 3)
    assert rack_alternated_brokers(inst.rack_of) == [0, 2, 4, 1, 3, 5]
    assert assign_replicas_to_brokers(inst) == KIP36_ASSIGNMENT


def test_rack_alternated_list_and_assignment():
    """AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers (7th partition shifts)."""
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_brokers(racks) == [0, 3, 1, 5, 4, 2]
    assert rack_alternated_brokers({b: r for b, r in racks.items() if b != 5}) == [0, 3, 1, 4, 2]
    got = assign_replicas_to_brokers(cluster(racks, 7, 3))
    assert got == {0: (0, 3, 1), 1: (3, 1, 5), 2: (1, 5, 4), 3: (5, 4, 2), 4: (4, 2, 0), 5: (2, 0, 3),
                   6: (0, 4, 2)}


def test_rack_unaware_assignment():
    """AdminRackAwareTest.testReplicaAssignment: five rack-less brokers, RF 3, the shift bumps at partition 5."""
    inst = cluster({b: None for b in range(5)}, 10, 3)
    assert assign_replicas_to_brokers(inst) == {
        0: (0, 1, 2), 1: (1, 2, 3), 2: (2, 3, 4), 3: (3, 4, 0), 4: (4, 0, 1),
        5: (0, 2, 3), 6: (1, 3, 4), 7: (2, 4, 0), 8: (3, 0, 1), 9: (4, 1, 2)}


def _distribution(assignment, rack_of):
    leaders = Counter(bs[0] for bs in assignment.values())
    replicas = Counter(b for bs in assignment.values() for b in bs)
    racks = {p: [rack_of[b] for b in bs] for p, bs in assignment.items()}
    return leaders, replicas, racks


def _check(assignment, rack_of, partitions, rf, rack_aware=True, leaders_even=True, replicas_even=True):
    """RackAwareTest.checkReplicaDistribution."""
    n = len(rack_of)
    for bs in assignment.values():
        assert len(set(bs)) == len(bs)
    leaders, replicas, racks = _distribution(assignment, rack_of)
    if rack_aware:
        assert all(len(set(r)) == rf for r in racks.values())
    if leaders_even:
        assert [leaders[b] for b in rack_of] == [partitions // n] * n
    if replicas_even:
        assert [replicas[b] for b in rack_of] == [partitions * rf // n] * n


MIXED = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}
LARGE = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1", 6: "rack1", 7: "rack2",
         8: "rack2", 9: "rack3", 10: "rack1", 11: "rack3"}

# (rack map, partitions, rf, start partition, leaders even, replicas even); Kafka draws a random start index
# for most of these, so every start index is tried
ADMIN_RACK_AWARE_CASES = [
    (MIXED, 6, 3, 0, True, True),                                          # testAssignmentWithRackAware
    (MIXED, 13, 3, 0, False, False),                                       # ...WithUnevenReplicas
    ({0: "rack1", 1: "rack1", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}, 12, 3, 0, True, False),  # UnevenRacks
    (MIXED, 12, 2, 0, True, True),                                         # testAssignmentWith2ReplicasRackAware
    ({6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack3", 11: "rack1"}, 12, 2, 12, True, True),  # Expansion
    (MIXED, 6, 2, 0, True, True),                                          # ...With6Partitions
    ({0: "rack1", 1: "rack2", 4: "rack3"}, 3, 2, 0, True, True),           # ...With6PartitionsAnd3Brokers
    (LARGE, 96, 3, 0, True, True),                                         # testLargeNumberPartitionsAssignment
]


@pytest.mark.parametrize("racks,partitions,rf,start_pid,leaders_even,replicas_even", ADMIN_RACK_AWARE_CASES)
def test_admin_rack_aware_distribution(racks, partitions, rf, start_pid, leaders_even, replicas_even):
    for start_index in range(len(racks)):
        got = assign_replicas_to_brokers(cluster(racks, partitions, rf, start_index, start_pid))
        assert sorted(got) == list(range(start_pid, start_pid + partitions))
        _check(got, racks, partitions, rf, leaders_even=leaders_even, replicas_even=replicas_even)


@pytest.mark.parametrize("racks,rf,expected_racks", [
    ({0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}, 5, 3),  # testMoreReplicasThanRacks
    ({0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}, 2, 2),  # testLessReplicasThanRacks
    ({b: "rack1" for b in range(6)}, 3, 1),                                            # testSingleRack
])
def test_rack_counts(racks, rf, expected_racks):
    for start_index in range(6):
        got = assign_replicas_to_brokers(cluster(racks, 6, rf, start_index))
        assert all(len(bs) == rf and len({racks[b] for b in bs}) == expected_racks for bs in got.values())
        if expected_racks == 1:
            assert Counter(bs[0] for bs in got.values()) == {b: 1 for b in range(6)}


def test_skip_broker_with_replica_already_assigned():
    """testSkipBrokerWithReplicaAlreadyAssigned: RF 4 over racks a,b,c with a holding three brokers."""
    racks = {0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}
    got = assign_replicas_to_brokers(cluster(racks, 6, 4, start_index=2))
    _check(got, racks, 6, 4, rack_aware=False, leaders_even=False, replicas_even=False)


def test_refusals_become_infeasible():
    """testAssignReplicasToBrokersWithInvalidParameters: RF > brokers, and racks on only some brokers."""
    partial = cluster({0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: None}, 10, 5)
    with pytest.raises(KafkaRefusal, match="Not all brokers have rack information"):
        assign_replicas_to_brokers(partial)
    s = solve(partial, "kafka.adminutils")
    assert s.status is Status.INFEASIBLE and "rack information" in s.message and s.assignment == {}
    s = solve(cluster({0: None, 1: None}, 10, 3), "kafka.adminutils")
    assert s.status is Status.INFEASIBLE and s.message == "Replication factor: 3 larger than available brokers: 2."


# ---------------------------------------------------------------------------- StripedReplicaPlacer


def test_striped_rack_list_single_rack_with_fenced_broker():
    """testAvoidFencedReplicaIfPossibleOnSingleRack."""
    rl = RackList(MockRandom(), [(3, None, False), (1, None, True), (0, None, False), (4, None, False),
                                 (2, None, False)])
    assert (rl.num_total, rl.num_unfenced, rl.rack_names) == (5, 4, [None])
    for rf in (0, -1):
        with pytest.raises(KafkaRefusal):
            rl.place(rf)
    assert [rl.place(4) for _ in range(5)] == [[3, 4, 0, 2], [4, 0, 2, 3], [0, 2, 3, 4], [2, 3, 4, 0],
                                               [0, 4, 3, 2]]


def test_striped_places_on_fenced_broker_when_needed():
    """testPlacementOnFencedReplicaOnSingleRack."""
    rl = RackList(MockRandom(), [(3, None, False), (1, None, True), (2, None, False)])
    assert [rl.place(3) for _ in range(4)] == [[3, 2, 1], [2, 3, 1], [3, 2, 1], [2, 3, 1]]


def test_striped_multiple_racks():
    """testRackListWithMultipleRacks and testRackListWithInvalidRacks."""
    rl = RackList(MockRandom(), [(11, "1", False), (10, "1", False), (30, "3", False), (31, "3", False),
                                 (21, "2", False), (20, "2", True)])
    assert rl.rack_names == ["1", "2", "3"]
    assert [rl.place(4) for _ in range(3)] == [[11, 21, 31, 10], [21, 30, 10, 20], [31, 11, 21, 30]]
    rl = RackList(MockRandom(), [(11, "1", False), (10, "1", False), (30, "3", True), (31, "3", True),
                                 (20, "2", True), (21, "2", True), (41, "4", False), (40, "4", True)])
    assert (rl.num_total, rl.num_unfenced) == (8, 3)
    assert [rl.place(4) for _ in range(3)] == [[41, 11, 21, 30], [10, 20, 31, 41], [41, 21, 30, 11]]


def test_striped_successful_placement_and_even_distribution():
    """testSuccessfulPlacement and testEvenDistribution (counts of each ordered pair over 200 partitions)."""
    rl = RackList(MockRandom(), [(0, None, False), (3, None, False), (2, None, False), (1, None, False)])
    assert [rl.place(3) for _ in range(5)] == [[2, 3, 0], [3, 0, 1], [0, 1, 2], [1, 2, 3], [1, 0, 2]]
    rl = RackList(MockRandom(), [(b, None, False) for b in range(4)])
    counts = Counter(tuple(rl.place(2)) for _ in range(200))
    assert counts == {(0, 1): 14, (0, 2): 22, (0, 3): 14, (1, 0): 17, (1, 2): 17, (1, 3): 16, (2, 0): 13,
                      (2, 1): 17, (2, 3): 20, (3, 0): 20, (3, 1): 19, (3, 2): 11}


def test_striped_refusal_messages():
    """testNotEnoughBrokers: Kafka's message, as the method's infeasible message."""
    inst = cluster({11: "1", 10: "1"}, 1, 3)
    with pytest.raises(KafkaRefusal, match="The target replication factor of 3 cannot be reached because only "
                                           r"2 broker\(s\) are registered\."):
        striped_place(inst)
    s = solve(inst, "kafka.striped", seed=5)
    assert s.status is Status.INFEASIBLE and s.seed == 5


def test_striped_seed_is_recorded_and_keys_follow_start_partition():
    inst = cluster([2, 3, 1], 5, 2, start_partition_id=7)
    s = solve(inst, "kafka.striped")
    assert s.seed == 0 and sorted(s.assignment) == [7, 8, 9, 10, 11]
    assert solve(inst, "kafka.striped", seed=9).seed == 9


# ---------------------------------------------------------------------------- Kafka's real outputs

# (Random seed, start_index, start_partition_id, partitions, rf, brokers id:rack ('-' = none)),
# AdminUtils output, StripedReplicaPlacer output — printed by Kafka's classes on OpenJDK 17
KAFKA_OUTPUTS = [
    ('402322 32 16 1 10 12:B 18:0b_c0. 19:0A1.aBx 27:zB-a 32:0A1.aBx 42:0A1.aBx 45:0A1.aBx 46:0A1.aBx 53:_AA9cz '
     '56:_AA9cz 57:0A1.aBx', '[27,32,56,18,12,53,42,45,46,57];', '[18,12,53,27,19,56,32,42,45,46];'),
    ('525782 24 0 13 3 5:z 14:z_ 21:_1bxx 28:z_ 36:1yxzb01 41:z 48:z 55:z 59:z',
     '[48,36,21];[55,36,21];[59,36,21];[36,21,5];[21,5,14];[5,14,36];[14,41,36];[41,28,36];[28,48,36];[48,14,36];'
     '[55,14,36];[59,28,36];[36,28,48];',
     '[36,21,48];[21,55,14];[59,28,36];[14,36,21];[36,21,5];[21,41,28];[48,14,36];[28,36,21];[36,21,55];[36,48,21];'
     '[55,21,28];[21,14,36];[28,36,5];'),
    ('540261 5 0 2 3 8:- 16:.-a1c 44:y1- 56:-', 'ERR:AdminOperationException', '[44,8,16];[56,16,44];'),
    ('407184 1 0 14 6 3:- 5:- 6:- 24:- 34:- 46:- 56:-',
     '[5,24,34,46,56,3];[6,34,46,56,3,5];[24,46,56,3,5,6];[34,56,3,5,6,24];[46,3,5,6,24,34];[56,5,6,24,34,46];'
     '[3,6,24,34,46,56];[5,34,46,56,3,6];[6,46,56,3,5,24];[24,56,3,5,6,34];[34,3,5,6,24,46];[46,5,6,24,34,56];'
     '[56,6,24,34,46,3];[3,24,34,46,56,5];',
     '[6,24,34,46,56,3];[24,34,46,56,3,5];[34,46,56,3,5,6];[46,56,3,5,6,24];[56,3,5,6,24,34];[3,5,6,24,34,46];'
     '[5,6,24,34,46,56];[3,6,56,46,5,24];[6,56,46,5,24,34];[56,46,5,24,34,3];[46,5,24,34,3,6];[5,24,34,3,6,56];'
     '[24,34,3,6,56,46];[34,3,6,56,46,5];'),
    ('537316 3 9 12 4 3:- 10:- 24:- 32:- 47:- 53:-',
     '[3,47,53,10];[10,53,3,24];[24,3,10,32];[32,24,47,53];[47,32,53,3];[53,47,3,10];[3,53,10,24];[10,3,24,32];'
     '[24,10,32,47];[32,47,53,3];[47,53,3,10];[53,3,10,24];',
     '[47,53,3,10];[53,3,10,24];[3,10,24,32];[10,24,32,47];[24,32,47,53];[32,47,53,3];[10,32,47,53];[32,47,53,3];'
     '[47,53,3,24];[53,3,24,10];[3,24,10,32];[24,10,32,47];'),
    ('68343 6 76 11 2 4:-xa_9 10:- 25:..ba1xa 40:- 59:-', 'ERR:AdminOperationException',
     '[4,25];[25,59];[10,4];[4,25];[25,40];[59,4];[4,25];[25,40];[10,4];[4,25];[25,4];'),
]


def _parse(spec: str):
    t = spec.split()
    seed, si, sp, n, rf = map(int, t[:5])
    racks = {int(x.split(":")[0]): (None if x.split(":")[1] == "-" else x.split(":")[1]) for x in t[5:]}
    return seed, cluster(racks, n, rf, si, sp)


def _render(assignment, instance) -> str:
    return "".join("[" + ",".join(map(str, assignment[p])) + "];" for p in instance.partition_ids)


@pytest.mark.parametrize("spec,admin,striped", KAFKA_OUTPUTS)
def test_matches_kafka_outputs(spec, admin, striped):
    seed, inst = _parse(spec)
    if admin.startswith("ERR"):
        with pytest.raises(KafkaRefusal):
            assign_replicas_to_brokers(inst)
    else:
        assert _render(assign_replicas_to_brokers(inst), inst) == admin
    assert _render(striped_place(inst, seed), inst) == striped


# ---------------------------------------------------------------------------- KIP-36 guarantees


@st.composite
def racked_clusters(draw):
    sizes = draw(st.lists(st.integers(1, 5), min_size=1, max_size=5))
    rf = draw(st.integers(1, sum(sizes)))
    return cluster(sizes, draw(st.integers(1, 30)), rf, draw(st.integers(0, 20)), draw(st.integers(0, 40)))


@settings(max_examples=80, deadline=None)
@given(racked_clusters(), st.integers(0, 2**31 - 1))
def test_both_placers_keep_kip36_guarantees(inst, seed):
    """min(RF, #racks) racks per partition, RF distinct brokers, every partition placed — unequal racks too."""
    for assignment in (assign_replicas_to_brokers(inst), striped_place(inst, seed)):
        e = evaluate(inst, assignment)
        assert e.feasible, e.violations


def test_kip36_scenario_file():
    """The packaged KIP-36 scenario and its AdminUtils solution (kipopt.datasets) agree with the port."""
    from kipopt.datasets import load_scenario, scenario_solutions
    from kipopt.api import load_assignment
    inst = load_scenario("kip36_six_brokers")
    expected = load_assignment(inst, scenario_solutions("kip36_six_brokers")["adminutils"])
    assert solve(inst, "kafka.adminutils").assignment == expected


def _colliding_racks(sizes: list[int]) -> dict:
    """Brokers on racks whose names share one ``String.hashCode`` ("Aa" and "BB" blocks), ``sizes[i]`` on rack i."""
    names = ["".join("Aa" if bit == "0" else "BB" for bit in f"{i:04b}") for i in range(len(sizes))]
    brokers, b = [], 0
    for name, size in zip(names, sizes):
        for _ in range(size):
            brokers.append({"id": b, "rack": name})
            b += 1
    return {"format": 1, "family": "replicas", "brokers": brokers, "partitions": 12, "replication_factor": 3}


def test_striped_where_java_orders_racks_by_identity_hash():
    """Eleven rack names of one hash code make a tree bin of ``Optional`` keys, which Java orders by identity hash
    (it changes from run to run). With one broker per rack the order cannot matter: Kafka's answer, printed by
    its StripedReplicaPlacer (javac 17, commit 1eb7644, seed 7; the same in eight runs over two JVMs). With a
    rack of two brokers there is no answer to reproduce: the method does not apply (exit 2), never an internal
    error."""
    from kipopt.errors import NotApplicableError
    from kipopt.instance import from_dict
    inst = from_dict(_colliding_racks([1] * 11))
    expected = {0: [8, 9, 10], 1: [9, 10, 0], 2: [10, 0, 1], 3: [0, 1, 2], 4: [1, 2, 3], 5: [2, 3, 4], 6: [3, 4, 5],
                7: [4, 5, 6], 8: [5, 6, 7], 9: [6, 7, 8], 10: [7, 8, 9], 11: [9, 1, 7]}
    assert {p: list(r) for p, r in striped_place(inst, 7).items()} == expected
    crowded = from_dict(_colliding_racks([1] * 10 + [2]))
    with pytest.raises(NotApplicableError, match="identityHashCode"):
        solve(crowded, "kafka.striped", seed=7)


def test_striped_replication_factor_is_a_java_short():
    """``PlacementSpec`` holds the replication factor as a ``short``: 32,768 becomes -32,768 and Kafka refuses."""
    from kipopt.instance import from_dict
    inst = from_dict({"format": 1, "family": "replicas", "brokers": [{"id": i} for i in range(32768)],
                      "partitions": 1, "replication_factor": 32768})
    with pytest.raises(KafkaRefusal, match="Invalid replication factor -32768"):
        striped_place(inst, 0)


def test_striped_tie_with_rack_less_brokers():
    """``Optional.empty()`` hashes to 0 like a rack name of NULs: ten such names and the rack-less brokers share
    one tree bin. One broker each: an answer; two rack-less brokers: a refusal naming "no rack"."""
    from kipopt.errors import NotApplicableError
    from kipopt.instance import from_dict
    named = [{"id": 10 + i, "rack": "\x00" * (i + 1)} for i in range(10)]
    one = from_dict({"format": 1, "family": "replicas", "brokers": [{"id": 0}] + named, "partitions": 3,
                     "replication_factor": 2})
    assert solve(one, "kafka.striped", seed=1).status is Status.FEASIBLE
    two = from_dict({"format": 1, "family": "replicas", "brokers": [{"id": 0}, {"id": 1}] + named, "partitions": 3,
                     "replication_factor": 2})
    with pytest.raises(NotApplicableError, match="no rack"):
        solve(two, "kafka.striped", seed=1)
