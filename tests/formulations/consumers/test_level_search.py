"""The level search of ``exact.balanced``: its lemma, its screening bounds and its answers checked
against brute force and the (member, partition group) MILP."""

from __future__ import annotations

import time

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from kipopt.datasets import generate
from kipopt.formulations.consumers.groups import layout
from kipopt.formulations.consumers.level_search import _mu, _screen, level_space, search_levels
from kipopt.formulations.consumers.member_milp import solve_members
from kipopt.formulations.consumers.rules import balanced_objective, balanced_violations

from consumer_cases import _all_assignments, brute_force, tiny_groups

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _least_loads(inst, lay, a) -> np.ndarray:
    x = {m: len(a.get(m, ())) for m in lay.members}
    return np.array([min(x[m] for i, m in enumerate(lay.members) if t in lay.member_topics[i])
                     for t in lay.topics], dtype=np.int64)


def _meets_levels(lay, space, a, vector) -> bool:
    """Every member high (μ + 1, topics at μ only) or low (μ, topics at μ - 1 or μ) for ``vector``."""
    mu = _mu(space, vector[None])[0]
    level = dict(zip(lay.topics, vector.tolist()))
    for i, m in enumerate(lay.members):
        parts = a.get(m, ())
        c = int(space.member_class[i])
        held = {p.rpartition("-")[0] for p in parts}
        if len(parts) == mu[c] + 1:
            ok = all(level[t] == mu[c] for t in held)
        else:
            ok = len(parts) == mu[c] and all(level[t] >= mu[c] - 1 for t in held)
        if not ok:
            return False
    return True


@SETTINGS
@given(tiny_groups())
def test_lemma_and_screen_hold_for_every_assignment(inst):
    """An assignment meets the rule iff some vector of the screened box meets the levels (the least
    loads do when it does), and no screened-out vector or bound cuts off a balanced assignment."""
    lay = layout(inst)
    space = level_space(inst, lay)
    assert space is not None
    vectors = {tuple(v): b for v, b in zip(space.vectors.tolist(), space.bounds.tolist())}
    for a in _all_assignments(inst):
        balanced = not balanced_violations(inst, a)
        least = _least_loads(inst, lay, a)
        if balanced:
            assert _meets_levels(lay, space, a, least)
            assert tuple(least.tolist()) in vectors
            assert vectors[tuple(least.tolist())] <= balanced_objective(inst, a)
        else:
            assert not any(_meets_levels(lay, space, a, np.array(v)) for v in vectors)


@SETTINGS
@given(tiny_groups())
def test_search_equals_brute_force(inst):
    from kipopt.formulations.consumers.balanced import free_bound
    best, _ = brute_force(inst, "balanced")
    assert free_bound(inst, layout(inst)) <= best
    found = search_levels(inst, layout(inst))
    assert found is not None and found.assignment is not None
    assert not balanced_violations(inst, found.assignment)
    assert balanced_objective(inst, found.assignment) == found.value == found.bound == best


@st.composite
def small_groups(draw):
    """Mixed subscriptions, ownership history (double claims, stale generations), racks, static members."""
    params = dict(partitions=draw(st.integers(4, 40)), members=draw(st.integers(2, 9)),
                  topics=draw(st.integers(1, 4)), subscriptions=draw(st.sampled_from(["mixed", "mixed", "equal"])),
                  replication_factor=draw(st.integers(1, 3)), conflicts=draw(st.sampled_from([0.0, 0.2])),
                  rackless_partitions=draw(st.sampled_from([0.0, 0.25])),
                  static_members=draw(st.sampled_from([0.0, 0.5])))
    return generate("consumers", draw(st.integers(0, 10_000)), **params)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_groups())
def test_search_equals_member_milp(inst):
    lay = layout(inst)
    found = search_levels(inst, lay)
    answer, status, bound, _ = solve_members(inst, lay, 60)
    assert status == "optimal" and found is not None and found.assignment is not None
    assert not balanced_violations(inst, found.assignment)
    value = balanced_objective(inst, found.assignment)
    assert value == found.value == found.bound == balanced_objective(inst, answer) == bound


def test_incumbent_prunes_and_bound_stays_valid():
    """Given the optimum as incumbent, the search returns no assignment and the bound equals it; with
    a deadline already past, the bound is still at most the optimum."""
    inst = generate("consumers", 1003, members=12, topics=3, partitions=40, subscriptions="mixed")
    lay = layout(inst)
    found = search_levels(inst, lay)
    assert found is not None and found.bound == found.value
    again = search_levels(inst, lay, incumbent=found.value)
    assert again.assignment is None and again.bound == found.value
    late = search_levels(inst, lay, deadline=time.perf_counter() - 1)
    assert late.assignment is None and late.bound <= found.value


def test_screen_is_vectorised_over_the_box():
    inst = generate("consumers", 5, members=20, topics=3, partitions=60, subscriptions="mixed")
    space = level_space(inst, layout(inst))
    ok, bounds = _screen(space, space.vectors)
    assert ok.all() and np.array_equal(bounds, space.bounds)


def test_large_boxes_are_declined():
    inst = generate("consumers", 9, members=13, topics=8, partitions=78, subscriptions="mixed")
    assert search_levels(inst, layout(inst), max_vectors=10) is None


def decmin_incumbent(inst, lay):
    """As run_balanced starts a search: the dec-min answer's value, and per partition group its least
    cross-rack cost when that answer has the balance-free least cross-rack count (else ``None``)."""
    from kipopt.formulations.consumers.balanced import cheapest, layout_cross, least_cross, solve_balanced
    decmin, _, _ = solve_balanced(inst, lay=lay)
    least = cheapest(lay) if layout_cross(lay, decmin) == least_cross(lay) else None
    return balanced_objective(inst, decmin), least


def tree_per_setting(monkeypatch, seed: int, setting: str, values, **fixed):
    """A mixed 40-member, 8-topic group searched by the level tree as run_balanced starts it, once per value
    of ``level_policy.<setting>`` (after ``fixed`` policy settings): the dec-min value and the results by
    value."""
    import kipopt.formulations.consumers.level_policy as level_policy
    import kipopt.formulations.consumers.level_tree as level_tree
    inst = generate("consumers", seed, members=40, topics=8, partitions=1_000, subscriptions="mixed")
    lay = layout(inst)
    value, least = decmin_incumbent(inst, lay)
    for name, fixed_value in fixed.items():
        monkeypatch.setattr(level_policy, name, fixed_value)
    runs = {}
    for v in values:
        monkeypatch.setattr(level_policy, setting, v)
        runs[v] = level_tree.search_tree(inst, lay, incumbent=value, best=least)
    return value, runs


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_groups())
def test_search_from_the_decmin_incumbent_reaches_the_optimum(inst):
    """As run_balanced calls it: the dec-min value as incumbent and, when that answer has the
    balance-free least cross-rack, only least-cost pairs; the better of the two is the optimum and the
    bound meets it."""
    lay = layout(inst)
    value, least = decmin_incumbent(inst, lay)
    found = search_levels(inst, lay, incumbent=value, best=least)
    _, status, optimum, _ = solve_members(inst, lay, 60)
    assert status == "optimal"
    if found.assignment is not None:
        assert not balanced_violations(inst, found.assignment)
        value = balanced_objective(inst, found.assignment)
        assert value == found.value
    assert value == found.bound == optimum
