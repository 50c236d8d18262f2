"""The slots' node bound (:mod:`kipopt.formulations.consumers.level_slots`): ``avail`` against every choice of
``j`` topics, and the bound of a node against every complete set inside it, per multiplier."""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kipopt.datasets import generate
from kipopt.formulations.consumers.groups import layout
from kipopt.formulations.consumers.level_bounds import tree
from kipopt.formulations.consumers.level_hot import THETAS, hot_rows
from kipopt.formulations.consumers.level_slots import SlotNode, applies, available, best_first, reachable

MIXED = {"partitions": 3_000, "members": 60, "topics": 12, "racks": 3, "replication_factor": 3,
         "static_members": 0.5, "conflicts": 0.05, "subscriptions": "mixed", "owner_draw": "direct"}


def _left(member_of: np.ndarray, weight: np.ndarray, j: int) -> float:
    """The most weight any ``j`` columns leave untouched, by enumeration."""
    return max(weight[~member_of[:, list(cols)].any(axis=1)].sum()
               for cols in itertools.combinations(range(member_of.shape[1]), j))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(
    hnp.arrays(bool, (n, 6)), hnp.arrays(np.int64, n, elements=st.integers(1, 4)))))
def test_avail_is_at_least_what_any_j_topics_leave(case):
    member_of, weight = case
    weight = weight.astype(np.float64)
    avail = available(member_of, weight)
    assert (np.diff(avail) <= 0).all() and avail[0] == weight.sum()
    for j in range(member_of.shape[1] + 1):
        assert avail[j] >= _left(member_of, weight, j)
    for j in range(1, min(2, member_of.shape[1]) + 1):     # one topic, and every pair, counted exactly
        assert avail[j] == _left(member_of, weight, j)


def _node(rng: np.random.Generator, hot) -> tuple[np.ndarray, np.ndarray]:
    """A node with the hot topic decided and at most eight undecided topics."""
    T = hot.rows.subs.shape[1]
    lo = rng.random(T) < 0.25
    hi = lo | (rng.random(T) < 0.6)
    lo[hot.hot] = hi[hot.hot] = bool(rng.random() < 0.8)
    free = np.flatnonzero(hi & ~lo)
    hi[free[8:]] = False
    return lo, hi


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 7), st.sampled_from([3_000, 3_017]), st.integers(0, 2 ** 32 - 1))
def test_the_slots_bound_holds_every_set_of_its_node(seed, partitions, draw):
    case = _case(seed, partitions, draw)
    if case is None:
        return
    hot, lo, hi = case
    thetas = THETAS[::10]
    node = SlotNode(hot, lo, hi).values(thetas)
    for high in _sets(lo, hi):
        assert (_complete(hot, high, thetas) <= node + 1e-9).all()


def test_the_slots_bound_is_taken_only_once_the_hot_topic_is_decided_and_a_topic_is_not():
    inst = generate("consumers", 0, **MIXED)
    hot = hot_rows(tree(inst, layout(inst), restrict=True))
    T, h = hot.rows.subs.shape[1], hot.hot
    lo, hi = np.zeros(T, dtype=bool), np.ones(T, dtype=bool)
    assert not applies(hot, lo, hi)
    lo[h] = True
    assert applies(hot, lo, hi) and not applies(hot, hi, hi)
    hi[h] = lo[h] = False
    assert applies(hot, lo, hi)


@settings(max_examples=100, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 9)),
                  elements=st.sampled_from([-math.inf, -1.0, 0.0, 0.5, 1.0, 2.0])), st.integers(1, 12))
def test_best_first_is_the_top_of_a_full_sort(values, top):
    full = -np.sort(-values, axis=-1)[..., :top]
    assert np.array_equal(best_first(values, top), full)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 10).flatmap(lambda n: st.tuples(
    hnp.arrays(bool, (n, 6)), hnp.arrays(np.int64, n, elements=st.integers(1, 3)))), st.integers(0, 6),
    st.integers(0, 30))
def test_reachable_is_whether_some_j_topics_touch_at_most_the_budget(case, j, budget):
    member_of, weight = case
    weight = weight.astype(np.float64)
    touched = [weight[member_of[:, list(cols)].any(axis=1)].sum()
               for cols in itertools.combinations(range(member_of.shape[1]), j)]
    assert reachable(member_of, weight, j, float(budget)) == (min(touched, default=math.inf) <= budget)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 7), st.sampled_from([3_000, 3_017]), st.integers(0, 2 ** 32 - 1), st.integers(1, 4))
def test_the_refined_slots_bound_stays_above_a_cutoff_some_set_of_the_node_beats(seed, partitions, draw, below):
    case = _case(seed, partitions, draw)
    if case is None:
        return
    hot, lo, hi = case
    thetas = THETAS[[10, 25, 40]]
    best = max(float(np.floor(_complete(hot, high, thetas).min() + 1e-9)) for high in _sets(lo, hi))
    if math.isfinite(best):
        assert SlotNode(hot, lo, hi).least(thetas, best - below) >= best


def _case(seed: int, partitions: int, draw: int):
    """A small group of the open cell's shape and a node of it where the slots' bound applies, or ``None``."""
    inst = generate("consumers", seed, **{**MIXED, "partitions": partitions})
    hot = hot_rows(tree(inst, layout(inst), restrict=True))
    if hot is None:
        return None
    lo, hi = _node(np.random.default_rng(draw), hot)
    return (hot, lo, hi) if applies(hot, lo, hi) else None


def _sets(lo: np.ndarray, hi: np.ndarray):
    """Every complete set of the node."""
    free = np.flatnonzero(hi & ~lo)
    for chosen in itertools.product((False, True), repeat=len(free)):
        high = lo.copy()
        high[free] = chosen
        yield high


def _complete(hot, high: np.ndarray, thetas: np.ndarray) -> np.ndarray:
    """Per multiplier, the bound of the complete set ``high`` unfloored (``-inf`` where no pairing exists;
    :meth:`~kipopt.formulations.consumers.level_hot.Hot.bound` floors that to -1)."""
    return hot._values(high, high, thetas, True)
