"""Rules ``range`` and ``balanced`` on hand-made assignments, broken and not."""

from __future__ import annotations

import pytest

from kipopt import from_dict
from kipopt.formulations.consumers.rules import (balanced_objective, balanced_parts, balanced_violations,
                                                cross_rack, owners, range_objective, range_violations, revoked)
from kipopt.methods import get_rule


def _instance(members, topics=None):
    topics = topics or {"t": {"racks": [["a"], ["b"], ["a", "b"], []]}, "u": {"racks": [["b"], ["a"]]}}
    return from_dict({"format": 1, "family": "consumers", "topics": topics, "members": members})


@pytest.fixture
def group():
    return _instance([
        {"id": "c1", "rack": "a", "topics": ["t", "u"], "owned": ["t-0", "u-0"], "generation": 3},
        {"id": "c2", "rack": "b", "topics": ["t"], "owned": ["t-0", "t-1"], "generation": 3},
        {"id": "c3", "rack": None, "topics": ["t", "u"], "owned": ["u-0"], "generation": 4},
    ])


def test_registered():
    assert get_rule("range", "consumers").exact_method == "exact.range"
    assert get_rule(None, "consumers").name == "balanced"
    assert get_rule("balanced", "consumers").exact_method == "exact.balanced"


def test_cross_rack_needs_racks_on_both_sides(group):
    """t-3 has no replica rack and c3 no rack: neither is ever cross-rack; c1 (a) reading t-1 (b) is."""
    assert cross_rack(group, {"c1": ("t-1", "t-3"), "c2": (), "c3": ("u-0", "u-1", "t-0")}) == 1
    assert cross_rack(group, {"c1": ("t-0", "u-1"), "c2": ("t-1", "t-2"), "c3": ("t-3", "u-0")}) == 0


def test_ownership_resolution(group):
    """t-0: c1 and c2 both at generation 3, so nobody owns it; u-0: c3's generation 4 beats c1's 3."""
    assert owners(group) == {"t-1": "c2", "u-0": "c3"}


def test_balanced_objective_is_lexicographic(group):
    a = {"c1": ("t-1", "u-1"), "c2": ("t-0", "t-2"), "c3": ("t-3", "u-0")}
    assert balanced_parts(group, a) == {"cross_rack": 2, "revoked": 1, "weight": 3}  # t-1 on a, t-0 on b
    assert balanced_objective(group, a) == 2 * 3 + 1
    assert revoked(group, {"c1": (), "c2": ("t-1",), "c3": ("u-0",)}) == 0


def test_range_quota(group):
    """t: 4 partitions over 3 subscribers -> 1 or 2 each; u: 2 over 2 -> 1 each."""
    good = {"c1": ("t-0", "t-1", "u-0"), "c2": ("t-2",), "c3": ("t-3", "u-1")}
    assert range_violations(group, good) == []
    assert range_objective(group, good) == 2  # c1 (a) reads t-1 and u-0 from b
    bad = {"c1": ("t-0", "t-1", "t-2", "u-0", "u-1"), "c2": ("t-3",), "c3": ()}
    (v,) = range_violations(group, bad)
    assert v.rule == "range_quota" and v.count == 4  # c1 on t (3) and u (2), c3 on t (0) and u (0)


def test_balance_uniform_is_floor_ceil():
    x = _instance([{"id": f"c{i}", "rack": "a", "topics": ["t", "u"]} for i in range(3)])
    assert balanced_violations(x, {"c0": ("t-0", "t-1"), "c1": ("t-2", "u-0"), "c2": ("t-3", "u-1")}) == []
    (v,) = balanced_violations(x, {"c0": ("t-0", "t-1", "t-2"), "c1": ("t-3", "u-0"), "c2": ("u-1",)})
    assert v.rule == "balance" and v.count == 1  # topic t (3 vs 1); on u the spread is 2 vs 1


def test_balance_is_pairwise_not_most_balanced():
    """A{t}, B{t,u}, C{u} holding 1, 2, 3: no direct move helps (2, 2, 2 needs a chain through B),
    which is the sticky assignor's promise and what it leaves when everyone keeps what they own."""
    x = _instance([{"id": "A", "topics": ["t"]}, {"id": "B", "topics": ["t", "u"]}, {"id": "C", "topics": ["u"]}],
                  topics={"t": {"racks": [[], [], []]}, "u": {"racks": [[], [], []]}})
    assert balanced_violations(x, {"A": ("t-0",), "B": ("t-1", "t-2"), "C": ("u-0", "u-1", "u-2")}) == []
    (v,) = balanced_violations(x, {"A": (), "B": ("t-0", "t-1", "t-2"), "C": ("u-0", "u-1", "u-2")})
    assert "A" in v.examples[0] and v.count == 1
