"""Tiny consumer groups and their brute-force optima, shared by the exact models' tests."""

from __future__ import annotations

import itertools
from collections import Counter

from hypothesis import assume
from hypothesis import strategies as st

from kipopt import from_dict
from kipopt.formulations.consumers.groups import layout
from kipopt.formulations.consumers.rules import (balanced_objective, balanced_violations, owners, range_objective,
                                                range_violations)


def _all_assignments(inst):
    """Every assignment of each subscribed partition to one of its subscribers."""
    lay = layout(inst)
    cells = [(f"{t}-{p}", [m for m, ts in zip(lay.members, lay.member_topics) if t in ts])
             for t in lay.topics for p in range(inst.topics[t].partitions)]
    for choice in itertools.product(*(subs for _, subs in cells)):
        lists = {m: [] for m in lay.members}
        for (p, _), m in zip(cells, choice):
            lists[m].append(p)
        yield {m: tuple(v) for m, v in lists.items()}


def valid_assignments(inst):
    """Every assignment (as :func:`_all_assignments`) that meets the rule ``balanced``."""
    for a in _all_assignments(inst):
        if not balanced_violations(inst, a):
            yield a


def least_loads(lay, a) -> dict[str, int]:
    """Per topic of ``lay``, the least count among its subscribers in the assignment ``a``."""
    subs = dict(zip(lay.members, lay.member_topics))
    return {t: min(len(a[m]) for m in lay.members if t in subs[m]) for t in lay.topics}


def brute_force(inst, rule: str) -> tuple[float, float]:
    """``(rule optimum, optimum over the most balanced assignments)`` by enumeration."""
    objective = range_objective if rule == "range" else balanced_objective
    violations = range_violations if rule == "range" else balanced_violations
    best, squares, best_decmin = float("inf"), None, float("inf")
    found = []
    for a in _all_assignments(inst):
        if not violations(inst, a):
            value = objective(inst, a)
            best = min(best, value)
            found.append((sum(len(v) ** 2 for v in a.values()), value))
    squares = min(s for s, _ in found)
    best_decmin = min(v for s, v in found if s == squares)
    return best, best_decmin


racks = st.sampled_from([[], ["a"], ["b"], ["c"], ["a", "b"], ["b", "c"]])


@st.composite
def tiny_groups(draw):
    topics = {t: {"racks": draw(st.lists(racks, min_size=1, max_size=3))} for t in ("t", "u")}
    members, total = [], 0
    for i in range(3):
        subs = draw(st.sampled_from([["t"], ["u"], ["t", "u"]]))
        owned = [f"{t}-{p}" for t in subs for p in range(len(topics[t]["racks"])) if draw(st.booleans())]
        members.append({"id": f"c{i}", "rack": draw(st.sampled_from(["a", "b", "c", None])), "topics": subs,
                        "owned": owned, "generation": draw(st.integers(1, 2))})
    for t in topics:
        total += len(topics[t]["racks"]) * sum(t in m["topics"] for m in members)
    return from_dict({"format": 1, "family": "consumers", "topics": topics, "members": members})


def checked_value(inst, answer, status, bound):
    """The evaluator's value of a solver's answer, which meets the rule and, if ``optimal``, its bound."""
    assert answer is not None and not balanced_violations(inst, answer)
    value = balanced_objective(inst, answer)
    assert bound is not None and bound <= value
    if status == "optimal":
        assert value == bound
    return value


def coupled_group():
    """A rack-less group whose two-level coupling is tight, ``q = 2``: c0 owns all four partitions of t and
    gives up two at 2, one holding 3 with t at level 2; c2 owns nothing and goes down to 1 with u at level 1;
    c1 stays at 2."""
    topics = {"t": {"racks": [[]] * 4}, "u": {"racks": [[]] * 2}}
    return from_dict({"format": 1, "family": "consumers", "topics": topics,
                      "members": [{"id": "c0", "topics": ["t"], "owned": ["t-0", "t-1", "t-2", "t-3"]},
                                  {"id": "c1", "topics": ["t", "u"], "owned": []},
                                  {"id": "c2", "topics": ["u"], "owned": []}]})


@st.composite
def rackless_groups(draw):
    """Rack-less groups (no partition is ever read cross-rack) small enough to enumerate every assignment:
    three topics, and either two to four members of any topics (at most nine partitions) or two or three
    members of at most two topics each (at most twelve or nine partitions: ``q`` large enough for least
    loads two or three below it)."""
    deep = draw(st.booleans())
    sizes = {t: draw(st.integers(1, 6 if deep else 4)) for t in ("t", "u", "v")}
    count = draw(st.integers(2, 3) if deep else st.integers(2, 4))
    members = []
    for i in range(count):
        subs = draw(st.lists(st.sampled_from(sorted(sizes)), min_size=1, max_size=2 if deep else 3, unique=True))
        owned = [f"{t}-{p}" for t in subs for p in range(sizes[t]) if draw(st.booleans())]
        members.append({"id": f"c{i}", "topics": sorted(subs), "owned": owned, "generation": 1 + i % 2})
    assume(sum(sizes[t] for t in sizes if any(t in m["topics"] for m in members)) <= (12 if count == 2 else 9))
    return from_dict({"format": 1, "family": "consumers", "topics": {t: {"racks": [[]] * n} for t, n in sizes.items()},
                      "members": members})


def owned_beyond(inst, q: int) -> int:
    """The revocations with every member at ``q`` and no flow to meet, on a rack-less group (every owned
    partition keepable): ``O - Σ_m min(k_m, q)``, each member's owned partitions beyond ``q``."""
    return sum(max(n - q, 0) for n in Counter(owners(inst).values()).values())
