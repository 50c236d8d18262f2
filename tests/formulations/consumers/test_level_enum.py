"""Small boxes enumerated: every vector's bound from the (node, state) tables equals the Lagrangian bound at
that vector alone, an enumerated item hands its vectors out least bound first and drops those priced out,
and the level tree that enumerates small boxes proves the optimum brute force and the member MILP give."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import kipopt.formulations.consumers.level_policy as level_policy
from kipopt.formulations.consumers.groups import layout
from kipopt.formulations.consumers.level_enum import Enumerated, bounds, states, vector_count
from kipopt.formulations.consumers.level_lagrange import lagrangian_bound, prices
from kipopt.formulations.consumers.level_tree import search_tree
from kipopt.formulations.consumers.level_warm import box_terms, leaf_lp, relax
from kipopt.formulations.consumers.member_milp import solve_members
from kipopt.formulations.consumers.rules import balanced_objective, balanced_violations

from consumer_cases import brute_force, tiny_groups
from test_level_search import small_groups, tree_per_setting
from test_level_tree import _leaf_setting, _vector

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _box(tr, rnd, most: int) -> tuple[np.ndarray, np.ndarray]:
    """A random box of the root with at most ``most`` vectors."""
    lo = _vector(tr, rnd)
    hi = np.minimum(tr.hi, lo + np.array([rnd.randint(0, 3) for _ in lo]))
    while vector_count(lo, hi) > most:
        hi[int(np.argmax(hi - lo))] -= 1
    return lo, hi


def _root_leaf(inst):
    """``(root tree, leaf LP family)`` of a group with topics, else ``None``."""
    setting = _leaf_setting(inst)
    if setting is None:
        return None
    space, tr, net = setting
    return tr, leaf_lp(space, net)


def _one(leaf, vector, price) -> float:
    terms = box_terms(leaf, vector[None], vector[None])
    return lagrangian_bound(leaf, vector, terms.mu_lo[0], terms.mu_hi[0], price)


@SETTINGS
@given(small_groups(), st.randoms(use_true_random=False))
def test_every_vectors_bound_equals_its_own_lagrangian(inst, rnd):
    """At random prices and at a leaf LP's supply duals: the table bound of each vector of a random box
    (at most 64 vectors, each listed once, in the box) equals ``lagrangian_bound`` at that vector."""
    case = _root_leaf(inst)
    if case is None:
        return
    tr, leaf = case
    lo, hi = _box(tr, rnd, 64)
    st_ = states(leaf, lo, hi)
    assert st_ is not None
    listed = {tuple(v) for v in st_.vectors.tolist()}
    assert listed == set(itertools.product(*[range(int(a), int(b) + 1) for a, b in zip(lo, hi)]))
    assert len(st_.vectors) == vector_count(lo, hi)
    price = np.array([rnd.uniform(-3.0, 3.0) for _ in leaf.group_sizes])
    result = relax(leaf, lo)
    if result.status == "optimal" and rnd.random() < 0.5:
        price = prices(leaf, result.row_dual)
    got = bounds(leaf, st_, st_.vectors, price)
    for vector, value in zip(st_.vectors, got):
        assert value == _one(leaf, vector, price)


@SETTINGS
@given(small_groups(), st.randoms(use_true_random=False))
def test_an_item_hands_out_its_vectors_least_bound_first(inst, rnd):
    """Priced at a leaf optimum's duals, an item keeps exactly the vectors bounded below the best, each
    with the greater of the box's bound and its own; taken out one at a time, least bound first, until
    none is left (``floor`` then ``inf``); duals already applied are not applied again."""
    case = _root_leaf(inst)
    if case is None:
        return
    tr, leaf = case
    lo, hi = _box(tr, rnd, 32)
    result = relax(leaf, _vector(tr, rnd))
    if result.status != "optimal":
        return
    start = float(rnd.randint(0, 5))
    own = bounds(leaf, states(leaf, lo, hi), states(leaf, lo, hi).vectors, prices(leaf, result.row_dual))
    best = float(np.median(np.maximum(own, start))) + rnd.choice([0.0, 0.5, 1.0])
    item = Enumerated.of(leaf, lo, hi, start)
    item.reprice(leaf, [result.row_dual, None, result.row_dual], best)
    assert item.priced == [result.row_dual]
    expected = sorted(b for b in np.maximum(own, start) if b < best)
    taken = []
    while len(item.vectors):
        assert item.floor == min(item.bound)
        taken.append(item.least()[1])
    assert taken == expected and item.floor == math.inf


@SETTINGS
@given(tiny_groups())
def test_a_tree_that_enumerates_every_box_equals_brute_force(inst):
    best, _ = brute_force(inst, "balanced")
    saved = level_policy.ENUM_AFTER_BOXES, level_policy.ENUM_MAX_VECTORS
    level_policy.ENUM_AFTER_BOXES, level_policy.ENUM_MAX_VECTORS = -1, 10**6
    try:
        found = search_tree(inst, layout(inst))
    finally:
        level_policy.ENUM_AFTER_BOXES, level_policy.ENUM_MAX_VECTORS = saved
    assert found is not None and found.assignment is not None
    assert not balanced_violations(inst, found.assignment)
    assert balanced_objective(inst, found.assignment) == found.value == found.bound == best


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_groups(), st.sampled_from([8, 64, 512]))
def test_a_tree_that_enumerates_small_boxes_equals_the_member_milp(inst, most):
    lay = layout(inst)
    saved = level_policy.ENUM_AFTER_BOXES, level_policy.ENUM_MAX_VECTORS
    level_policy.ENUM_AFTER_BOXES, level_policy.ENUM_MAX_VECTORS = -1, most
    try:
        found = search_tree(inst, lay)
    finally:
        level_policy.ENUM_AFTER_BOXES, level_policy.ENUM_MAX_VECTORS = saved
    _, status, optimum, _ = solve_members(inst, lay, 60)
    assert status == "optimal" and found is not None and found.assignment is not None
    assert not balanced_violations(inst, found.assignment)
    assert balanced_objective(inst, found.assignment) == found.value == found.bound == optimum


@pytest.mark.parametrize("seed", [2, 6, 9])
def test_enumerating_small_boxes_proves_the_same_optimum(seed, monkeypatch):
    """Mixed 40-member, 8-topic groups as run_balanced starts the tree: enumerating boxes of up to 256
    vectors from the first pop on proves the optimum the tree proves splitting them, and enumerates some."""
    value, runs = tree_per_setting(monkeypatch, seed, "ENUM_MAX_VECTORS", (0, 256), ENUM_AFTER_BOXES=0)
    split, listed = runs[0], runs[256]
    assert split.bound == listed.bound == min(value, split.value or value)
    assert (listed.value or value) == (split.value or value)
    assert listed.info["level_enumerated"] > 0 == split.info["level_enumerated"]


def test_the_live_budget_bounds_what_enumerated_boxes_hold(monkeypatch):
    """No room: no box is enumerated, the same optimum; little room: every box made fits what the boxes in
    line leave (their units come back as they run out), and the optimum is the same again."""
    import kipopt.formulations.consumers.level_enum as level_enum
    real = level_enum.Enumerated.of.__func__
    runs = {}
    for budget in (0, 20_000, 6_000_000):
        made = []

        def spy(cls, leaf, lo, hi, bound, most=level_enum.MAX_UNIT_STATES):
            item = real(cls, leaf, lo, hi, bound, most)
            made.append((most, None if item is None else item.size))
            return item

        monkeypatch.setattr(level_enum.Enumerated, "of", classmethod(spy))
        _, found = tree_per_setting(monkeypatch, 2, "ENUM_MAX_LIVE_UNITS", (budget,), ENUM_AFTER_BOXES=0)
        runs[budget] = found[budget]
        assert all(0 <= most <= budget and (size is None or size <= most) for most, size in made)
    assert runs[0].info["level_enumerated"] == 0 < runs[20_000].info["level_enumerated"]
    assert runs[0].bound == runs[20_000].bound == runs[6_000_000].bound
