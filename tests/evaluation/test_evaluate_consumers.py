"""The consumers evaluator, checked against numbers computed by hand."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from kipopt import evaluate, from_dict
from kipopt.errors import InstanceError

from examples import CONSUMERS_SPEC_EXAMPLE as SPEC_EXAMPLE

@pytest.fixture
def instance():
    return from_dict(SPEC_EXAMPLE)


def test_rack_local_assignment(instance):
    """orders-0 (r1,r2) and orders-2 (r3,r1) are local to c1 in r1; orders-1 (r2,r3) to c2; audit-1
    lives on r2 only, so c1 (the only subscriber of audit) reads it cross-rack."""
    assignment = {"c1": ("orders-0", "orders-2", "audit-0", "audit-1"), "c2": ("orders-1",)}
    e = evaluate(instance, assignment)
    assert e.feasible
    assert e.metrics["cross_rack"] == 1
    assert e.metrics["imbalance"] == 3
    assert e.metrics["topic_imbalance"] == {"orders": 1, "audit": 0}
    assert (e.metrics["kept"], e.metrics["claims_revoked"]) == (1, 0)


def test_violations(instance):
    """audit is not c2's topic; orders-1 is given twice; audit-1 to nobody; c1's owned orders-0 revoked."""
    assignment = {"c1": ("orders-1", "orders-2", "audit-0"), "c2": ("orders-1", "audit-0", "orders-0")}
    e = evaluate(instance, assignment)
    counts = {v.rule: v.count for v in e.violations}
    assert counts == {"unsubscribed": 1, "duplicate_partition": 2, "unassigned_partition": 1}
    assert e.metrics["claims_revoked"] == 1


def test_solution_object_is_parsed_strictly(instance):
    """An unknown partition is bad input, naming the field (a member left out is a violation:
    tests/evaluation/test_missing_pieces.py)."""
    with pytest.raises(InstanceError, match=r"assignment\.c1\[0\]"):
        evaluate(instance, {"assignment": {"c1": ["orders-7"], "c2": []}})


def _reference(instance, assignment):
    """The evaluator's definitions, written out partition by partition (no index, no set tricks)."""
    racks, given, cross, unknown, rules = instance.partition_racks, {}, 0, 0, set()
    per_topic = {t: {} for t in instance.topics}
    for m in instance.members:
        for p in assignment.get(m.id, ()):
            given[p] = given.get(p, 0) + 1
            t = p.rpartition("-")[0]
            per_topic[t][m.id] = per_topic[t].get(m.id, 0) + 1
            if t not in m.topics:
                rules.add("unsubscribed")
            if m.rack is None or not racks[p]:
                unknown += 1
            elif m.rack not in racks[p]:
                cross += 1
    rules |= {"duplicate_partition" for n in given.values() if n > 1}
    rules |= {"unassigned_partition" for p in instance.subscribed_partitions if p not in given}
    spread = {}
    for t in instance.topics:
        subs = [per_topic[t].get(m.id, 0) for m in instance.members if t in m.topics]
        if subs:
            spread[t] = max(subs) - min(subs)
    kept = sum(len(set(m.owned) & set(assignment.get(m.id, ()))) for m in instance.members)
    return {"cross_rack": cross, "rack_unknown": unknown, "topic_imbalance": spread,
            "claims_revoked": sum(len(m.owned) for m in instance.members) - kept, "rules": rules}


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 10_000), st.integers(1, 6), st.sampled_from(["equal", "mixed"]), st.data())
def test_matches_the_reference_on_random_assignments(seed, members, subscriptions, data):
    """Any assignment (unsubscribed, duplicated, missing partitions included) is counted as the
    definitions say, however the evaluator indexes the group."""
    from kipopt.datasets import generate
    inst = generate("consumers", seed, members=members, topics=3, partitions=8, subscriptions=subscriptions)
    parts = list(inst.partition_racks)
    assignment = {m.id: tuple(data.draw(st.lists(st.sampled_from(parts), max_size=6))) for m in inst.members}
    e = evaluate(inst, assignment)
    want = _reference(inst, assignment)
    assert {k: e.metrics[k] for k in ("cross_rack", "rack_unknown", "topic_imbalance", "claims_revoked")} == \
        {k: v for k, v in want.items() if k != "rules"}
    assert {v.rule for v in e.violations} == want["rules"]
