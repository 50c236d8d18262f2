"""The certificate's stage of ``exact.balanced`` (:mod:`kipopt.formulations.consumers.level_prove`): its bound never
passes the optimum of tiny groups (every assignment enumerated, racks included), and the method reports
``optimal`` when that bound meets its answer where the tree alone would not have."""

from __future__ import annotations

import math
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from consumer_cases import brute_force, coupled_group, owned_beyond, rackless_groups, tiny_groups
from kipopt import from_dict
from kipopt.formulations.consumers import balanced, level_prove
from kipopt.formulations.consumers.groups import layout
from kipopt.formulations.consumers.level_bounds import tree
from kipopt.formulations.consumers.level_certificate import rows
from kipopt.formulations.consumers.level_search import SearchResult
from kipopt.methods import SolveOptions
from kipopt.formulations.consumers.rules import balanced_objective, balanced_violations


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(rackless_groups(), tiny_groups()))
def test_the_certified_bound_never_passes_the_optimum(inst):
    tr = tree(inst, layout(inst), restrict=True)
    if rows(tr) is None:
        return
    bound, info = level_prove.certified_bound(inst, tr, math.inf)
    assert info["certificate_max_min"] is not None      # no deadline: the max-min's search closes
    if bound is not None:
        assert bound <= brute_force(inst, "balanced")[0]


def test_the_floor_is_the_owned_partitions_beyond_q_when_nothing_is_read_cross_rack():
    inst = coupled_group()
    tr = tree(inst, layout(inst), restrict=True)
    assert level_prove.floor_at_q(inst, tr) == owned_beyond(inst, 2) == 2
    bound, info = level_prove.certified_bound(inst, tr, math.inf)
    assert (bound, info["certificate"]) == (1, "proven") == (brute_force(inst, "balanced")[0], "proven")


def test_the_floor_counts_the_least_cross_rack_partitions_first():
    # t's partition has a replica on rack b only, and its one subscriber is on rack a: one cross-rack
    # read at best, weighed by the owned partitions and one
    inst = from_dict({"format": 1, "family": "consumers", "topics": {"t": {"racks": [["b"]]}, "u": {"racks": [["a"]]}},
                      "members": [{"id": "c0", "rack": "a", "topics": ["t"], "owned": ["t-0"]},
                                  {"id": "c1", "rack": "a", "topics": ["u"], "owned": []}]})
    tr = tree(inst, layout(inst), restrict=True)
    assert level_prove.floor_at_q(inst, tr) == 1 * (1 + 1) + 0 == brute_force(inst, "balanced")[0]


_TREE = balanced.search_tree


def _stalled_tree(*args, **kwargs):
    """The level tree's answer without its proof (as on the paper grid's large groups)."""
    found = _TREE(*args, **kwargs)
    return None if found is None else SearchResult(found.assignment, found.value, -math.inf, found.info)


def _run(inst, certificate=True):
    rest = lambda left: left  # noqa: E731
    with mock.patch.object(level_prove, "CERTIFY_LEAST_SECONDS", 0.0), \
            mock.patch.object(balanced, "search_tree", _stalled_tree), \
            mock.patch.object(balanced, "_stage_order", lambda *a: [(balanced._tree_stage, rest)]), \
            mock.patch.object(level_prove, "applies", level_prove.applies if certificate else lambda *a: None):
        return balanced.run_balanced(inst, SolveOptions(time_limit=30.0))


def test_exact_balanced_is_optimal_where_the_certificate_meets_the_trees_answer():
    inst = coupled_group()
    result = _run(inst)
    assert not balanced_violations(inst, result.assignment)
    assert (result.status.value, result.objective, result.bound) == ("optimal", 1.0, 1.0)
    assert balanced_objective(inst, result.assignment) == 1.0 and result.info["certificate"] == "proven"
    stalled = _run(inst, certificate=False)     # the tree's bound alone: its answer, unproven
    assert (stalled.status.value, stalled.objective) == ("feasible", 1.0) and "certificate" not in stalled.info


def test_a_floor_above_the_answer_in_hand_is_reported_and_never_used():
    inst = coupled_group()
    with mock.patch.object(level_prove, "certified_bound", lambda *a: (5, {"certificate": "proven"})):
        result = _run(inst)
    assert result.status.value == "feasible" and result.bound < result.objective == 1.0
    assert result.info["certificate"].startswith("contradicted: floor 5 above the answer in hand (1)")


def test_the_stage_is_not_planned_under_a_short_limit_or_with_an_overloaded_topic():
    inst = coupled_group()
    lay = layout(inst)
    order = [(balanced._tree_stage, lambda left: left)]
    assert balanced._with_certificate(inst, lay, order, level_prove.CERTIFY_LEAST_SECONDS - 1, object()) is order
    assert len(balanced._with_certificate(inst, lay, order, level_prove.CERTIFY_LEAST_SECONDS, object())) == 3
    assert balanced._with_certificate(inst, lay, order, level_prove.CERTIFY_LEAST_SECONDS, None) is order
    # q = 3: c0, u's only subscriber, keeps two of t at 3 and so has room for one partition of u, which has two
    hot = from_dict({"format": 1, "family": "consumers", "topics": {"t": {"racks": [[]] * 4}, "u": {"racks": [[]] * 2}},
                     "members": [{"id": "c0", "topics": ["t", "u"], "owned": ["t-0", "t-2", "u-1"]},
                                 {"id": "c1", "topics": ["t"], "owned": ["t-1"]}]})
    assert level_prove.applies(hot, layout(hot)) is None
    assert balanced._with_certificate(hot, layout(hot), order, level_prove.CERTIFY_LEAST_SECONDS, object()) is order
