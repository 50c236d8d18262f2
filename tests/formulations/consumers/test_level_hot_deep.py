"""The hot bound at level vectors with topics below ``q - 1`` (:mod:`kipopt.formulations.consumers.level_hot_deep`).

Tiny enumerable groups have no valid assignment with a topic two below ``q`` and none above it (none in
thousands of random ones), so the bound is checked against the exact optimum of each such level vector
instead: the leaf MILP of :mod:`~kipopt.formulations.consumers.level_search` (members at ``μ`` or one more,
topics held only one above their level; every fact the bound reads holds for its solutions) on small groups
of the paper grid's open cell, every overloaded topic taken as ``h``, every vector in ``[q - 3, q]`` with a
topic at ``q - 2`` or below. Where it is small enough to enumerate, every valid assignment with no topic
above ``q`` is checked too; with ``C⁻`` empty the bound is the two-level one."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, example, given, settings

import itertools

import pytest

from consumer_cases import least_loads, rackless_groups, valid_assignments
from kipopt.datasets import generate
from kipopt.formulations.consumers.groups import cheapest, layout
from kipopt.formulations.consumers.level_answers import rule_units
from kipopt.formulations.consumers.level_bounds import tree
from kipopt.formulations.consumers.level_hot import THETAS, hot_rows
from kipopt.formulations.consumers.level_hot_deep import STEP, deep_bound, every_vector_bound, vector_lagrangian
from kipopt.formulations.consumers.level_prove import floor_at_q
from kipopt.formulations.consumers.level_search import arcs, fixed_model
from kipopt.formulations.consumers.rules import revoked
from kipopt.formulations.highs import solve_lp

from test_level_hot import MIXED, OVERLOADED, _cases


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rackless_groups())
@example(OVERLOADED)
def test_the_bound_holds_at_every_valid_assignment_with_no_topic_above_q(inst):
    lay = layout(inst)
    for hot, base, _ in _cases(inst):
        q = hot.rows.q
        for a in valid_assignments(inst):
            level = np.array(list(least_loads(lay, a).values()))
            if (level <= q).all():
                assert revoked(inst, a) >= base - deep_bound(hot, level == q, level <= q - 2) - 1e-9


SMALL = {"partitions": 60, "members": 12, "topics": 4, "racks": 3, "replication_factor": 3, "static_members": 0.5,
         "conflicts": 0.05, "subscriptions": "mixed", "owner_draw": "direct"}


def _vector_optima(seeds, top: int, wanted):
    """``(seed, hot, base, vector, optimum)`` for every overloaded topic as ``h`` of the small groups of ``seeds`` and
    every vector in ``[q - 3, q + top]`` that ``wanted(vector, q)`` keeps and whose leaf MILP has an optimum (in
    rule units)."""
    for seed in seeds:
        inst = generate("consumers", seed, **SMALL)
        lay = layout(inst)
        tr = tree(inst, lay, restrict=True)
        net = arcs(tr.space, cheapest(lay))
        for h in range(len(tr.space.sizes)):
            hot = hot_rows(tr, h)
            if hot is None:
                continue
            q, base = hot.rows.q, floor_at_q(inst, tr) + hot.overload
            for vector in itertools.product(*(range(max(int(lo), q - 3), min(int(hi), q + top) + 1)
                                              for lo, hi in zip(tr.lo, tr.hi))):
                vector = np.array(vector)
                if wanted(vector, q):
                    best = solve_lp(fixed_model(tr.space, vector, net).lp, integer=True)
                    if best.status == "optimal":
                        yield seed, hot, base, vector, rule_units(tr.space, best.objective)


@pytest.mark.parametrize("seeds", [range(0, 30), range(30, 60)], ids=["0-29", "30-59"])
def test_the_bound_holds_at_each_deep_level_vectors_exact_optimum(seeds):
    checked = 0
    for seed, hot, base, vector, optimum in _vector_optima(seeds, 0, lambda v, q: (v <= q - 2).any()):
        checked += 1
        q = hot.rows.q
        assert optimum >= base - deep_bound(hot, vector == q, vector <= q - 2) - 1e-9, (seed, hot.hot, vector)
    assert checked >= 50      # 85 and 65 such vectors have a solution (seeds 0-29, 30-59)


def test_with_no_topic_below_q_minus_one_it_is_the_two_level_bound():
    inst = generate("consumers", 1, **MIXED)
    hot = hot_rows(tree(inst, layout(inst), restrict=True))
    rng = np.random.default_rng(0)
    none = np.zeros(len(hot.rows.sizes), dtype=bool)
    for _ in range(6):
        high = rng.random(len(none)) < 0.4
        high[hot.hot] = True
        assert int(np.floor(deep_bound(hot, high, none, THETAS) + 1e-9)) == hot.bound(high, high)[0]


def test_a_topic_below_q_minus_one_charges_its_subscribers_at_q():
    """On a small group of the open cell, each topic outside the set put below ``q - 1`` lowers the bound."""
    inst = generate("consumers", 1, **MIXED)
    hot = hot_rows(tree(inst, layout(inst), restrict=True))
    high = np.zeros(len(hot.rows.sizes), dtype=bool)
    high[[hot.hot, 1, 2]] = True
    two = deep_bound(hot, high, np.zeros_like(high))
    for t in np.flatnonzero(~high):
        assert deep_bound(hot, high, np.eye(len(high), dtype=bool)[t]) < two


MULTIPLIERS = [(theta, nu) for theta in (0.0, 0.5, 0.75, 1.0) for nu in (0.0, 0.5, 1.0, 1.25, 2.0) if nu >= theta]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rackless_groups())
@example(OVERLOADED)
def test_the_bound_over_every_vector_of_a_top_set_holds_at_every_valid_assignment(inst):
    """At every valid assignment (topics above ``q`` included: 1,049 of 1,505 assignments in one run, 23 with a
    topic below ``q - 1``), with ``H`` its topics at ``q`` or above: at every pair of multipliers tried, and at
    the least :func:`every_vector_bound` finds."""
    lay = layout(inst)
    for hot, base, _ in _cases(inst):
        q = hot.rows.q
        memo = {}
        for a in valid_assignments(inst):
            top = np.array(list(least_loads(lay, a).values())) >= q
            if top.tobytes() not in memo:
                memo[top.tobytes()] = (min(vector_lagrangian(hot, top, t, n) for t, n in MULTIPLIERS),
                                       every_vector_bound(hot, top, start=(0.5, 0.5))[0])
            for bound in memo[top.tobytes()]:
                assert revoked(inst, a) >= base - bound - 1e-9


@pytest.mark.parametrize("seeds", [range(0, 12), range(12, 24)], ids=["0-11", "12-23"])
def test_the_bound_over_every_vector_of_a_top_set_holds_at_each_vectors_exact_optimum(seeds):
    """Vectors in ``[q - 3, q + 1]`` with a topic below ``q - 1`` or above ``q`` (none of those has a valid
    assignment small enough to enumerate), each against its leaf MILP's optimum, on small groups of the open
    cell; the bound is taken at the vector's topics at ``q`` or above."""
    checked, memo = 0, {}
    for seed, hot, base, vector, optimum in _vector_optima(seeds, 1, lambda v, q: ((v <= q - 2) | (v >= q + 1)).any()):
        checked += 1
        key = (seed, hot.hot, (vector >= hot.rows.q).tobytes())
        if key not in memo:
            memo[key] = every_vector_bound(hot, vector >= hot.rows.q)[0]
        assert optimum >= base - memo[key] - 1e-9, (seed, hot.hot, vector)
    assert checked >= 20      # 29 and 21 (no vector with a topic above q has a solution here: the enumeration covers those)


def test_over_every_vector_of_a_top_set_it_is_at_least_that_sets_two_level_bound():
    """The two-level vector is one of them, and for each ``θ`` any ``ν`` bounds the pairs the two-level bound
    sorts (weak duality); on the grid the cut runs on integers."""
    inst = generate("consumers", 1, **MIXED)
    hot = hot_rows(tree(inst, layout(inst), restrict=True))
    rng = np.random.default_rng(3)
    for _ in range(6):
        high = rng.random(len(hot.rows.sizes)) < 0.4
        high[hot.hot] = True
        value, theta, nu = every_vector_bound(hot, high)
        assert value >= hot.bound(high, high)[0]
        assert round(theta / STEP, 9).is_integer() and round(nu / STEP, 9).is_integer() and nu >= theta
