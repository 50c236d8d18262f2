"""The level tree's start made beside the dec-min stages: the tree proves the same optimum from it as from
its own, the thread never outlives the method, and it is made only where that is safe."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import kipopt.formulations.consumers.level_start as level_start
from kipopt.datasets import generate
from kipopt.formulations.consumers.balanced import run_balanced, solve_balanced
from kipopt.formulations.consumers.groups import layout
from kipopt.formulations.consumers.level_start import StartBeside, make_start, start_beside
from kipopt.formulations.consumers.level_tree import search_tree
from kipopt.formulations.consumers.rules import balanced_objective, balanced_violations
from kipopt.methods import SolveOptions

from test_level_search import decmin_incumbent, small_groups


def _started() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "kipopt-level-start"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=small_groups())
def test_the_tree_from_a_start_proves_what_it_proves_from_its_own(inst):
    """As run_balanced calls it, with and without the start: the same optimum, met by the bound."""
    lay = layout(inst)
    value, least = decmin_incumbent(inst, lay)
    if least is None:
        return
    answer = solve_balanced(inst, lay=lay)[0]
    own = search_tree(inst, lay, incumbent=value, best=least, answer=answer)
    start = make_start(inst, lay, None, time.perf_counter() + 60)
    made = search_tree(inst, lay, incumbent=value, best=least, answer=answer, start=start)
    if own is None:
        assert made is None
        return
    def best(found):
        return value if found.value is None else min(value, found.value)
    assert own.bound == made.bound == best(own) == best(made)
    if made.assignment is not None:
        assert not balanced_violations(inst, made.assignment)
        assert balanced_objective(inst, made.assignment) == made.value


def test_the_start_solved_the_sweeps_first_leaf():
    """The 10,000 x 1,000 benchmark's shape, smaller: the dec-min members hold ``⌊P / M⌋`` or one more, so the
    start's leaf is the sweep's first; its basis and duals are in the family when the tree takes it."""
    inst = generate("consumers", 1, members=100, topics=10, partitions=1000, subscriptions="mixed")
    lay = layout(inst)
    start = make_start(inst, lay, None, None)
    assert start.leaf is not None and start.leaf.warm.basis is not None and start.leaf.warm.carried
    assert np.array_equal(start.best, level_start.cheapest(lay))


def test_a_start_is_taken_once_and_only_for_its_arcs():
    inst = generate("consumers", 2, members=30, topics=5, partitions=300, subscriptions="mixed")
    lay = layout(inst)
    beside = level_start.StartBeside(inst, lay, None, None)
    best = level_start.cheapest(lay)
    assert beside.take(best + 1) is None          # other arcs: the tree builds its own
    beside = level_start.StartBeside(inst, lay, None, None)
    assert beside.take(None) is None              # the dec-min answer was not at the least cross-rack count
    beside = level_start.StartBeside(inst, lay, None, None)
    taken = beside.take(best)
    assert taken is not None and beside.take(best) is None
    own = make_start(inst, lay, None, None).tr                 # the index, built by the taker meanwhile
    assert taken.tr is not None and taken.tr.space is taken.leaf.space
    assert np.array_equal(taken.tr.lo, own.lo) and np.array_equal(taken.tr.hi, own.hi) and taken.tr.total == own.total


def test_made_only_where_it_pays_and_is_safe(monkeypatch):
    inst = generate("consumers", 3, members=30, topics=5, partitions=300, subscriptions="mixed")
    lay = layout(inst)
    monkeypatch.setattr(level_start, "cores", lambda: 2)
    assert start_beside(inst, lay, 1, None) is None        # the caller's thread budget
    made = start_beside(inst, lay, 2, None)
    assert made is not None and made.take(None) is None
    monkeypatch.setattr(level_start, "START_MAX_PARTITIONS", 299)
    assert start_beside(inst, lay, None, None) is None     # too large: forks and memory
    monkeypatch.setattr(level_start, "START_MAX_PARTITIONS", 300)
    made = start_beside(inst, lay, None, None)
    assert made is not None and made.take(None) is None
    monkeypatch.setattr(level_start, "cores", lambda: 1)
    assert start_beside(inst, lay, None, None) is None


@pytest.mark.parametrize("fails,threads", [(False, None), (False, 2), (True, None)])
def test_run_balanced_joins_the_start_and_survives_its_failure(fails, threads, monkeypatch):
    """The method returns with no start thread alive, proves the optimum it proves without the start
    (``threads=1``), with or without a thread count (HiGHS' pool sized before the thread starts), and a
    start that raised is said in the info, not lost; the tree then builds its own."""
    monkeypatch.setattr(level_start, "cores", lambda: 2)
    if fails:
        def broken(*args, **kwargs):
            raise RuntimeError("no start")
        monkeypatch.setattr(level_start, "make_start", broken)
    inst = generate("consumers", 4, members=60, topics=8, partitions=600, subscriptions="mixed")
    alone = run_balanced(inst, SolveOptions(time_limit=60, threads=1))
    made = []
    monkeypatch.setattr(level_start, "StartBeside", lambda *args: made.append(1) or StartBeside(*args))
    beside = run_balanced(inst, SolveOptions(time_limit=60, threads=threads))
    assert made == [1]
    assert not _started()
    assert beside.status.value == alone.status.value == "optimal"
    assert beside.objective == alone.objective == beside.bound
    assert ("level_start" in beside.info) == fails
    if fails:
        assert "RuntimeError: no start" in beside.info["level_start"]



@pytest.mark.parametrize("fails", [False, True])
def test_a_start_made_while_stage_two_solves_in_a_child(fails, monkeypatch):
    """Above ``START_MAX_PARTITIONS`` the start is made in this process while stage 2 solves in its child
    (interior point): made once, during that solve, and the method proves the optimum it proves without;
    a start that raised is said in the info and the tree builds its own."""
    import kipopt.formulations.consumers.decmin as decmin
    monkeypatch.setattr(level_start, "cores", lambda: 2)
    inst = generate("consumers", 4, members=60, topics=8, partitions=600, subscriptions="mixed")
    alone = run_balanced(inst, SolveOptions(time_limit=60, threads=1))
    lay = layout(inst)
    monkeypatch.setattr(level_start, "START_MAX_PARTITIONS", 100)
    assert start_beside(inst, lay, None, None) is None
    assert level_start.start_while(inst, lay, 1, None) is None          # the caller's thread budget
    monkeypatch.setattr(decmin, "STAGE2_INTERIOR_COLUMNS", 0)              # stage 2 in a child
    calls = []
    solve = decmin.solve_tu_lp
    monkeypatch.setattr(decmin, "solve_tu_lp", lambda *a, **k: calls.append("stage 2") or solve(*a, **k))
    make = level_start.make_start

    def made(*args):
        calls.append("start")
        if fails:
            raise RuntimeError("no start")
        return make(*args)
    monkeypatch.setattr(level_start, "make_start", made)
    during = run_balanced(inst, SolveOptions(time_limit=60, threads=None))
    assert calls == ["start"]                                              # stage 2 ran in the child
    assert during.status.value == alone.status.value == "optimal"
    assert during.objective == alone.objective == during.bound
    assert ("level_start" in during.info) == fails
