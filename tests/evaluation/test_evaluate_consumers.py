"""The consumers evaluator, checked against numbers computed by hand."""

from __future__ import annotations

import pytest

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
    assert (e.metrics["kept"], e.metrics["revoked"]) == (1, 0)


def test_violations(instance):
    """audit is not c2's topic; orders-1 is given twice; audit-1 to nobody; c1's owned orders-0 revoked."""
    assignment = {"c1": ("orders-1", "orders-2", "audit-0"), "c2": ("orders-1", "audit-0", "orders-0")}
    e = evaluate(instance, assignment)
    counts = {v.rule: v.count for v in e.violations}
    assert counts == {"unsubscribed": 1, "duplicate_partition": 2, "unassigned_partition": 1}
    assert e.metrics["revoked"] == 1


def test_solution_object_is_parsed_strictly(instance):
    """An unknown partition is bad input, naming the field (a member left out is a violation:
    tests/evaluation/test_missing_pieces.py)."""
    with pytest.raises(InstanceError, match=r"assignment\.c1\[0\]"):
        evaluate(instance, {"assignment": {"c1": ["orders-7"], "c2": []}})
