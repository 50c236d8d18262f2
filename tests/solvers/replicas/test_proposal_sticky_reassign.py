"""KAFKA-1792's ``StickyPartitionReassignor`` (``proposal.sticky_reassign``).

The pull request's own ``StickyPartitionReassignorUnitTest`` is a set of jqwik
properties over random clusters (many topics, replication factors from 1 to
the broker count); they are ported below as hypothesis properties with the
same generators and fewer tries. The last one compares with Kafka's released
``--generate`` (``AdminUtils`` per topic, here :mod:`kipopt.solvers.replicas.placers`)
and does not hold: it is pinned on a three-partition cluster where it fails, not
sampled. Then the method on kipopt instances.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kipopt import solve
from kipopt.datasets import generate
from kipopt.errors import NotApplicableError
from kipopt.instance import from_dict
from kipopt.solution import Status
from kipopt.solvers.replicas.placers import assign_replicas_to_brokers
from kipopt.solvers.replicas.proposals.sticky_partition_reassignor import ReassignorRefusal, \
    StickyPartitionReassignor, sticky_reassign

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- the PR's generators


def _no_racks(draw) -> list[tuple[int, str | None]]:
    return [(i, None) for i in range(draw(st.integers(2, 20)))]


def _racks(draw) -> list[tuple[int, str | None]]:
    """Every rack on at least one broker (a shuffled rack per broker first), the other brokers anywhere."""
    racks = [str(i) for i in range(draw(st.integers(2, 15)))]
    n = draw(st.integers(len(racks), 20))
    shuffled = draw(st.permutations(racks))
    return [(i, shuffled[i] if i < len(racks) else draw(st.sampled_from(racks))) for i in range(n)]


def _equal_racks(draw) -> list[tuple[int, str | None]]:
    racks, per_rack = draw(st.integers(2, 5)), draw(st.integers(1, 4))
    return [(i, str(i % racks)) for i in range(racks * per_rack)]


def _assignments(draw, brokers) -> dict[tuple[str, int], list[int]]:
    """Topics ``"0"``, ``"1"``, ... each with its own replication factor and 1 to 16 partitions."""
    ids = [b for b, _ in brokers]
    out = {}
    for t in range(draw(st.integers(1, 8))):
        rf = draw(st.integers(1, len(ids)))
        for p in range(draw(st.integers(1, 16))):
            out[(str(t), p)] = list(draw(st.permutations(ids))[:rf])
    return out


@st.composite
def clusters(draw, kind: str):
    pick = {"none": _no_racks, "racks": _racks, "equal": _equal_racks}
    if kind == "any":
        kind = draw(st.sampled_from(["none", "racks"]))
    brokers = pick[kind](draw)
    return brokers, _assignments(draw, brokers)


# --------------------------------------------------------------------------- the PR's scores


def _square_sum(counts) -> int:
    return sum(c * c for c in counts)


def _rack_score(brokers, replicas) -> int:
    rack_of = dict(brokers)
    return _square_sum([sum(1 for b in replicas if rack_of[b] == r) for r in set(rack_of.values())])


def _broker_score(brokers, replicas) -> int:
    return _square_sum([replicas.count(b) for b, _ in brokers])


def _global_score(brokers, assignment) -> int:
    return _square_sum([sum(r.count(b) for r in assignment.values()) for b, _ in brokers])


def _count_moves(before, after) -> int:
    """The PR's ``countMoves``: replica positions whose broker changed."""
    return sum(a != b for tp in before for a, b in zip(before[tp], after[tp]))


def _spread(brokers, assignment) -> int:
    counts = [sum(r.count(b) for r in assignment.values()) for b, _ in brokers]
    return max(counts) - min(counts)


# --------------------------------------------------------------------------- StickyPartitionReassignorUnitTest


@SETTINGS
@given(clusters("racks"))
def test_topic_partition_rack_distribution_is_not_worse_than_before(cluster):
    brokers, current = cluster
    new = sticky_reassign(current, brokers)
    assert new.keys() == current.keys()
    for tp, replicas in current.items():
        assert len(new[tp]) == len(replicas)
        assert _rack_score(brokers, new[tp]) <= _rack_score(brokers, replicas)


@SETTINGS
@given(clusters("any"))
def test_topic_partition_broker_distribution_is_not_worse_than_before(cluster):
    brokers, current = cluster
    new = sticky_reassign(current, brokers)
    for tp, replicas in current.items():
        assert len(new[tp]) == len(replicas)
        assert _broker_score(brokers, new[tp]) <= _broker_score(brokers, replicas)


@SETTINGS
@given(clusters("any"))
def test_global_broker_distribution_is_not_worse_than_before(cluster):
    brokers, current = cluster
    assert _global_score(brokers, sticky_reassign(current, brokers)) <= _global_score(brokers, current)


@SETTINGS
@given(clusters("equal"))
def test_reaches_equilibrium_if_brokers_are_equally_spread_across_racks(cluster):
    brokers, current = cluster
    assert _spread(brokers, sticky_reassign(current, brokers)) <= 1


@SETTINGS
@given(clusters("none"))
def test_reaches_equilibrium_if_racks_are_not_set(cluster):
    brokers, current = cluster
    assert _spread(brokers, sticky_reassign(current, brokers)) <= 1


def _adminutils(brokers, current, start: int) -> dict[tuple[str, int], list[int]]:
    """``ReassignPartitionsCommand.calculateAssignment``: ``AdminUtils`` per topic, replica count kept."""
    out = {}
    for topic in sorted({t for t, _ in current}):
        parts = sorted(p for t, p in current if t == topic)
        inst = from_dict({"format": 1, "family": "replicas", "partitions": len(parts),
                          "replication_factor": len(current[(topic, parts[0])]), "start_index": start % len(brokers),
                          "brokers": [{"id": b, "rack": r} if r is not None else {"id": b} for b, r in brokers]})
        placed = assign_replicas_to_brokers(inst)
        out.update({(topic, p): list(placed[p]) for p in parts})
    return out


def test_the_prs_last_property_fails_on_three_partitions():
    """The PR's ``reachesBetterGlobalBrokerDistributionOrRequiresAtLeastSameMoveCountForSameGlobalBrokerDistribution``
    (a better global balance than the released ``--generate``, or at most its moves at the same balance) does
    not hold for the reassignor as ported, which answers as the PR's compiled class on 1,330 random clusters
    (64 kept as the vectors below; this cluster is not one of them, and no Java ran on it here). Three single-replica partitions all on broker 0 of two:
    the released command (start index 0) moves one partition; the reassignor moves two, to the same balance.
    Its first move improves the global score; the second does not, but passes on its leader score, computed
    once with the replica's moves and never refreshed (as in the Java). Drawn at random, about 0.7 % of the
    PR's clusters break the property (9 of 1,500 by moves, 1 by a worse balance), so it is pinned here as a
    finding instead of sampled as a property that fails now and then."""
    brokers = [(0, None), (1, None)]
    current = {("0", 0): [0], ("0", 1): [0], ("0", 2): [0]}
    released = _adminutils(brokers, current, 0)
    new = sticky_reassign(current, brokers)
    assert _global_score(brokers, new) == _global_score(brokers, released)
    assert (_count_moves(current, new), _count_moves(current, released)) == (2, 1)
    assert new == {("0", 0): [1], ("0", 1): [1], ("0", 2): [0]}


# --------------------------------------------------------------------------- the PR's compiled class


JAVA = json.loads((Path(__file__).parent / "data" / "sticky_partition_reassignor_java.json").read_text())


@pytest.mark.parametrize("case", range(len(JAVA["cases"])))
def test_same_answer_as_the_prs_compiled_class(case):
    """64 clusters (60 drawn like the PR's generators, 4 of 100-300 partitions after brokers joined), each
    answered by the PR's ``StickyPartitionReassignor`` compiled with javac 17 (1,330 such clusters agreed
    during development; these are kept as vectors)."""
    c = JAVA["cases"][case]
    current = {(t, int(p)): v for t, parts in c["current"].items() for p, v in parts.items()}
    expected = {(t, int(p)): v for t, parts in c["java"].items() for p, v in parts.items()}
    assert sticky_reassign(current, [tuple(b) for b in c["brokers"]]) == expected


# --------------------------------------------------------------------------- worked by hand, refusals


def test_three_partitions_on_two_of_three_brokers():
    """Worked from the Java: the first move takes t-0's leader to the empty broker (its leader score is the
    only non-zero one), the second a follower; then every broker holds two and no move improves."""
    current = {("t", 0): [0, 1], ("t", 1): [0, 1], ("t", 2): [0, 1]}
    reassignor = StickyPartitionReassignor(current, [(0, None), (1, None), (2, None)])
    assert reassignor.reassign() == {("t", 0): [2, 1], ("t", 1): [0, 2], ("t", 2): [0, 1]}
    assert reassignor.leaders == {0: 2, 1: 0, 2: 1}


def test_refusals_are_kafkas():
    with pytest.raises(ReassignorRefusal, match="Not all brokers have rack information"):
        sticky_reassign({("t", 0): [0]}, [(0, "a"), (1, None)])
    with pytest.raises(ReassignorRefusal, match="references unknown broker 7"):
        sticky_reassign({("t", 0): [7]}, [(0, None), (1, None)])


# --------------------------------------------------------------------------- the method


def _instance(**extra):
    return from_dict({"format": 1, "family": "replicas", "partitions": 3, "replication_factor": 2,
                      "brokers": [{"id": 0}, {"id": 1}, {"id": 2}], **extra})


def test_method_needs_a_complete_current_assignment():
    with pytest.raises(NotApplicableError, match="current"):
        solve(_instance(), "proposal.sticky_reassign")
    with pytest.raises(NotApplicableError, match="partition 2"):
        solve(_instance(current={"0": [0, 1], "1": [0, 1]}), "proposal.sticky_reassign")


def test_method_runs_one_topic_and_mixed_racks_are_infeasible():
    s = solve(_instance(current={"0": [0, 1], "1": [0, 1], "2": [0, 1]}), "proposal.sticky_reassign")
    assert s.assignment == {0: (2, 1), 1: (0, 2), 2: (0, 1)}
    assert s.metrics["moves"] == 2 and s.metrics["replica_imbalance"] == 0
    mixed = from_dict({"format": 1, "family": "replicas", "partitions": 1, "replication_factor": 1,
                       "brokers": [{"id": 0, "rack": "a"}, {"id": 1}], "current": {"0": [0]}})
    assert solve(mixed, "proposal.sticky_reassign").status is Status.INFEASIBLE


@pytest.mark.parametrize("racks", [1, 3])
def test_never_below_the_exact_optimum_after_adding_brokers(racks):
    inst = generate("replicas", 2, partitions=60, brokers=9, racks=racks, added_brokers=3)
    s, e = solve(inst, "proposal.sticky_reassign"), solve(inst, "exact.spread")
    assert s.status is Status.FEASIBLE and e.status is Status.OPTIMAL
    if not s.metrics["violations"]:
        assert s.objective >= e.objective
