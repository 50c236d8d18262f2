"""The box flow bound: valid for every vector of its box (brute force), at least as strong as nothing,
and the level tree that prunes with it still ends at the optimum."""

from __future__ import annotations

import itertools
import math
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import kipopt.formulations.consumers.level_flow as level_flow
from kipopt.formulations.consumers.groups import layout
from kipopt.formulations.consumers.level_flow import box_lp, flow_bound, flow_bound_lp
from kipopt.formulations.consumers.level_search import fixed_model
from kipopt.formulations.consumers.level_tree import search_tree
from kipopt.formulations.consumers.rules import balanced_objective, balanced_violations
from kipopt.formulations.highs import solve_lp

from consumer_cases import _all_assignments, brute_force, tiny_groups
from test_level_search import _least_loads, small_groups
from test_level_tree import _leaf_setting, _vector

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _case(inst, rnd, narrow: bool = False):
    """``(space, arcs, flow LP, lo, hi)`` for a random box of the root (at most two levels per topic when
    ``narrow``); ``None`` for a group without topics."""
    setting = _leaf_setting(inst)
    if setting is None:
        return None
    space, tr, net = setting
    lo = _vector(tr, rnd)
    hi = (np.minimum(lo + 1, tr.hi) if narrow
          else np.array([rnd.randint(int(a), int(b)) for a, b in zip(lo, tr.hi)], dtype=np.int64))
    return space, net, flow_bound_lp(space, net, math.inf), lo, hi


@SETTINGS
@given(tiny_groups(), st.randoms(use_true_random=False))
def test_flow_bound_holds_for_every_balanced_assignment_in_the_box(inst, rnd):
    case = _case(inst, rnd)
    if case is None:
        return
    _, _, flows, lo, hi = case
    value = flow_bound(flows, lo, hi)
    lay = layout(inst)
    for a in _all_assignments(inst):
        if not balanced_violations(inst, a):
            least = _least_loads(inst, lay, a)
            if (least >= lo).all() and (least <= hi).all():
                assert value <= balanced_objective(inst, a)


@SETTINGS
@given(small_groups(), st.randoms(use_true_random=False))
def test_flow_bound_is_at_most_every_vector_milp_of_a_narrow_box(inst, rnd):
    case = _case(inst, rnd, narrow=True)
    if case is None:
        return
    space, net, flows, lo, hi = case
    value = flow_bound(flows, lo, hi)
    for v in itertools.product(*[range(a, b + 1) for a, b in zip(lo, hi)]):
        result = solve_lp(fixed_model(space, np.array(v, dtype=np.int64), net).lp, integer=True)
        if result.status == "optimal":
            assert value <= round(result.objective) + space.owned_total
    # re-solved from the last basis, or settled by carried duals under a cutoff: the same answers
    again = flow_bound(flows, lo, hi)
    assert again == value
    if math.isfinite(value):
        cut = value - space.owned_total - 1.5   # one below the optimum: it must be proven above
        assert flow_bound(flows, lo, hi, cutoff=cut) > cut + space.owned_total


@SETTINGS
@given(small_groups(), st.randoms(use_true_random=False))
def test_flow_lp_vertex_is_integral(inst, rnd):
    """A network matrix with integer data: the vertex HiGHS returns is integral."""
    case = _case(inst, rnd)
    if case is None:
        return
    _, _, flows, lo, hi = case
    result = solve_lp(box_lp(flows, lo, hi))
    assert result.status in ("optimal", "infeasible")
    if result.status == "optimal":
        assert np.allclose(result.x, np.round(result.x))


def test_no_flow_bound_above_its_column_limit():
    from kipopt.datasets import generate
    inst = generate("consumers", 3, members=12, topics=4, partitions=60, subscriptions="mixed")
    space, tr, net = _leaf_setting(inst)
    with mock.patch.object(level_flow, "FLOW_MAX_COLUMNS", 1):
        assert flow_bound_lp(space, net, math.inf) is None
    with mock.patch.object(level_flow, "FLOW_EAGER_COLUMNS", 1):
        late = flow_bound_lp(space, net, math.inf)
        assert late is not None and not late.eager
    assert flow_bound_lp(space, net, math.inf).eager


@SETTINGS
@given(tiny_groups())
def test_tree_with_late_flow_bounds_equals_brute_force(inst):
    """Box LPs that join after the closed-form search has popped a box or two: the same optimum."""
    import kipopt.formulations.consumers.level_tree as level_tree
    best, _ = brute_force(inst, "balanced")
    with mock.patch.object(level_flow, "FLOW_EAGER_COLUMNS", 0), mock.patch.object(level_tree, "FLOW_LATE_BOXES", 1):
        found = search_tree(inst, layout(inst))
    assert found is not None and found.value == found.bound == best


@SETTINGS
@given(tiny_groups())
def test_tree_with_flow_bounds_and_descent_equals_brute_force(inst):
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
    import kipopt.formulations.consumers.level_tree as level_tree
    with mock.patch.object(level_tree, "LOCAL_AFTER_BOXES", 0):   # the descent before the first box
        found = search_tree(inst, lay, value, answer=answer)
    assert found.bound == best
    assert (found.value if found.assignment is not None else value) == best
    if found.assignment is not None:
        assert not balanced_violations(inst, found.assignment)
