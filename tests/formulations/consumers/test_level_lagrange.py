"""The Lagrangian bound of a level vector or box at any supply prices: never above a balanced assignment
whose least loads lie in the box (brute force), at least the leaf LP at that LP's own supply duals, each
node's greedy equal to an LP; and the level tree that settles leaves and boxes with it proves the same
optimum."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from scipy.optimize import linprog

from kipopt.formulations.consumers.groups import layout
from kipopt.formulations.consumers.level_lagrange import _fill, lagrangian_bound, prices, vector_floor
from kipopt.formulations.consumers.level_warm import box_terms, leaf_lp, relax, relax_box
from kipopt.formulations.consumers.rules import balanced_objective, balanced_violations

from consumer_cases import _all_assignments, tiny_groups
from test_level_search import _least_loads, small_groups, tree_per_setting
from test_level_tree import _leaf_setting, _vector

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _root_leaf(inst):
    """``(level space, root tree, leaf LP family)`` of a group with topics, else ``None``."""
    setting = _leaf_setting(inst)
    if setting is None:
        return None
    space, tr, net = setting
    return space, tr, leaf_lp(space, net)


def _bound(leaf, lo, hi, price) -> float:
    terms = box_terms(leaf, lo[None], hi[None])
    return lagrangian_bound(leaf, hi, terms.mu_lo[0], terms.mu_hi[0], price)


def _prices(leaf, rnd, lo, hi) -> np.ndarray:
    """Supply prices: a box relaxation's (when it solves), else random ones."""
    result = relax_box(leaf, lo, hi)
    if result.status == "optimal" and rnd.random() < 0.5:
        return prices(leaf, result.row_dual)
    return np.array([rnd.uniform(-3.0, 3.0) for _ in leaf.group_sizes])


@SETTINGS
@given(tiny_groups(), st.randoms(use_true_random=False))
def test_the_bound_never_exceeds_a_balanced_assignment_in_its_box(inst, rnd):
    """Every balanced assignment (all of them, by enumeration) whose least loads lie in a random box of the
    root costs at least the box's bound, at a relaxation's supply duals or at random prices; a box with
    such an assignment is never called empty (``inf``)."""
    case = _root_leaf(inst)
    if case is None:
        return
    space, tr, leaf = case
    lo = _vector(tr, rnd)
    hi = lo.copy() if rnd.random() < 0.4 else np.array([rnd.randint(int(a), int(b)) for a, b in zip(lo, tr.hi)])
    bound = _bound(leaf, lo, hi, _prices(leaf, rnd, lo, hi))
    lay = layout(inst)
    for a in _all_assignments(inst):
        least = _least_loads(inst, lay, a)
        if (least >= lo).all() and (least <= hi).all() and not balanced_violations(inst, a):
            assert bound <= balanced_objective(inst, a)


@SETTINGS
@given(tiny_groups(), st.randoms(use_true_random=False))
def test_a_vectors_floor_never_exceeds_its_assignments(inst, rnd):
    """``vector_floor`` (what the sweep skips a leaf LP by): ``-inf`` before any leaf LP left duals, then at
    most every balanced assignment (all of them, by enumeration) whose least loads are the vector."""
    case = _root_leaf(inst)
    if case is None:
        return
    space, tr, leaf = case
    vector = _vector(tr, rnd)
    assert vector_floor(leaf, vector) == -math.inf
    relax(leaf, vector if rnd.random() < 0.3 else _vector(tr, rnd))   # some leaf's duals carried
    floor = vector_floor(leaf, vector)
    lay = layout(inst)
    for a in _all_assignments(inst):
        if (_least_loads(inst, lay, a) == vector).all() and not balanced_violations(inst, a):
            assert floor <= balanced_objective(inst, a)


@SETTINGS
@given(small_groups(), st.randoms(use_true_random=False))
def test_a_box_is_bounded_by_no_more_than_any_of_its_vectors(inst, rnd):
    """At the same prices a box's bound is at most each of its vectors' (each node's problem over the box
    holds its problem at every vector of it): random boxes of at most 64 vectors, every vector checked."""
    case = _root_leaf(inst)
    if case is None:
        return
    space, tr, leaf = case
    lo = _vector(tr, rnd)
    hi = np.minimum(tr.hi, lo + np.array([rnd.randint(0, 3) for _ in lo]))
    while np.prod(hi - lo + 1) > 64:
        hi[int(np.argmax(hi - lo))] -= 1
    price = _prices(leaf, rnd, lo, hi)
    bound = _bound(leaf, lo, hi, price)
    for vector in itertools.product(*[range(int(a), int(b) + 1) for a, b in zip(lo, hi)]):
        vector = np.array(vector, dtype=np.int64)
        assert bound <= _bound(leaf, vector, vector, price)


@SETTINGS
@given(small_groups(), st.randoms(use_true_random=False))
def test_at_a_vector_its_own_lp_duals_bound_at_least_its_lp(inst, rnd):
    """Priced at the supply duals of a vector's own leaf LP, each node's modes apart, the bound is at least
    that LP's value (the LP mixes the modes; the bound does not)."""
    case = _root_leaf(inst)
    if case is None:
        return
    space, tr, leaf = case
    vector = _vector(tr, rnd)
    result = relax(leaf, vector)
    if result.status != "optimal":
        return
    lp = math.ceil(result.objective - 1e-6) + space.owned_total
    assert _bound(leaf, vector, vector, prices(leaf, result.row_dual)) >= lp


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.floats(-4, 4), st.integers(0, 3)), min_size=1, max_size=12),
       st.integers(0, 6), st.integers(0, 3))
def test_the_greedy_fill_equals_its_lp(units, least, extra):
    """Per pair, the cheapest units up to the count range: equal to the LP ``min Σ c x, least <= Σ x <= most,
    0 <= x <= cap`` (scipy), and ``inf`` exactly where that LP is infeasible."""
    pair = np.array([p for p, _, _ in units])
    cost = np.array([c for _, c, _ in units])
    cap = np.array([float(k) for _, _, k in units])
    lows = np.array([float(least + p) for p in range(3)])
    highs = lows + extra
    got = _fill(pair, cost, cap, lows, highs, 3)
    for p in range(3):
        mine = pair == p
        row = np.ones((1, int(mine.sum())))
        res = linprog(cost[mine], A_ub=np.vstack([row, -row]), b_ub=[highs[p], -lows[p]],
                      bounds=list(zip([0.0] * int(mine.sum()), cap[mine])), method="highs") if mine.any() else None
        if res is None:
            assert got[p] == (0.0 if lows[p] <= 0 else math.inf)
        elif res.status == 2:
            assert got[p] == math.inf
        else:
            assert got[p] == pytest.approx(res.fun, abs=1e-7)


@pytest.mark.parametrize("seed", [2, 6, 9])
def test_the_tree_settling_by_supply_prices_proves_the_same_optimum(seed, monkeypatch):
    """Mixed 40-member, 8-topic groups bounded as the largest groups are (no box relaxations, boxes bounded
    by the leaves' carried duals): with leaves and boxes also settled by the Lagrangian bound at those
    duals' supply prices, the tree proves the optimum it proves without, some leaves settled so."""
    value, by_threshold = tree_per_setting(monkeypatch, seed, "PRICED_MIN_COLUMNS", (10**9, 0), BOX_LP_MAX_COLUMNS=0)
    runs = {False: by_threshold[10**9], True: by_threshold[0]}   # priced: every leaf LP is above threshold 0
    assert runs[False].bound == runs[True].bound == min(value, runs[False].value or value)
    assert runs[True].value == runs[False].value
    assert runs[True].info["level_priced"] > 0 == runs[False].info["level_priced"]
