"""The hot topic's two-level bound (:mod:`kipopt.formulations.consumers.level_hot`), checked by enumerating
every assignment of tiny rack-less groups: for every overloaded topic taken as ``h``, the bound of a set
``H`` holds at every valid assignment whose least loads put exactly ``H`` at ``q`` and the rest at ``q - 1``,
and the search never proves a saving below the best such assignment's."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from consumer_cases import least_loads, owned_beyond, rackless_groups, valid_assignments
from kipopt import from_dict, solve
from kipopt.formulations.consumers.groups import layout
from kipopt.formulations.consumers import level_local
from kipopt.formulations.consumers.level_bounds import tree
from kipopt.datasets import generate
from kipopt.formulations.consumers.level_hot import THETAS, hot_rows, hot_search
from kipopt.formulations.consumers.level_hot_local import best_set, hot_vector
from kipopt.formulations.consumers.rules import owners, revoked

OVERLOADED = from_dict({"format": 1, "family": "consumers",
                        "topics": {"h": {"racks": [[]] * 4}, "u": {"racks": [[]] * 3}, "v": {"racks": [[]] * 2}},
                        "members": [{"id": "c0", "topics": ["h", "u"], "owned": ["u-0", "u-1", "u-2"]},
                                    {"id": "c1", "topics": ["h"], "owned": []},
                                    {"id": "c2", "topics": ["v"], "owned": []}]})
"""``q = 3``: h's four partitions go to c0 and c1, and c0 holds its three of u, so with both at ``q`` one of
them costs c0 a partition of u (overload 1). With h and u at ``q`` and v at ``q - 1``, c1 takes all four
partitions of h, c2 holds 2 and nothing is revoked: the hot bound of that set says 1, where counting alone (nobody owns more
than ``q``) saves nothing."""


def _two_level(inst, lay, q):
    """``(assignment, H)`` for every valid assignment whose least loads all lie in ``{q - 1, q}``."""
    for a in valid_assignments(inst):
        level = list(least_loads(lay, a).values())
        if all(lv in (q - 1, q) for lv in level):
            yield a, np.array([lv == q for lv in level])


def _cases(inst):
    """Per overloaded topic: its :class:`~kipopt.formulations.consumers.level_hot.Hot`, the base
    ``O - Σ min(k, q) + E`` and every valid two-level assignment with its set ``H``."""
    lay = layout(inst)
    tr = tree(inst, lay, restrict=True)
    for t in range(len(tr.space.sizes)):
        hot = hot_rows(tr, t)
        if hot is not None:
            q = hot.rows.q
            yield hot, owned_beyond(inst, q) + hot.overload, list(_two_level(inst, lay, q))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rackless_groups())
@example(OVERLOADED)
def test_the_bound_holds_at_every_valid_two_level_assignment(inst):
    for hot, base, assignments in _cases(inst):
        for a, high in assignments:
            assert revoked(inst, a) >= base - hot.bound(high, high)[0]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rackless_groups())
@example(OVERLOADED)
def test_the_search_never_proves_less_than_the_best_two_level_saving(inst):
    for hot, base, assignments in _cases(inst):
        if assignments:
            best = base - min(revoked(inst, a) for a, _ in assignments)
            assert not hot_search(hot, best - 1, math.inf).proven
            assert hot_search(hot, best + 50, math.inf).proven


def test_the_overloaded_group_saves_what_its_flow_allows():
    tr = tree(OVERLOADED, layout(OVERLOADED), restrict=True)
    hot = hot_rows(tr)
    assert (hot.hot, hot.overload, hot.rows.q) == (0, 1, 3)
    base = owned_beyond(OVERLOADED, 3) + hot.overload
    answers = list(_two_level(OVERLOADED, layout(OVERLOADED), 3))
    assert base - 1 == min(revoked(OVERLOADED, a) for a, _ in answers) == 0
    h_and_u = np.array([True, True, False])
    assert hot.bound(h_and_u, h_and_u)[0] == 1

    def score(high):
        values = [revoked(OVERLOADED, a) for a, h in answers if h.tolist() == high.tolist()]
        return base - min(values) if values else None

    found = hot_search(hot, 0, math.inf, score=score)
    assert (found.proven, found.target) == (True, 1)


MIXED = {"partitions": 3_000, "members": 60, "topics": 12, "racks": 3, "replication_factor": 3,
         "static_members": 0.5, "conflicts": 0.05, "subscriptions": "mixed", "owner_draw": "direct"}
"""A small group of the paper grid's open cell (topic 0 overloaded on every seed)."""


def _node(draw, topics: int) -> tuple[np.ndarray, np.ndarray]:
    """A node ``lo ⊆ hi``."""
    a, b, c = (np.array(draw(st.lists(st.booleans(), min_size=topics, max_size=topics))) for _ in range(3))
    return a & b, a | c


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 5), st.sampled_from([3_000, 3_017]), st.data())
def test_the_probes_are_the_bounds_of_each_move_and_two_passes_find_the_grids_least(seed, partitions, data):
    inst = generate("consumers", seed, **{**MIXED, "partitions": partitions})    # r = 0 or 17
    hot = hot_rows(tree(inst, layout(inst), restrict=True))
    assume(hot is not None)
    lo, hi = _node(data.draw, len(hot.rows.sizes))
    thetas = THETAS[data.draw(st.lists(st.integers(0, 50), min_size=1, max_size=3, unique=True))]
    into, out = hot.probes(lo, hi, thetas)
    free = np.flatnonzero(hi & ~lo)
    for t, up, down in zip(free, into, out):
        lo_t, hi_t = lo.copy(), hi.copy()
        lo_t[t], hi_t[t] = True, False
        assert up == hot.bound(lo_t, hi, thetas, crowding=False, slots=False)[0]
        assert down == hot.bound(lo, hi_t, thetas, crowding=False, slots=False)[0]
    for crowding, slots in itertools.product((True, False), (True, False)):
        grid = hot.bound(lo, hi, THETAS, crowding=crowding, slots=slots)[0]
        assert hot.bound(lo, hi, crowding=crowding, slots=slots)[0] == grid


def _mixed_tree(seed: int, partitions: int = 3_000):
    inst = generate("consumers", seed, **{**MIXED, "partitions": partitions})
    return tree(inst, layout(inst), restrict=True)


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 40), st.sampled_from([3_000, 3_017]))
def test_the_local_search_ends_at_a_set_no_flip_or_exchange_improves(seed, partitions):
    tr = _mixed_tree(seed, partitions)
    hot = hot_rows(tr)
    assume(hot is not None)
    value, high = best_set(hot, math.inf)
    h, T = hot.hot, len(high)
    assert high[h] and value == hot.bound(high, high)[0]
    one = np.eye(T, dtype=bool)
    moves = [high ^ one[t] for t in range(T) if t != h]
    moves += [high ^ one[a] ^ one[b] for a in np.flatnonzero(high) if a != h for b in np.flatnonzero(~high)]
    assert max(hot.bound(m, m)[0] for m in moves) <= value
    q = hot.rows.q
    start = np.full(T, q)
    vector = hot_vector(tr, start, math.inf)
    if value <= 0:
        assert vector is None
    else:
        assert (vector == np.clip(np.where(high, q, q - 1), tr.lo, tr.hi)).all()
    assert hot_vector(tr, start - 1, math.inf) is None    # the levels in hand are not all q


def test_the_local_search_stops_at_its_deadline():
    hot = hot_rows(_mixed_tree(0))
    value, high = best_set(hot, 0.0)
    assert np.flatnonzero(high).tolist() == [hot.hot] and value == hot.bound(high, high)[0]


@pytest.mark.parametrize("after", [0.0, math.inf])
def test_the_tree_scores_the_local_searchs_set_once_it_has_searched_long_enough(after, monkeypatch):
    monkeypatch.setattr(level_local, "HOT_AFTER_SECONDS", after)
    inst = generate("consumers", 2, **MIXED)           # topic 0 overloaded, the levels in hand all q
    solution = solve(inst, "exact.balanced", time_limit=60, threads=1)
    assert solution.metrics["hot_scored"] == (after == 0.0)
    assert solution.status.value == "optimal" and solution.objective == 347


@pytest.mark.parametrize("seed", [6, 8, 21])
def test_the_kicks_reach_the_largest_bound_where_one_climb_stops_short(seed):
    """On these groups (3,017 partitions) a climb from ``{h}`` ends 3 or 4 below the largest bound of any set;
    every set enumerated, the iterated search reaches it."""
    hot = hot_rows(_mixed_tree(seed, 3_017))
    T, h = len(hot.rows.sizes), hot.hot
    others = [t for t in range(T) if t != h]
    largest = -1
    for bits in itertools.product([False, True], repeat=len(others)):
        high = np.arange(T) == h
        high[others] = bits
        largest = max(largest, hot.bound(high, high)[0])
    assert best_set(hot, math.inf)[0] == largest


def _value(q, theta, x, held, keep, h):
    """A member's term of the relaxation (module docstring) at ``x`` partitions of the topics ``held``, as
    one closed form: ``min(x, k(A)) + θ cap(x, A)``, ``cap`` its room for ``h`` (none when ``h`` is not held)."""
    own = sum(keep[t] for t in held)
    if h not in held:
        return min(x, own)
    other = own - keep[h]
    return min(x, own) + theta * min(x, max(keep[h], x - other))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rackless_groups())
@example(OVERLOADED)
def test_the_relaxation_holds_at_every_valid_assignment_whatever_its_levels(inst):
    """The docstring's inequality at any level vector, not only two-level ones: with ``A_m`` the topics member
    m may hold (its topics at least ``x_m - 1``), ``revoked ≥ R - (1 - θ) E - Σ_m [v_m(x_m, A_m) - v_m(q,
    S_m)]`` for every ``θ``. The ground the certificate over every level vector would stand on."""
    lay = layout(inst)
    subs = dict(zip(lay.members, lay.member_topics))
    keep = {m: {t: 0 for t in lay.topics} for m in lay.members}
    for p, m in owners(inst).items():
        keep[m][p.rsplit("-", 1)[0]] += 1
    for hot, base, _ in _cases(inst):
        q, h = hot.rows.q, lay.topics[hot.hot]
        for a in valid_assignments(inst):
            level = least_loads(lay, a)
            loads = {m: len(a[m]) for m in lay.members}
            for theta in (0.0, 0.25, 0.5, 1.0):
                gained = sum(_value(q, theta, loads[m], {t for t in subs[m] if level[t] >= loads[m] - 1}, keep[m], h)
                             - _value(q, theta, q, set(subs[m]), keep[m], h) for m in lay.members)
                assert revoked(inst, a) >= base - (1 - theta) * hot.overload - gained - 1e-9


@given(st.integers(1, 12), st.integers(0, 15), st.integers(0, 15), st.integers(0, 15))
def test_at_q_a_member_holding_h_loses_nothing_at_theta_one_by_dropping_topics(q, c, a, b):
    """``min(q, c + a) + min(q, max(c, q - a)) = q + min(c, q)`` whatever ``a``: the keeps a member at ``q`` gives
    up are room for ``h`` (so at ``θ`` it loses ``(1 - θ)`` of them)."""
    keep = {"h": c, "t": a, "u": b}
    assert _value(q, 1.0, q, {"h", "t"}, keep, "h") == _value(q, 1.0, q, {"h", "t", "u"}, keep, "h") == q + min(c, q)
