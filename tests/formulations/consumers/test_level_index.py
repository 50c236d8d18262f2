"""The level-indexed MILP (:mod:`kipopt.formulations.consumers.level_index`) against brute force and
the member MILP; the member MILP's symmetry rows and incumbent cutoff; starting points."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from kipopt.datasets import generate
from kipopt.formulations.consumers.groups import layout
from kipopt.formulations.consumers.level_index import indexed_model, solve_indexed, start_point
from kipopt.formulations.consumers.member_milp import solve_members
from kipopt.formulations.consumers.rules import balanced_objective, balanced_violations
from kipopt.instance import from_dict, to_dict

from consumer_cases import _all_assignments, brute_force, checked_value, tiny_groups


def _static(inst, draw_ids):
    """The same group with some members static (``group_instance_id``): the rule ignores it."""
    data = to_dict(inst)
    members = [{**m, "group_instance_id": f"i{k}"} if use else m
               for k, (m, use) in enumerate(zip(data["members"], draw_ids))]
    return from_dict({**data, "members": members})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_groups(), st.lists(st.booleans(), min_size=3, max_size=3))
def test_indexed_and_member_milps_equal_brute_force(inst, static):
    """Enumerating every assignment: the indexed MILP, the member MILP with and without its symmetry
    rows, all reach the optimum; static members change nothing."""
    inst = _static(inst, static)
    best, _ = brute_force(inst, "balanced")
    lay = layout(inst)
    answer, status, bound, _ = solve_indexed(inst, lay, 60)
    assert status == "optimal" and checked_value(inst, answer, status, bound) == best
    for symmetry in (True, False):
        answer, status, bound, _ = solve_members(inst, lay, 60, symmetry=symmetry)
        assert status == "optimal" and checked_value(inst, answer, status, bound) == best


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_groups())
def test_start_point_is_feasible_and_priced_exactly(inst):
    """Every valid assignment maps to a point inside every bound and row of the indexed MILP, integral
    where it must be, whose objective is the rule's value of that assignment."""
    model = indexed_model(inst, layout(inst))
    lp = model.lp
    dense = np.zeros((lp.num_row, lp.num_col))
    for j in range(lp.num_col):
        dense[lp.index[lp.start[j]:lp.start[j + 1]], j] = lp.value[lp.start[j]:lp.start[j + 1]]
    seen = 0
    for a in _all_assignments(inst):
        if balanced_violations(inst, a):
            continue
        x = start_point(inst, model, a)
        assert x is not None
        activity = dense @ x
        assert np.all(x >= lp.lower - 1e-9) and np.all(x <= lp.upper + 1e-9)
        assert np.all(activity >= lp.row_lower - 1e-9) and np.all(activity <= lp.row_upper + 1e-9)
        assert np.allclose(x[lp.integrality.astype(bool)], np.rint(x[lp.integrality.astype(bool)]))
        assert lp.cost @ x + model.owned_total == balanced_objective(inst, a)
        seen += 1
    assert seen  # a group always has a valid assignment


@st.composite
def small_groups(draw):
    """Mixed subscriptions, ownership history with double claims, racks (as the member MILP's tests)."""
    params = dict(partitions=draw(st.integers(4, 30)), members=draw(st.integers(2, 7)),
                  topics=draw(st.integers(1, 4)), subscriptions=draw(st.sampled_from(["mixed", "mixed", "equal"])),
                  replication_factor=draw(st.integers(1, 3)), conflicts=draw(st.sampled_from([0.0, 0.2])),
                  rackless_partitions=draw(st.sampled_from([0.0, 0.25])))
    return generate("consumers", draw(st.integers(0, 10_000)), **params)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_groups())
def test_indexed_agrees_with_member_milp_and_cutoffs_prove(inst):
    """On generated groups the two MILPs agree; given the optimum as the incumbent to beat
    (``below``), both prove it (nothing below) and report it as the bound; given a worse one, both
    find the optimum; the indexed MILP also accepts that incumbent as HiGHS' starting point."""
    lay = layout(inst)
    answer, status, bound, _ = solve_members(inst, lay, 60)
    best = checked_value(inst, answer, status, bound)
    assert status == "optimal"
    other, status, bound, _ = solve_indexed(inst, lay, 60, incumbent=answer)
    assert status == "optimal" and checked_value(inst, other, status, bound) == best
    for solver in (solve_members, solve_indexed):
        none, status, bound, _ = solver(inst, lay, 60, below=best)
        assert none is None and status == "optimal" and bound == best
        found, status, bound, _ = solver(inst, lay, 60, below=best + 1)
        assert status == "optimal" and checked_value(inst, found, status, bound) == best
