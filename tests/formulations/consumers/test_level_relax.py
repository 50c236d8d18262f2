"""The box relaxation (the leaves' LP over a whole box of topic levels): valid for every vector and every
balanced assignment of its box (brute force), equal to the leaf's own LP at a vector, and the level tree
that prunes with it still ends at the optimum."""

from __future__ import annotations

import itertools
import math
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import kipopt.formulations.consumers.level_policy as level_policy
import kipopt.formulations.consumers.level_local as level_local
from kipopt.formulations.consumers.groups import layout
from kipopt.formulations.consumers.level_search import fixed_model
from kipopt.formulations.consumers.level_tree import search_tree
from kipopt.formulations.consumers.level_warm import leaf_lp, relax, relax_box
from kipopt.formulations.consumers.rules import balanced_objective, balanced_violations
from kipopt.formulations.highs import solve_lp

from consumer_cases import _all_assignments, brute_force, tiny_groups
from test_level_search import _least_loads, small_groups
from test_level_tree import _leaf_setting, _vector

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _case(inst, rnd, narrow: bool = False):
    """``(space, leaf LP family, lo, hi)`` for a random box of the root (at most two levels per topic when
    ``narrow``); ``None`` for a group without topics."""
    setting = _leaf_setting(inst)
    if setting is None:
        return None
    space, tr, net = setting
    lo = _vector(tr, rnd)
    hi = (np.minimum(lo + 1, tr.hi) if narrow
          else np.array([rnd.randint(int(a), int(b)) for a, b in zip(lo, tr.hi)], dtype=np.int64))
    return space, leaf_lp(space, net), lo, hi


def _value(space, result) -> float:
    """The relaxation's bound in rule units (``inf`` when no vector of the box has a valid assignment)."""
    if result.status == "infeasible":
        return math.inf
    assert result.status == "optimal"
    return result.objective + space.owned_total


@SETTINGS
@given(tiny_groups(), st.randoms(use_true_random=False))
def test_box_relaxation_holds_for_every_balanced_assignment_in_the_box(inst, rnd):
    case = _case(inst, rnd)
    if case is None:
        return
    space, leaf, lo, hi = case
    value = _value(space, relax_box(leaf, lo, hi))
    lay = layout(inst)
    for a in _all_assignments(inst):
        if not balanced_violations(inst, a):
            least = _least_loads(inst, lay, a)
            if (least >= lo).all() and (least <= hi).all():
                assert value <= balanced_objective(inst, a) + 1e-6


@SETTINGS
@given(small_groups(), st.randoms(use_true_random=False))
def test_box_relaxation_is_at_most_every_vectors_relaxation_and_milp(inst, rnd):
    """Over a narrow box: at most each vector's own LP (so at most its MILP); at a vector, that LP."""
    case = _case(inst, rnd, narrow=True)
    if case is None:
        return
    space, leaf, lo, hi = case
    value = _value(space, relax_box(leaf, lo, hi))
    for v in itertools.product(*[range(a, b + 1) for a, b in zip(lo, hi)]):
        vector = np.array(v, dtype=np.int64)
        own = _value(space, relax(leaf, vector))
        assert value <= own + 1e-6
        assert math.isclose(_value(space, relax_box(leaf, vector, vector.copy())), own, abs_tol=1e-6)
        result = solve_lp(fixed_model(space, vector, leaf.net).lp, integer=True)
        if result.status == "optimal":
            assert own <= round(result.objective) + space.owned_total + 1e-6
    if math.isfinite(value):   # one below the optimum under a cutoff: proven above it
        cut = value - space.owned_total - 1.5
        settled = relax_box(leaf, lo, hi, cutoff=cut)
        assert settled.status == "cutoff" and settled.bound > cut or settled.status == "optimal"


@SETTINGS
@given(tiny_groups())
def test_tree_with_late_box_relaxations_equals_brute_force(inst):
    """Box LPs that join after the closed-form search has popped a box or two: the same optimum."""
    best, _ = brute_force(inst, "balanced")
    with mock.patch.object(level_policy, "BOX_LP_EAGER_COLUMNS", 0), mock.patch.object(level_policy, "BOX_LP_LATE_BOXES", 1):
        found = search_tree(inst, layout(inst))
    assert found is not None and found.value == found.bound == best


def test_no_box_relaxations_above_their_column_limit():
    """Above the limit the tree bounds boxes in closed form only, and still proves the optimum."""
    from kipopt.datasets import generate
    inst = generate("consumers", 3, members=12, topics=4, partitions=60, subscriptions="mixed")
    lay = layout(inst)
    plain = search_tree(inst, lay)
    with mock.patch.object(level_policy, "BOX_LP_MAX_COLUMNS", 1):
        closed = search_tree(inst, lay)
    assert closed.info["level_box_lps"] == 0 < plain.info["level_box_lps"]
    assert closed.value == closed.bound == plain.value == plain.bound


@SETTINGS
@given(tiny_groups())
def test_tree_with_box_relaxations_and_descent_equals_brute_force(inst):
    """From the dec-min answer (the descent starts at its least loads) and without it."""
    from kipopt.formulations.consumers.balanced import solve_balanced
    best, _ = brute_force(inst, "balanced")
    lay = layout(inst)
    plain = search_tree(inst, lay)
    assert plain is not None and plain.value == plain.bound == best
    answer, status, _ = solve_balanced(inst, None, None, lay)
    if answer is None:
        return
    value = balanced_objective(inst, answer)
    with mock.patch.object(level_local, "LOCAL_AFTER_BOXES", 0):   # the descent before the first box
        found = search_tree(inst, lay, value, answer=answer)
    assert found.bound == best
    assert (found.value if found.assignment is not None else value) == best
    if found.assignment is not None:
        assert not balanced_violations(inst, found.assignment)
