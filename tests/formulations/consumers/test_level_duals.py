"""Bounds from one box relaxation's row duals: equal, box by box, to weak duality on that box's own
relaxation; the shave they drive keeps every balanced assignment that beats the best in hand (brute
force); and the level tree that shaves with them needs fewer box relaxations for the same proof."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kipopt.datasets import generate
from kipopt.formulations.consumers.groups import layout
from kipopt.formulations.consumers.decmin import solve_balanced
from kipopt.formulations.consumers.level_bounds import tree
from kipopt.formulations.consumers.level_search import arcs
from kipopt.formulations.consumers.level_duals import dual_bounds, shave
from kipopt.formulations.consumers.level_answers import least_loads_of, rule_units
from kipopt.formulations.consumers.level_warm import _model, leaf_lp, relax, relax_box
from kipopt.formulations.consumers.rules import balanced_objective, balanced_violations
from kipopt.formulations.highs import dual_bound

from consumer_cases import _all_assignments, tiny_groups
from test_level_search import _least_loads, small_groups, tree_per_setting
from test_level_tree import _leaf_setting, _vector

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _relaxed_box(inst, rnd):
    """``(space, leaf LP family, lo, hi, row duals of the box's relaxation)`` for a random box of the root
    whose relaxation is optimal; ``None`` when there is none."""
    setting = _leaf_setting(inst)
    if setting is None:
        return None
    space, tr, net = setting
    leaf = leaf_lp(space, net)
    lo = tr.lo.copy() if rnd.random() < 0.3 else _vector(tr, rnd)  # from the root's least levels, or anywhere
    hi = np.array([rnd.randint(int(a), int(b)) for a, b in zip(lo, tr.hi)], dtype=np.int64)
    result = relax_box(leaf, lo, hi)
    if result.status != "optimal":
        return None
    return space, tr, leaf, lo, hi, result.row_dual


@SETTINGS
@given(small_groups(), st.randoms(use_true_random=False))
def test_batch_bounds_equal_weak_duality_on_each_box_relaxation(inst, rnd):
    case = _relaxed_box(inst, rnd)
    if case is None:
        return
    space, tr, leaf, _, _, dual = case
    los = np.array([_vector(tr, rnd) for _ in range(8)])
    his = np.array([[rnd.randint(int(a), int(b)) for a, b in zip(lo, tr.hi)] for lo in los], dtype=np.int64)
    his[::3] = los[::3]  # single vectors too
    expected = []
    for lo, hi in zip(los, his):
        value = dual_bound(_model(leaf, lo, hi), dual)
        expected.append(math.ceil(value - 1e-6) + space.owned_total if math.isfinite(value) else -math.inf)
    assert np.array_equal(dual_bounds(leaf, los, his, dual), np.array(expected))


@SETTINGS
@given(small_groups(), st.randoms(use_true_random=False))
def test_a_box_bounds_itself_at_its_own_optimum(inst, rnd):
    """Its own optimal duals bound a box at its optimum (strong duality). (Not a sub-box: a narrower box's
    relaxation has other coefficients, not only tighter bounds, so the same duals may say less there.)"""
    case = _relaxed_box(inst, rnd)
    if case is None:
        return
    space, _, leaf, lo, hi, dual = case
    own = math.ceil(relax_box(leaf, lo, hi).objective - 1e-6) + space.owned_total
    assert dual_bounds(leaf, lo[None], hi[None], dual)[0] == own


@SETTINGS
@given(tiny_groups(), st.randoms(use_true_random=False), st.integers(1, 4))
def test_shave_keeps_every_assignment_that_beats_the_best(inst, rnd, above):
    """Whatever the shave cuts holds no balanced assignment below ``best`` (brute force): each such
    assignment whose least loads lie in the box still lies in the shaved box, and a box said to hold
    none holds none."""
    case = _relaxed_box(inst, rnd)
    if case is None:
        return
    _, _, leaf, lo, hi, dual = case
    lay = layout(inst)
    inside = [(balanced_objective(inst, a), _least_loads(inst, lay, a)) for a in _all_assignments(inst)
              if not balanced_violations(inst, a)]
    inside = [(v, least) for v, least in inside if (least >= lo).all() and (least <= hi).all()]
    if not inside:
        return
    best = min(v for v, _ in inside) + above
    box = shave(leaf, lo, hi, best, dual)
    for value, least in inside:
        if value < best:
            assert box is not None
            assert (least >= box[0]).all() and (least <= box[1]).all()


@pytest.mark.parametrize("seed", [2, 6])
def test_shave_cuts_only_vectors_whose_relaxation_reaches_the_best(seed):
    """Mixed 40-member, 8-topic groups, the box of two levels a topic below the dec-min answer's least
    loads, ``best`` a tenth of the way up its 256 vectors' relaxations: the shave cuts a level, and every
    vector whose relaxation (a bound on its MILP, the rule's optimum there) is below ``best`` stays."""
    inst = generate("consumers", seed, members=40, topics=8, partitions=1_000, subscriptions="mixed")
    lay = layout(inst)
    tr = tree(inst, lay, restrict=False)
    leaf = leaf_lp(tr.space, arcs(tr.space))
    least = np.clip(least_loads_of(lay, solve_balanced(inst, lay=lay)[0]), tr.lo, tr.hi)
    lo = np.maximum(tr.lo, least - 1)
    hi = np.minimum(tr.hi, lo + 1)
    values = {}
    for v in itertools.product(*[range(a, b + 1) for a, b in zip(lo, hi)]):
        result = relax(leaf, np.array(v))
        values[v] = math.inf if result.status == "infeasible" else rule_units(tr.space, result.objective)
    best = sorted(values.values())[len(values) // 10]
    box = shave(leaf, lo, hi, best, relax_box(leaf, lo, hi).row_dual)
    assert box is not None and (box[1] - box[0]).sum() < (hi - lo).sum()
    for v, value in values.items():
        if value < best:
            assert (np.array(v) >= box[0]).all() and (np.array(v) <= box[1]).all()


def test_the_tree_shaved_by_duals_proves_the_same_optimum_with_fewer_box_relaxations(monkeypatch):
    """A mixed 40-member, 8-topic group: the same proven optimum with and without the shave, and fewer box
    relaxations with it."""
    value, runs = tree_per_setting(monkeypatch, 2, "DUAL_SHAVE", (0, 1))
    assert runs[0].bound == runs[1].bound == min(value, runs[1].value or value)
    assert runs[1].info["level_box_lps"] < runs[0].info["level_box_lps"]


def test_a_shave_past_its_deadline_returns_the_box_shaved_so_far():
    """One topic whose levels below 5 cannot beat the best: shaved to [5, 10] in full; past its deadline,
    after one batch, to [1, 10] (the lowest level cut), with no batch for halving."""
    from kipopt.formulations.consumers.level_bounds import shave_box

    def bounds_of(los, his):
        return np.where(his[:, 0] < 5, 10.0, 0.0)
    lo, hi = np.array([0]), np.array([10])
    full = shave_box(lo, hi, 10.0, bounds_of)
    assert full is not None and (full.lo[0], full.hi[0]) == (5, 10) and len(full.los) == 4
    early = shave_box(lo, hi, 10.0, bounds_of, until=0.0)
    assert early is not None and (early.lo[0], early.hi[0]) == (1, 10) and len(early.los) == 0


@pytest.mark.parametrize("seed", [2, 6, 9])
def test_boxes_bounded_by_the_leaves_carried_duals_keep_the_proven_optimum(seed, monkeypatch):
    """Mixed 40-member, 8-topic groups, with no box relaxation solved (as on groups whose leaf LPs are too
    large for them): boxes are bounded, cut and shaved by the duals the leaves' solves leave behind
    (weak duality, no solve), and the tree proves the optimum it proves on the closed form alone, with
    fewer boxes."""
    value, runs = tree_per_setting(monkeypatch, seed, "CARRIED_BOX_BOUNDS", (False, True), BOX_LP_MAX_COLUMNS=0)
    assert runs[False].bound == runs[True].bound == min(value, runs[False].value or value)
    assert runs[True].info["level_dual_cut"] + runs[True].info["level_dual_raised"] > 0
    assert runs[True].info["level_boxes"] < runs[False].info["level_boxes"]


def test_bounds_in_chunks_equal_the_whole_batch(monkeypatch):
    """A batch bounded in chunks of one box (as :data:`BATCH_ENTRIES` cuts batches of large models) gives
    the bounds of the whole batch at once."""
    import kipopt.formulations.consumers.level_duals as level_duals
    inst = generate("consumers", 2, members=40, topics=8, partitions=1_000, subscriptions="mixed")
    lay = layout(inst)
    tr = tree(inst, lay, restrict=False)
    leaf = leaf_lp(tr.space, arcs(tr.space))
    dual = relax_box(leaf, tr.lo, tr.hi).row_dual
    rng = np.random.default_rng(3)
    los = np.array([[rng.integers(a, b + 1) for a, b in zip(tr.lo, tr.hi)] for _ in range(9)])
    his = np.minimum(los + rng.integers(0, 3, los.shape), tr.hi)
    whole = dual_bounds(leaf, los, his, dual)
    monkeypatch.setattr(level_duals, "BATCH_ENTRIES", 1)
    assert np.array_equal(dual_bounds(leaf, los, his, dual), whole)
    assert np.isfinite(whole).any()
