"""One MILP over a box of topic levels: its optimum is the least of its vectors' own MILPs, its chosen
vector attains it, and the level tree that settles narrow boxes with it still finds the optimum."""

from __future__ import annotations

import contextlib
import itertools
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import kipopt.formulations.consumers.level_policy as level_policy
import kipopt.formulations.consumers.level_box as level_box
import kipopt.formulations.consumers.level_tree as level_tree
from kipopt.datasets import generate
from kipopt.formulations.consumers.groups import layout
from kipopt.formulations.consumers.level_box import box_levels, box_model
from kipopt.formulations.consumers.level_search import fixed_model
from kipopt.formulations.consumers.level_tree import search_tree
from kipopt.formulations.consumers.member_milp import solve_members
from kipopt.formulations.consumers.rules import balanced_objective, balanced_violations
from kipopt.formulations.highs import solve_lp

from consumer_cases import _all_assignments, brute_force, tiny_groups
from test_level_search import _least_loads, small_groups
from test_level_tree import _leaf_setting, _vector

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _optimum(lp, owned_total: int) -> float | None:
    result = solve_lp(lp, integer=True)
    assert result.status in ("optimal", "infeasible")
    return None if result.status == "infeasible" else round(result.objective) + owned_total


def _narrow_box(tr, rnd) -> tuple[np.ndarray, np.ndarray]:
    """Up to three topics two levels wide around a random vector of the root, the others fixed."""
    lo = _vector(tr, rnd)
    hi = lo.copy()
    for t in rnd.sample(range(len(lo)), min(3, len(lo))):
        if hi[t] < tr.hi[t]:
            hi[t] += 1
        elif lo[t] > tr.lo[t]:
            lo[t] -= 1
    return lo, hi


@SETTINGS
@given(small_groups(), st.randoms(use_true_random=False))
def test_box_milp_is_the_least_of_its_vectors_milps(inst, rnd):
    setting = _leaf_setting(inst)
    if setting is None:
        return
    space, tr, net = setting
    lo, hi = _narrow_box(tr, rnd)
    model = box_model(space, net, lo, hi)
    vectors = [np.array(v, dtype=np.int64) for v in itertools.product(*[range(a, b + 1) for a, b in zip(lo, hi)])]
    each = [_optimum(fixed_model(space, v, net).lp, space.owned_total) for v in vectors]
    known = [v for v in each if v is not None]
    result = solve_lp(model.lp)
    if not known:
        assert result.status == "infeasible"
        return
    assert result.status == "optimal"
    assert round(result.objective) + space.owned_total == min(known)
    chosen = box_levels(model, lo, result.x)
    assert (chosen >= lo).all() and (chosen <= hi).all()
    assert _optimum(fixed_model(space, chosen, net).lp, space.owned_total) == min(known)


@SETTINGS
@given(tiny_groups(), st.randoms(use_true_random=False))
def test_box_milp_bounds_every_balanced_assignment_in_the_box(inst, rnd):
    """Whatever the box's width: no balanced assignment whose least loads lie in it costs less than
    its optimum, and no assignment at all costs less than it (it is the value of one)."""
    setting = _leaf_setting(inst)
    if setting is None:
        return
    space, tr, net = setting
    lo = _vector(tr, rnd)
    hi = np.array([rnd.randint(int(a), int(b)) for a, b in zip(lo, tr.hi)], dtype=np.int64)
    value = _optimum(box_model(space, net, lo, hi).lp, space.owned_total)
    best, _ = brute_force(inst, "balanced")
    lay = layout(inst)
    for a in _all_assignments(inst):
        if balanced_violations(inst, a):
            continue
        least = _least_loads(inst, lay, a)
        if (least >= lo).all() and (least <= hi).all():
            assert value is not None and value <= balanced_objective(inst, a)
    assert value is None or value >= best


@contextlib.contextmanager
def _cubes(**limits):
    """Boxes go to the MILP from the first one on (and under ``limits``)."""
    with mock.patch.multiple(level_box, **limits), mock.patch.object(level_policy, "CUBE_AFTER_LEAVES", 0):
        yield


def _everything_a_cube():
    return _cubes(CUBE_WIDTH=10**9, CUBE_TOPICS=1)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_groups())
def test_tree_of_cubes_equals_brute_force(inst):
    best, _ = brute_force(inst, "balanced")
    with _everything_a_cube():
        found = search_tree(inst, layout(inst))
    assert found is not None and found.assignment is not None
    assert not balanced_violations(inst, found.assignment)
    assert balanced_objective(inst, found.assignment) == found.value == found.bound == best


def test_cubes_settle_a_group_the_member_milp_proves():
    inst = generate("consumers", 9, members=13, topics=8, partitions=78, subscriptions="mixed")
    lay = layout(inst)
    with _cubes(CUBE_WIDTH=2, CUBE_TOPICS=2):
        found = search_tree(inst, lay)
    _, status, bound, _ = solve_members(inst, lay, 60)
    assert found.info["level_cubes"] > 0
    assert status == "optimal" and found.value == found.bound == bound
    assert not balanced_violations(inst, found.assignment)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_groups())
def test_boxes_whose_milp_runs_out_of_time_are_searched_by_leaves(inst):
    """Every box MILP stopped at its turn with nothing found: the tree splits those boxes and still
    ends at the optimum, through leaves."""
    from kipopt.formulations.highs import HighsResult

    def stopped(lp, *args, options=None, **kwargs):
        if options is not None:
            return HighsResult("time_limit", None, None, None, True, "stopped")
        return solve_lp(lp, *args, **kwargs)

    best, _ = brute_force(inst, "balanced")
    with _everything_a_cube(), mock.patch.object(level_tree, "solve_lp", stopped):
        found = search_tree(inst, layout(inst))
    assert found is not None and found.assignment is not None
    assert balanced_objective(inst, found.assignment) == found.value == found.bound == best
