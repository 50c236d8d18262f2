"""Branch and bound over topic-level boxes: its box bounds hold for every vector and every balanced
assignment in the box, and its answers equal brute force, the flat level search and the member MILP."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import kipopt.formulations.consumers.level_policy as level_policy
from kipopt.datasets import generate
from kipopt.formulations.consumers.groups import layout
from kipopt.formulations.consumers.level_search import search_levels
from kipopt.formulations.consumers.level_bounds import PEAK_LEVELS, _class_levels, box_bound, children, tree
from kipopt.formulations.consumers.level_tree import search_tree
from kipopt.formulations.consumers.member_milp import solve_members
from kipopt.formulations.consumers.rules import balanced_objective, balanced_violations

from consumer_cases import _all_assignments, brute_force, tiny_groups
from test_level_search import _least_loads, decmin_incumbent, small_groups

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(tiny_groups(), st.randoms(use_true_random=False))
def test_box_bound_holds_for_every_balanced_assignment_in_the_box(inst, rnd):
    """A random sub-box of the root: every balanced assignment whose least loads lie in it costs at
    least the box's bound, and a box said to hold no valid assignment holds none."""
    lay = layout(inst)
    tr = tree(inst, lay, restrict=False)
    lo = np.array([rnd.randint(int(a), int(b)) for a, b in zip(tr.lo, tr.hi)], dtype=np.int64)
    hi = np.array([rnd.randint(int(a), int(b)) for a, b in zip(lo, tr.hi)], dtype=np.int64)
    bound = box_bound(tr, lo, hi)
    for a in _all_assignments(inst):
        if balanced_violations(inst, a):
            continue
        least = _least_loads(inst, lay, a)
        if (least >= lo).all() and (least <= hi).all():
            assert bound is not None
            assert bound <= balanced_objective(inst, a)


@SETTINGS
@given(tiny_groups(), st.integers(0, 3), st.booleans())
def test_shaved_children_keep_every_assignment_that_beats_the_best(inst, above, stopped):
    """Shaving cuts only what cannot beat the best in hand: every balanced assignment cheaper than
    ``best`` has its least loads in one of the root's children (and in exactly one), and the
    children's bounds hold for it; so too when the shave is stopped at once by its deadline."""
    lay = layout(inst)
    tr = tree(inst, lay, restrict=False)
    valid = [a for a in _all_assignments(inst) if not balanced_violations(inst, a)]
    if not valid or (tr.lo == tr.hi).all():
        return
    best = min(balanced_objective(inst, a) for a in valid) + above
    kids = children(tr, tr.lo, tr.hi, best, until=0.0 if stopped else None)
    for a in valid:
        value = balanced_objective(inst, a)
        if value < best:
            least = _least_loads(inst, lay, a)
            inside = [b for lo, hi, b in kids if (least >= lo).all() and (least <= hi).all()]
            assert len(inside) == 1 and inside[0] <= value


def test_a_shave_past_its_deadline_still_halves_the_box():
    """Stopped after its first batch, the shave hands back the box it has, halved on the topic with the most
    partitions times levels left, both halves bounded by the shaved box's bound."""
    inst = generate("consumers", 3, members=40, topics=6, partitions=400, subscriptions="mixed")
    lay = layout(inst)
    tr = tree(inst, lay, restrict=False)
    full = children(tr, tr.lo, tr.hi, math.inf)
    kids = children(tr, tr.lo, tr.hi, math.inf, until=0.0)
    assert len(full) == len(kids) == 2
    (lo1, hi1, b1), (lo2, hi2, b2) = kids
    split = np.flatnonzero((hi1 != hi2) | (lo1 != lo2))
    assert len(split) == 1 and hi1[split[0]] + 1 == lo2[split[0]]
    assert b1 == b2 == box_bound(tr, lo1, hi2)
    assert (lo1 >= tr.lo).all() and (hi2 <= tr.hi).all()


@SETTINGS
@given(tiny_groups())
def test_tree_equals_brute_force(inst):
    best, _ = brute_force(inst, "balanced")
    found = search_tree(inst, layout(inst))
    assert found is not None and found.assignment is not None
    assert not balanced_violations(inst, found.assignment)
    assert balanced_objective(inst, found.assignment) == found.value == found.bound == best


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_groups())
def test_tree_equals_flat_search_and_member_milp(inst):
    lay = layout(inst)
    found = search_tree(inst, lay)
    flat = search_levels(inst, lay)
    _, status, bound, _ = solve_members(inst, lay, 60)
    assert status == "optimal" and found is not None and found.assignment is not None
    assert not balanced_violations(inst, found.assignment)
    assert balanced_objective(inst, found.assignment) == found.value == found.bound == flat.value == bound


@pytest.mark.parametrize("with_answer", [False, True])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=small_groups())
def test_tree_from_the_decmin_incumbent(with_answer, inst):
    """As run_balanced calls it: dec-min value as incumbent, least-cost pairs only when that answer
    has the least cross-rack count, and (``with_answer``) the dec-min assignment, from which the sweep's
    answers come first; the better of the two is the optimum and the bound meets it."""
    from kipopt.formulations.consumers.balanced import solve_balanced
    lay = layout(inst)
    value, least = decmin_incumbent(inst, lay)
    decmin = solve_balanced(inst, lay=lay)[0] if with_answer else None
    found = search_tree(inst, lay, incumbent=value, best=least, answer=decmin)
    _, status, optimum, _ = solve_members(inst, lay, 60)
    assert status == "optimal"
    if with_answer and found.info["level_boxes"] > 1 and len(lay.topics) > 1:  # the root's shave did not settle it
        assert found.info["sweep_scores"] >= 1
    if found.assignment is not None:
        assert not balanced_violations(inst, found.assignment)
        assert balanced_objective(inst, found.assignment) == found.value
    assert min(value, value if found.value is None else found.value) == optimum == found.bound


@pytest.mark.parametrize("seed", [1, 3, 9])
def test_the_sweep_alone_beats_the_decmin_answer(seed, monkeypatch):
    """With the tree's splitting switched off (the root box comes back once, unsplit, and is then
    settled), what is found is the sweep's: on these mixed groups
    (60 members, 8 topics) it is below the dec-min answer, meets the rule at its value, and is no
    better than the optimum (the whole tree's, proven; the member MILP takes a minute here)."""
    import kipopt.formulations.consumers.level_duals as level_duals
    import kipopt.formulations.consumers.level_tree as level_tree
    from kipopt.formulations.consumers.balanced import solve_balanced
    inst = generate("consumers", seed, members=60, topics=8, partitions=600, subscriptions="mixed")
    lay = layout(inst)
    value, least = decmin_incumbent(inst, lay)
    decmin, _, _ = solve_balanced(inst, lay=lay)
    whole = level_tree.search_tree(inst, lay, incumbent=value, best=least)
    assert whole.value == whole.bound
    calls = []

    def once(tr, lo, hi, best, until=None):
        calls.append(1)
        return [(lo, hi, -math.inf)] if len(calls) == 1 else []
    monkeypatch.setattr(level_duals, "children", once)
    found = level_tree.search_tree(inst, lay, incumbent=value, best=least, answer=decmin)
    assert found.assignment is not None and whole.value <= found.value < value
    assert not balanced_violations(inst, found.assignment)
    assert balanced_objective(inst, found.assignment) == found.value


def test_deadline_keeps_a_valid_bound():
    inst = generate("consumers", 9, members=13, topics=8, partitions=78, subscriptions="mixed")
    lay = layout(inst)
    full = search_tree(inst, lay)
    assert full.value == full.bound
    late = search_tree(inst, lay, deadline=time.perf_counter() - 1)
    assert late.assignment is None and late.bound <= full.value


def test_many_topics_need_no_enumeration():
    """Eight topics with wide level ranges: the flat box is declined, the tree proves the optimum."""
    inst = generate("consumers", 9, members=13, topics=8, partitions=78, subscriptions="mixed")
    lay = layout(inst)
    assert search_levels(inst, lay, max_vectors=10) is None
    found = search_tree(inst, lay)
    _, status, bound, _ = solve_members(inst, lay, 60)
    assert status == "optimal" and found.value == found.bound == bound


@SETTINGS
@given(tiny_groups())
def test_leaf_bound_holds_at_every_balanced_assignments_levels(inst):
    """At a single vector (the least loads of a balanced assignment) the leaf bound, which counts the
    high members exactly, never exceeds that assignment's value."""
    lay = layout(inst)
    tr = tree(inst, lay, restrict=False)
    for a in _all_assignments(inst):
        if not balanced_violations(inst, a):
            least = _least_loads(inst, lay, a)
            bound = box_bound(tr, least, least)
            assert bound is not None and bound <= balanced_objective(inst, a)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_groups(), st.randoms(use_true_random=False))
def test_warm_relaxations_equal_each_vectors_own(inst, rnd):
    """The warm-started LP over every arc, solved for a sequence of vectors (each from the last one's
    basis), has each vector's own relaxation optimum (``fixed_model`` built and solved cold)."""
    from dataclasses import replace

    from kipopt.formulations.consumers.level_search import fixed_model
    from kipopt.formulations.consumers.level_warm import leaf_lp, relax
    from kipopt.formulations.highs import solve_lp
    setting = _leaf_setting(inst)
    if setting is None:
        return
    space, tr, net = setting
    leaf = leaf_lp(space, net)
    for _ in range(4):
        vector = _vector(tr, rnd)
        warm = relax(leaf, vector)
        cold = solve_lp(replace(fixed_model(space, vector, net).lp, integrality=None))
        assert warm.status == cold.status
        if cold.status == "optimal":
            assert abs(warm.objective - cold.objective) < 1e-6


@SETTINGS
@given(small_groups(), st.randoms(use_true_random=False))
def test_pair_levels_equal_the_dense_definition(inst, rnd):
    """The box bound reads each class's ``max_{t in S_c} level_t`` off the (class, topic) pairs; the
    dense (classes x topics) definition gives the same, 0 for a class without topics."""
    lay = layout(inst)
    if not lay.topics:
        return
    tr = tree(inst, lay, restrict=rnd.random() < 0.5)
    levels = np.array([[rnd.randint(int(a), int(b)) for a, b in zip(tr.lo, tr.hi)] for _ in range(3)], dtype=np.int64)
    member_of = tr.space.member_of
    dense = np.maximum(np.where(member_of[None], levels[:, None, :], -1).max(axis=2), 0)
    pr = tr.pairs
    got = np.zeros_like(dense)  # classes without topics: 0
    if len(pr.cls):
        got[:, pr.classes] = _class_levels(pr, np.take(levels.T, pr.topic, axis=0)).T
    assert np.array_equal(got, dense)


def _dense_box_bound(inst, lay, restrict: bool, lo: np.ndarray, hi: np.ndarray) -> float:
    """The module docstring's bound of one box, written out over the dense (classes x topics) grid with
    Python loops: the reference the array code must equal."""
    from kipopt.formulations.consumers.groups import cheapest, least_cross
    from kipopt.formulations.consumers.level_search import level_base
    sp = level_base(inst, lay)
    best = cheapest(lay)
    C, T = sp.member_of.shape
    total = int(sp.sizes.sum())
    n = [int(sp.count[c]) if sp.member_of[c].any() else 0 for c in range(C)]
    mu_lo = [max([int(lo[t]) for t in range(T) if sp.member_of[c, t]] + [0]) for c in range(C)]
    mu_hi = [max([int(hi[t]) for t in range(T) if sp.member_of[c, t]] + [0]) for c in range(C)]
    possible = [[bool(sp.member_of[c, t]) and hi[t] >= mu_lo[c] - 1 for t in range(T)] for c in range(C)]
    base = sum(n[c] * mu_lo[c] for c in range(C))
    feasible = base <= total <= sum(n[c] * (mu_hi[c] + 1) for c in range(C))
    feasible &= all(sum(n[c] * min(mu_hi[c] + 1, int(hi[t]) + 1) for c in range(C) if possible[c][t]) >= sp.sizes[t]
                    for t in range(T))
    feasible &= all(sum(int(sp.sizes[t]) for t in range(T) if possible[c][t]) >= n[c] * mu_lo[c]
                    for c in range(C) if sp.member_of[c].any())
    if not feasible:
        return np.inf
    keep: dict[int, dict[int, int]] = {}
    for (g, m), numbers in sp.owned.items():
        t = int(sp.group_topic[g])
        if sp.member_of[sp.member_class[m], t] and lay.cross[g, lay.member_rack[m]] <= best[g]:
            keep.setdefault(m, {}).setdefault(t, 0)
            keep[m][t] += len(numbers)
    low_kept = gain = 0
    point = bool((lo == hi).all())
    for m, per_topic in keep.items():
        c = int(sp.member_class[m])
        k = sum(v for t, v in per_topic.items() if possible[c][t])
        low_kept += min(k, mu_lo[c])
        if point:
            gain += sum(v for t, v in per_topic.items() if lo[t] == mu_lo[c]) >= mu_lo[c] + 1
        else:  # at count ℓ it keeps only topics with λ_t >= ℓ - 1: every ℓ of its range, written out (the
            # PEAK_LEVELS highest exactly, the lower ones with all its keepable partitions)
            def kept_at(ell: int) -> int:
                if ell <= mu_hi[c] + 1 - PEAK_LEVELS:
                    return min(ell, k)
                return min(ell, sum(v for t, v in per_topic.items() if possible[c][t] and hi[t] + 1 >= ell))
            gain += max(kept_at(ell) for ell in range(mu_lo[c], mu_hi[c] + 2)) - min(k, mu_lo[c])
    least = least_cross(lay, best)
    bound = float(sp.weight * least + sp.owned_total - low_kept - min(total - base, gain))
    if restrict:
        for g in range(len(lay.groups)):
            t = int(sp.group_topic[g])
            if not any(possible[c][t] and sp.class_cross[g, c] <= best[g] for c in range(C)):
                return float(sp.weight * (least + 1))
    return bound


@SETTINGS
@given(small_groups(), st.randoms(use_true_random=False))
def test_box_bounds_equal_the_dense_reference(inst, rnd):
    """The array code (pairs laid out by box, sparse sums per class, owner and group) gives each box of a
    batch exactly the bound of the written-out definition, single vectors included."""
    from kipopt.formulations.consumers.level_bounds import box_bounds
    lay = layout(inst)
    if not lay.topics:
        return
    restrict = rnd.random() < 0.5
    tr = tree(inst, lay, restrict=restrict)
    los, his = [], []
    for _ in range(6):
        lo = np.array([rnd.randint(int(a), int(b)) for a, b in zip(tr.lo, tr.hi)], dtype=np.int64)
        hi = lo.copy() if rnd.random() < 0.3 else np.array([rnd.randint(int(a), int(b)) for a, b in zip(lo, tr.hi)],
                                                             dtype=np.int64)
        los.append(lo)
        his.append(hi)
    got = box_bounds(tr, np.array(los), np.array(his))
    assert got.tolist() == [_dense_box_bound(inst, lay, restrict, lo, hi) for lo, hi in zip(los, his)]


def test_box_bounds_of_wide_boxes_equal_the_dense_reference():
    """Groups whose owners hold many partitions, boxes many levels wide: the owners' peaks below and
    above the PEAK_LEVELS counts looked at one by one are those of the written-out definition."""
    import random
    from kipopt.formulations.consumers.level_bounds import box_bounds
    rnd = random.Random(5)
    for seed in range(3):
        inst = generate("consumers", seed, partitions=240, members=12, topics=4, subscriptions="mixed")
        lay = layout(inst)
        tr = tree(inst, lay, restrict=False)
        least = _least_loads(inst, lay, search_tree(inst, lay).assignment)  # boxes around the optimum's levels
        los = np.array([np.maximum(tr.lo, least - [rnd.randint(0, 5) for _ in least]) for _ in range(12)])
        his = np.array([np.minimum(tr.hi, least + [rnd.randint(0, 5) for _ in least]) for _ in range(12)])
        got = box_bounds(tr, los, his)
        assert np.isfinite(got).all()
        assert got.tolist() == [_dense_box_bound(inst, lay, False, lo, hi) for lo, hi in zip(los, his)]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_groups(), st.randoms(use_true_random=False))
def test_relaxations_cut_off_only_above_the_cutoff_and_rounded_answers_are_valid(inst, rnd):
    """A warm relaxation given a cutoff either solves in full (the same optimum as without one) or stops
    with a checked dual bound above the cutoff that does not exceed the optimum; the rounded-high
    heuristic's answers meet the rule and cost what the model says, never less than the relaxation."""
    from kipopt.formulations.consumers.level_search import read_back
    from kipopt.formulations.consumers.level_warm import leaf_lp, relax, relax_rounded
    setting = _leaf_setting(inst)
    if setting is None:
        return
    space, tr, net = setting
    plain, cut = leaf_lp(space, net), leaf_lp(space, net)
    for _ in range(6):
        vector = _vector(tr, rnd)
        full, rounded = relax_rounded(plain, vector)
        if full.status != "optimal":
            continue
        cutoff = full.objective + rnd.choice([-3.5, -0.5, 0.5, 2.5])
        warm = relax(cut, vector, cutoff=cutoff)
        if warm.status == "cutoff":
            assert cutoff < warm.bound <= full.objective + 1e-6
        else:
            assert warm.status == "optimal" and abs(warm.objective - full.objective) < 1e-6
        if rounded is not None:
            model, result = rounded
            answer = read_back(space, model, result.x)
            assert not balanced_violations(inst, answer)
            assert balanced_objective(inst, answer) == round(result.objective) + space.owned_total
            assert result.objective >= full.objective - 1e-6


def _leaf_setting(inst):
    """``(level space, root tree, arcs)`` of a group with topics, else ``None``."""
    from kipopt.formulations.consumers.level_search import arcs, level_base
    lay = layout(inst)
    if not lay.topics:
        return None
    space = level_base(inst, lay)
    return space, tree(inst, lay, restrict=False), arcs(space)


def _vector(tr, rnd) -> np.ndarray:
    """A random level vector of the root box."""
    return np.array([rnd.randint(int(a), int(b)) for a, b in zip(tr.lo, tr.hi)], dtype=np.int64)


def _shaved_level_by_level(tr, lo, hi, best):
    """The shave as it was before galloping ends: one end level per topic and batch."""
    from kipopt.formulations.consumers.level_bounds import box_bounds
    lo, hi, batches = lo.copy(), hi.copy(), 0
    while True:
        wide = np.flatnonzero(hi > lo)
        if not len(wide):
            return lo, hi, batches
        rows, mid = np.arange(len(wide)), (lo[wide] + hi[wide]) // 2
        los, his = np.repeat(lo[None], 4 * len(wide), axis=0), np.repeat(hi[None], 4 * len(wide), axis=0)
        his[4 * rows, wide], los[4 * rows + 1, wide] = mid, mid + 1
        his[4 * rows + 2, wide], los[4 * rows + 3, wide] = lo[wide], hi[wide]
        cut = box_bounds(tr, los, his).reshape(-1, 4) >= best
        batches += 1
        if cut[:, :2].all(axis=1).any():
            return None, None, batches
        if not cut.any():
            return lo, hi, batches
        lo[wide] = np.where(cut[:, 0], mid + 1, lo[wide] + cut[:, 2])
        hi[wide] = np.where(cut[:, 1], mid, hi[wide] - cut[:, 3])
        if (lo > hi).any():
            return None, None, batches


def test_galloping_ends_shave_to_a_box_where_no_end_level_or_half_can_be_cut():
    """A range shaved level by level took one batch of bounds per level: ends that double after a cut take
    fewer batches, and stop only where no single end level and no half of any topic can be cut."""
    from unittest import mock
    from kipopt.formulations.consumers import level_bounds
    from kipopt.formulations.consumers.decmin import solve_balanced
    fewer = 0
    for seed, (p, m, t) in enumerate([(2_000, 40, 8), (5_000, 120, 10), (20_000, 60, 12)]):
        inst = generate("consumers", seed, partitions=p, members=m, topics=t, subscriptions="mixed")
        lay = layout(inst)
        tr = tree(inst, lay, restrict=True)
        best = balanced_objective(inst, solve_balanced(inst, lay=lay)[0])
        with mock.patch.object(level_bounds, "box_bounds", wraps=level_bounds.box_bounds) as counted:
            kids = children(tr, tr.lo, tr.hi, best)
            calls = counted.call_count
        _, _, reference = _shaved_level_by_level(tr, tr.lo, tr.hi, best)
        fewer += calls < reference
        if len(kids) < 2:
            continue
        lo, hi = np.minimum(kids[0][0], kids[1][0]), np.maximum(kids[0][1], kids[1][1])
        for w in np.flatnonzero(hi > lo):
            mid = (lo[w] + hi[w]) // 2
            for a, b in ((lo[w], lo[w]), (hi[w], hi[w]), (lo[w], mid), (mid + 1, hi[w])):
                l2, h2 = lo.copy(), hi.copy()
                l2[w], h2[w] = a, b
                value = box_bound(tr, l2, h2)  # None: no vector there has an assignment, which is a cut too
                assert value is not None and value < best
    assert fewer > 0


@pytest.mark.parametrize("seed", [3, 6, 8])
def test_leaf_milps_in_a_child_and_leaves_the_sweep_solved_prove_the_same_optimum(seed, monkeypatch):
    """Mixed 20-member, 6-topic groups under a deadline, as ``run_balanced`` calls the tree: with every
    leaf MILP in a child the deadline kills (as above :data:`LEAF_MILP_CHILD_COLUMNS` columns), the same
    proven optimum as in process; a vector the sweep already solved is not solved again (seed 6 reaches
    one, and its MILP)."""
    from kipopt.formulations.consumers.balanced import solve_balanced
    inst = generate("consumers", seed, members=20, topics=6, partitions=300, subscriptions="mixed")
    lay = layout(inst)
    value, least = decmin_incumbent(inst, lay)
    answer = solve_balanced(inst, lay=lay)[0]
    monkeypatch.setattr(level_policy, "ENUM_MAX_VECTORS", 0)  # seed 6's known vector is in a box enumeration prunes
    runs = []
    for columns in (level_policy.LEAF_MILP_CHILD_COLUMNS, 0):
        monkeypatch.setattr(level_policy, "LEAF_MILP_CHILD_COLUMNS", columns)
        runs.append(search_tree(inst, lay, incumbent=value, best=least, answer=answer,
                                deadline=time.perf_counter() + 60))
    _, status, optimum, _ = solve_members(inst, lay, 60)
    assert status == "optimal"
    for found in runs:
        assert found.bound == min(value, found.value or value) == optimum
        assert found.assignment is None or not balanced_violations(inst, found.assignment)
    if seed == 6:
        assert runs[1].info["level_known"] >= 1 and runs[1].info["level_milps"] >= 1


@pytest.mark.parametrize("seed", [3, 6])
def test_large_leaves_solved_two_at_a_time_prove_the_same_optimum(seed, monkeypatch):
    """Every leaf LP taken as large (interior point in a child, no box relaxations), as at 1,000,000 x
    10,000: with two leaves at a time (the sweep's first guess with its lower neighbour, and the two
    leaves first in line) the tree proves the optimum one at a time proves, and it did solve pairs."""
    import kipopt.formulations.consumers.level_tree as level_tree
    from kipopt.formulations.consumers.balanced import solve_balanced
    from kipopt.formulations.highs import WarmLP
    inst = generate("consumers", seed, members=20, topics=6, partitions=300, subscriptions="mixed")
    lay = layout(inst)
    value, least = decmin_incumbent(inst, lay)
    answer = solve_balanced(inst, lay=lay)[0]
    monkeypatch.setattr(WarmLP, "WARM_COLUMNS", 0)
    monkeypatch.setattr(level_policy, "BOX_LP_MAX_COLUMNS", 0)
    batches = []
    each = level_tree.rounded_or_priced_each

    def spy(leaf, vectors, *args):
        batches.append(len(vectors))
        return each(leaf, vectors, *args)
    monkeypatch.setattr(level_tree, "rounded_or_priced_each", spy)
    runs = []
    for workers in (1, 2):
        monkeypatch.setattr(level_policy, "LEAF_WORKERS", workers)
        runs.append(search_tree(inst, lay, incumbent=value, best=least, answer=answer, threads=2,
                                deadline=time.perf_counter() + 120))
    one, two = runs
    assert one.bound == min(value, one.value or value) == two.bound == min(value, two.value or value)
    assert two.assignment is None or not balanced_violations(inst, two.assignment)
    assert max(batches) == 2 and two.info["level_paired"] >= 1 and one.info["level_paired"] == 0


def test_a_lone_large_leaf_is_solved_beside_a_vector_of_the_next_box(monkeypatch):
    """Every leaf LP taken as large (as at 100,000 x 5,000): a popped leaf with no other leaf in line is
    solved beside the vector nearest it in the box of least bound; the tree proves the same optimum as
    without those partners (the LP values it remembers for them are bounds of their leaves), and it did
    solve some; boxes were bounded and split while the children worked."""
    from kipopt.formulations.consumers.balanced import solve_balanced
    from kipopt.formulations.highs import WarmLP
    monkeypatch.setattr(WarmLP, "WARM_COLUMNS", 0)
    monkeypatch.setattr(level_policy, "BOX_LP_MAX_COLUMNS", 0)
    inside = beside = 0
    for seed in (3, 6, 11):
        inst = generate("consumers", seed, members=20, topics=6, partitions=300, subscriptions="mixed")
        lay = layout(inst)
        value, least = decmin_incumbent(inst, lay)
        answer = solve_balanced(inst, lay=lay)[0]
        runs = []
        for on in (False, True):
            monkeypatch.setattr(level_policy, "SPECULATIVE_PARTNERS", on)
            runs.append(search_tree(inst, lay, incumbent=value, best=least, answer=answer, threads=2,
                                    deadline=time.perf_counter() + 120))
        off, with_inside = runs

        def best(found):
            return value if found.value is None else min(value, found.value)
        assert off.info["level_inside"] == 0
        assert off.bound == best(off) == with_inside.bound == best(with_inside)
        assert with_inside.assignment is None or not balanced_violations(inst, with_inside.assignment)
        inside += with_inside.info["level_inside"]
        beside += with_inside.info["level_beside"] + off.info["level_beside"]
    assert inside >= 1 and beside >= 1   # and boxes were bounded and split while leaves solved in children
