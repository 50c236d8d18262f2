"""The consumers evaluator's column-wise path reports exactly what its member-by-member path reports.

Assignments are drawn with every kind of fault the evaluator knows (members left out, partitions given
twice or to nobody, to a member not subscribed to their topic, names that are no partition), racks
missing on either side, and owned partitions, so each metric and each violation's count and examples
are compared.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from kipopt.evaluation import ViolationLog
from kipopt.evaluation.consumers import _columns, _per_member, cross_and_unknown, evaluate_consumers, group_index
from kipopt.instance import from_dict
from kipopt.solution import left_out


def instance_of(rng: random.Random):
    racks = ["a", "b", "c", None][: rng.randint(1, 4)]

    def replica_racks():
        return sorted({r for r in rng.sample(racks, rng.randint(0, len(racks))) if r is not None})

    topics = {f"t{k}-x" if k % 2 else f"t{k}": {"racks": [replica_racks() for _ in range(rng.randint(1, 6))]}
              for k in range(rng.randint(1, 4))}
    names = list(topics)
    members = []
    for i in range(rng.randint(1, 6)):
        subs = rng.sample(names, rng.randint(1, len(names)))
        all_parts = [f"{t}-{p}" for t in names for p in range(len(topics[t]["racks"]))]
        m = {"id": f"m{i}", "topics": subs, "owned": rng.sample(all_parts, rng.randint(0, min(3, len(all_parts))))}
        rack = rng.choice(racks + ["z"])
        if rack is not None:
            m["rack"] = rack
        members.append(m)
    return from_dict({"format": 1, "family": "consumers", "topics": topics, "members": members})


def assignment_of(instance, rng: random.Random, unknown: bool):
    parts = [f"{t}-{p}" for t, topic in instance.topics.items() for p in range(topic.partitions)]
    out = {}
    for m in instance.members:
        if rng.random() < 0.15:
            continue  # left out
        mine = [rng.choice(parts) for _ in range(rng.randint(0, 5))]
        if unknown and rng.random() < 0.3:
            mine.append("nope-9")
        out[m.id] = tuple(mine)
    return out


def both(instance, assignment):
    index = group_index(instance)
    lists = [assignment.get(m.id, ()) for m in instance.members]
    logs = []
    for path in (_columns, _per_member):
        log = ViolationLog()
        log.add_all("missing_member", left_out(instance, assignment), lambda m: f"{m} is not in the assignment")
        logs.append((path(instance, index, lists, log), log.violations()))
    return logs


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10 ** 9))
def test_columns_equal_member_by_member(seed):
    rng = random.Random(seed)
    instance = instance_of(rng)
    (fast, fast_v), (slow, slow_v) = both(instance, assignment_of(instance, rng, unknown=False))
    assert fast == slow
    assert fast_v == slow_v


@pytest.mark.parametrize("seed", range(30))
def test_a_name_that_is_no_partition_leaves_the_column_path(seed):
    rng = random.Random(seed)
    instance = instance_of(rng)
    assignment = assignment_of(instance, rng, unknown=True)
    lists = [assignment.get(m.id, ()) for m in instance.members]
    known = all(p in group_index(instance).pindex for parts in lists for p in parts)
    assert (_columns(instance, group_index(instance), lists, ViolationLog()) is None) is not known
    if known:
        assert evaluate_consumers(instance, assignment).metrics == both(instance, assignment)[1][0]


@pytest.mark.parametrize("seed", range(30))
def test_cross_and_unknown_by_masks_equals_the_sets(seed):
    rng = random.Random(seed)
    instance = instance_of(rng)
    index = group_index(instance)
    parts = [f"{t}-{p}" for t, topic in instance.topics.items() for p in range(topic.partitions)]
    for rack in ("a", "b", "z", None):
        mine = tuple(rng.choice(parts) for _ in range(rng.randint(0, 8)))
        distinct = frozenset(mine)
        local = index.local.get(rack, frozenset())
        expected = (0, len(mine)) if rack is None else (
            len(mine) - sum(p in index.rackless for p in mine) - sum(p in local for p in mine),
            sum(p in index.rackless for p in mine))
        assert cross_and_unknown(index, rack, mine) == expected
        assert len(distinct) <= len(mine)


@given(st.lists(st.integers(0, 40), max_size=30), st.lists(st.integers(0, 50), max_size=10))
def test_pair_counts_by_table_and_by_sort_agree(keys, queries):
    from kipopt.evaluation.consumers import _counter

    keys, queries = np.array(keys, dtype=np.int64), np.array(queries, dtype=np.int64)
    expected = [int(np.count_nonzero(keys == q)) for q in queries]
    assert _counter(keys, 64)(queries).tolist() == expected           # a table
    assert _counter(keys, 1 << 40)(queries).tolist() == expected      # sorted keys (a universe too large to tabulate)


@pytest.mark.parametrize("seed", range(20))
def test_the_rule_count_read_from_the_last_evaluation_is_the_count(seed):
    from kipopt.formulations.consumers.rules import cross_rack

    rng = random.Random(seed)
    instance = instance_of(rng)
    first, second = assignment_of(instance, rng, unknown=False), assignment_of(instance, rng, unknown=False)
    index = group_index(instance)
    counted = [sum(cross_and_unknown(index, m.rack, a.get(m.id, ()))[0] for m in instance.members)
               for a in (first, second)]  # before any evaluation: nothing remembered
    assert not index.last
    evaluate_consumers(instance, first)
    assert cross_rack(instance, first) == counted[0] == evaluate_consumers(instance, first).metrics["cross_rack"]
    assert cross_rack(instance, second) == counted[1]  # another assignment is counted, not read


@pytest.mark.parametrize("seed", range(20))
def test_topic_of_maps_every_partition_to_its_topic(seed):
    """Built from the index's partition numbers (not the instance's per-partition rack sets): the same map,
    in the same order, with topic names that hold dashes too."""
    instance = instance_of(random.Random(seed))
    expected = {p: p.rpartition("-")[0] for p in instance.partition_racks}
    found = group_index(instance).topic_of
    assert found == expected and list(found) == list(expected)
