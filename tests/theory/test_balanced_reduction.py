"""SAT (every literal at most twice) reduces to ``balanced``: machine checks of both directions.

For random small formulas: the formula is satisfiable iff the reduced instance has a valid assignment
whose criterion (cross-rack in mode "racks", revoked in mode "owned") is 0, decided (1) by a generic
brute force over the rule's own checker, independent of the proof, and (2) on fewer cases by the
project's exact solver ``exact.balanced`` (proven optimum). A satisfying truth assignment maps forward
to a valid zero-cost assignment; every zero-cost assignment maps back to a satisfying one.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipopt import api
from kipopt.formulations.consumers.rules import (balanced_criteria, balanced_violations, is_cross_rack,
                                                 owners)
from kipopt.instance import ConsumersInstance
from kipopt.theory.balanced_reduction import (MODES, assignment_from_truth, reduce_cnf, satisfies,
                                              satisfying, split_occurrences, truth_from_assignment)


@st.composite
def formulas(draw, max_vars: int = 3, max_clauses: int = 5):
    """A CNF over 1..n in which every literal occurs at most twice; clauses of 1 to 3 literals."""
    n = draw(st.integers(1, max_vars))
    left = {lit: 2 for v in range(1, n + 1) for lit in (v, -v)}
    cnf = []
    for _ in range(draw(st.integers(1, max_clauses))):
        clause = []
        for _ in range(draw(st.integers(1, 3))):
            choices = sorted(lit for lit, k in left.items() if k)
            if not choices:
                break
            lit = draw(st.sampled_from(choices))
            left[lit] -= 1
            clause.append(lit)
        if clause:
            cnf.append(tuple(clause))
    return tuple(cnf), n


def _allowed(instance: ConsumersInstance, criterion: str) -> dict[str, list[str]]:
    """Partition -> the subscribers that may hold it at zero cost of ``criterion``."""
    subscribers = defaultdict(list)
    for m in instance.members:
        for t in m.topics:
            subscribers[t].append(m)
    owner = owners(instance)
    allowed = {}
    for p, racks in instance.partition_racks.items():
        ms = subscribers[p.rpartition("-")[0]]
        if criterion == "cross_rack":
            ms = [m for m in ms if not is_cross_rack(m.rack, racks)]
        elif p in owner:
            ms = [m for m in ms if m.id == owner[p]]
        allowed[p] = [m.id for m in ms]
    return allowed


def zero_cost_assignment(instance: ConsumersInstance, criterion: str) -> dict[str, tuple[str, ...]] | None:
    """A valid assignment with ``criterion`` 0, or None: depth-first over every partition's holders.

    Generic in the instance. Pruning (after each step, on the topics of the members it changed) only
    uses the balance inequality with loads bounded from above by what a member can still receive:
    sound, and exact once every partition is placed. The tests judge what it finds again with the
    rule's own ``balanced_violations``.
    """
    allowed = _allowed(instance, criterion)
    topics = {m.id: m.topics for m in instance.members}
    subscribers = defaultdict(list)
    for m in instance.members:
        for t in m.topics:
            subscribers[t].append(m.id)
    # forced placements first, then partitions of the most widely subscribed topics (their balance prunes most)
    order = sorted(allowed, key=lambda p: (len(allowed[p]) > 1, -len(subscribers[p.rpartition("-")[0]])))
    load = {m: 0 for m in topics}
    room = {m: 0 for m in topics}
    for p in order:
        for m in allowed[p]:
            room[m] += 1
    holds: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))   # topic -> holder -> count
    chosen: dict[str, str] = {}

    def hopeless(touched: set[str]) -> bool:
        return any(load[o] > min(load[m] + room[m] for m in subscribers[t]) + 1
                   for t in touched for o, k in holds[t].items() if k)

    def search(i: int) -> bool:
        if i == len(order):
            return True
        p = order[i]
        t = p.rpartition("-")[0]
        for m in allowed[p]:
            room[m] -= 1
        touched = {u for m in allowed[p] for u in topics[m]}
        for m in allowed[p]:
            load[m] += 1
            holds[t][m] += 1
            chosen[p] = m
            if not hopeless(touched) and search(i + 1):
                return True
            load[m] -= 1
            holds[t][m] -= 1
        for m in allowed[p]:
            room[m] += 1
        del chosen[p]
        return False

    if any(not ms for ms in allowed.values()) or not search(0):
        return None
    out: dict[str, list[str]] = {m: [] for m in topics}
    for p, m in chosen.items():
        out[m].append(p)
    return {m: tuple(ps) for m, ps in out.items()}


def _check_forward_and_back(cnf, n, red, found):
    truth = satisfying(cnf, n)
    assert (truth is not None) == (found is not None), (cnf, red.mode)
    if truth is None:
        return
    built = assignment_from_truth(red, truth)
    assert balanced_violations(red.instance, built) == []
    assert balanced_criteria(red.instance, built) == {"cross_rack": 0, "revoked": 0}
    assert balanced_violations(red.instance, found) == []
    assert balanced_criteria(red.instance, found)[red.criterion] == 0
    assert satisfies(cnf, truth_from_assignment(red, found))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(formulas(), st.sampled_from(MODES))
def test_satisfiable_iff_brute_force_finds_a_zero_cost_balanced_assignment(formula, mode):
    cnf, n = formula
    red = reduce_cnf(cnf, n, mode)
    _check_forward_and_back(cnf, n, red, zero_cost_assignment(red.instance, red.criterion))


@settings(max_examples=24, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(formulas(max_vars=3, max_clauses=4), st.sampled_from(MODES))
def test_satisfiable_iff_exact_balanced_proves_criterion_zero(formula, mode):
    cnf, n = formula
    red = reduce_cnf(cnf, n, mode)
    solution = api.solve(red.instance, "exact.balanced")
    assert solution.status.value == "optimal" and solution.bound == solution.objective
    zero = solution.metrics["criteria"][red.criterion] == 0
    _check_forward_and_back(cnf, n, red, solution.assignment if zero else None)


def test_unsatisfiable_formula_breaks_a_pin_in_every_optimum():
    cnf = ((1, 2), (-1, 2), (1, -2), (-1, -2))
    for mode in MODES:
        red = reduce_cnf(cnf, 2, mode)
        assert zero_cost_assignment(red.instance, red.criterion) is None
        assert api.solve(red.instance, "exact.balanced").metrics["criteria"][red.criterion] == 1


def test_reduction_refuses_a_literal_occurring_thrice_and_a_false_truth_assignment():
    with pytest.raises(ValueError, match="more than twice"):
        reduce_cnf(((1,), (1, 2), (1, -2)), 2)
    red = reduce_cnf(((1,), (2,)), 2)
    with pytest.raises(ValueError, match="false"):
        assignment_from_truth(red, {1: True, 2: False})


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4).flatmap(lambda n: st.tuples(
    st.lists(st.lists(st.integers(1, n).flatmap(lambda v: st.sampled_from((v, -v))), min_size=1, max_size=3),
             min_size=1, max_size=4), st.just(n))))
def test_split_occurrences_is_equisatisfiable_and_leaves_every_literal_at_most_twice(formula):
    cnf, n = formula
    split, count = split_occurrences(cnf, n)
    occurrences = defaultdict(int)
    for clause in split:
        for lit in clause:
            occurrences[lit] += 1
    assert max(occurrences.values()) <= 2
    assert (satisfying(cnf, n) is None) == (satisfying(split, count) is None)
    reduce_cnf(split, count)   # accepted by the reduction
