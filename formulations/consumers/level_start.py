"""The level tree's start, made beside the dec-min stages: its structures built and its first leaf LP solved.

The level tree (:mod:`~kipopt.formulations.consumers.level_tree`) starts after the dec-min stages
(:mod:`~kipopt.formulations.consumers.decmin`), and its first leaf LP is solved cold, by interior point
(:class:`~kipopt.formulations.highs.WarmLP`); every later one starts from a basis. Neither needs the
dec-min answer: any leaf of the root box gives the family a basis and duals (members differ only in
bounds, so an optimal basis stays dual feasible), and the tree's structures depend on the group alone.
So on a machine with a second core both are made in a thread while the dec-min stages run (HiGHS
releases the GIL while it solves), and the tree takes them over. Measured on the 10,000 x 1,000
benchmark group: the cold leaf LP took 0.24 s of a 1.25 s run, and the dec-min stages 0.31 s beside it.
The tree's index (0.13 s of Python) is built by the caller instead, once its dec-min stages are done and
while the thread's leaf LP still solves (:class:`StartBeside`).

Only where every solve stays in this process (:data:`START_MAX_PARTITIONS`, and a leaf LP of at most
:data:`~kipopt.formulations.highs.WarmLP.WARM_COLUMNS` columns): a fork while the thread runs waits
for it (:func:`kipopt.deadline.beside`), since a child must not inherit locks the thread holds.
The tree's search, its answer and its bound do not depend on the thread's timing: it is joined before
the tree reads what it made.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from kipopt.deadline import beside, cores
from kipopt.instance import ConsumersInstance

from kipopt.formulations.consumers.groups import Layout, cheapest
from kipopt.formulations.consumers.level_bounds import Tree, root_box, tree
from kipopt.formulations.consumers.level_local import first_guess, lowered
from kipopt.formulations.consumers.level_search import Arcs, LevelSpace, arcs, level_base
from kipopt.formulations.consumers.level_warm import LeafLP, leaf_columns, leaf_lp, relax
from kipopt.formulations.highs import WarmLP, size_thread_pool

START_MAX_PARTITIONS = 50_000
"""Groups of at most this many partitions get their tree's start beside the dec-min stages; larger ones
solve their stage 2 and leaf LPs in children (forks, which would wait for the thread), and building
their tree's index beside the stages would hold both in memory at once."""


@dataclass(frozen=True)
class Start:
    """What the tree needs before its search: the least cross-rack cost per partition group its arcs keep
    to (``best``), its bounds' index, its arcs and the leaf LP family (``leaf``: already solved once where
    leaf LPs are small enough to be solved here, else built only)."""

    best: np.ndarray
    tr: Tree | None          # None only inside StartBeside, which builds it in the caller
    net: Arcs
    leaf: LeafLP | None


class StartWhile:
    """:class:`Start` made when called: by the dec-min stages while their stage 2 solves in a child
    (:func:`~kipopt.formulations.consumers.decmin.solve_balanced`'s ``meanwhile``), where this process would
    only wait. For groups above :data:`START_MAX_PARTITIONS`, whose leaf LPs are solved in children: the
    leaf LP family is built, not solved."""

    def __init__(self, instance: ConsumersInstance, lay: Layout, threads: int | None, deadline: float | None) -> None:
        self._args = (instance, lay, threads, deadline)
        self._made: Start | None = None
        self.error: str | None = None

    def __call__(self) -> None:
        try:
            self._made = self._make()
        except Exception as exc:  # noqa: BLE001 - the tree then builds its own start; said in the info
            self.error = f"{type(exc).__name__}: {exc}"

    def _make(self) -> Start:
        return make_start(*self._args)

    @property
    def during_stage2(self) -> Callable[[], None] | None:
        """What the dec-min stages call while stage 2 solves in its child: this start's making."""
        return self

    def drop(self) -> None:
        """The start is not wanted (the tree does not run)."""
        self._made = None

    def take(self, best: np.ndarray | None) -> Start | None:
        """The start, to the first taker (its leaf LP family is the tree's to change); ``None`` where the
        tree's arcs do not keep to ``best`` (the dec-min answer was not at the least cross-rack count: the
        tree then builds its own)."""
        made, self._made = self._made, None
        if made is None or best is None or not np.array_equal(best, made.best):
            return None
        return made


class StartBeside(StartWhile):
    """:class:`Start` made in a thread (:func:`start_beside`) as soon as it is asked for, all but the tree's
    index, which :meth:`take` builds in the caller while the thread's leaf LP still solves (interior point,
    without the GIL): the dec-min stages end about when that solve does, and the index took 0.13 s after it
    at 10,000 x 1,000. :meth:`take` and :meth:`drop` join the thread."""

    def __init__(self, instance: ConsumersInstance, lay: Layout, threads: int | None, deadline: float | None) -> None:
        super().__init__(instance, lay, threads, deadline)
        self._space: tuple[np.ndarray, LevelSpace] | None = None   # the arcs' least costs, the level space
        self._space_made = threading.Event()
        self._thread = beside(self, "kipopt-level-start")

    def __call__(self) -> None:
        try:
            super().__call__()
        finally:  # made or failed: take() waits no longer
            self._space_made.set()

    def _make(self) -> Start:
        return make_start(*self._args, index=False, made_space=self._publish)

    def _publish(self, best: np.ndarray, space: LevelSpace) -> None:
        self._space = best, space
        self._space_made.set()

    @property
    def during_stage2(self) -> None:
        """Nothing: the thread makes it."""
        return None

    def drop(self) -> None:
        """The thread is joined. Its solve is not cancelled (HiGHS' user interrupt is a Python callback per
        iteration, each waiting for the GIL while the caller runs): it is at most one leaf LP of a group
        below :data:`START_MAX_PARTITIONS`, solved beside the dec-min stages, which take about as long."""
        self._thread.join()
        super().drop()

    def take(self, best: np.ndarray | None) -> Start | None:
        """:meth:`StartWhile.take` once the thread is done, with the tree's index built here meanwhile (only where
        the start will be taken: its arcs keep to ``best``)."""
        index = None
        self._space_made.wait()
        if best is not None and self._space is not None and np.array_equal(best, self._space[0]):
            index = tree(self._args[0], self._args[1], restrict=True, space=self._space[1])
        self._thread.join()
        if self._made is not None and self._made.tr is None:
            self._made = None if index is None else replace(self._made, tr=index)
        return super().take(best)


def make_start(instance: ConsumersInstance, lay: Layout, threads: int | None, deadline: float | None,
               index: bool = True, made_space: Callable[[np.ndarray, LevelSpace], None] | None = None) -> Start:
    """The tree's start for arcs at the least cross-rack cost, with its first leaf LP solved (when small
    enough to be solved here) at the vector the sweep (:func:`~kipopt.formulations.consumers.level_local.sweep`)
    starts from if the dec-min answer's least loads are all ``⌊P / M⌋``, as they are when its members hold
    ``⌊P / M⌋`` or one more: the sweep's first solve is then its re-solve from an optimal basis. Without
    ``index`` the tree's index is left to the caller (``tr`` is ``None``), to whom ``made_space`` hands the
    arcs' least costs and the level space as soon as they are made."""
    best = cheapest(lay)
    space = level_base(instance, lay)
    if made_space is not None:
        made_space(best, space)
    net = arcs(space, best)
    leaf = leaf_lp(space, net, threads)
    if leaf_columns(net) <= WarmLP.WARM_COLUMNS:  # a leaf solved here (larger ones run in children, forks)
        lo, hi = root_box(lay, space)
        even = np.clip(int(space.sizes.sum()) // max(1, len(lay.members)), lo, hi)
        relax(leaf, lowered(even, space.sizes, first_guess(space.sizes), lo, hi),
              None if deadline is None else max(0.01, deadline - time.perf_counter()))
    return Start(best, tree(instance, lay, restrict=True, space=space) if index else None, net, leaf)


def start_while(instance: ConsumersInstance, lay: Layout, threads: int | None,
                deadline: float | None) -> StartWhile | None:
    """A :class:`StartWhile` for the dec-min stages to make while their stage 2 solves in a child: on a
    group above :data:`START_MAX_PARTITIONS` (smaller ones get :func:`start_beside`), with two cores and
    threads allowed as :func:`start_beside` asks. Measured at 100,000 x 5,000: the tree's index, arcs and
    leaf LP family took about 0.5 s after stage 2 (2.1 s, interior point in a child)."""
    total = sum(g.size for g in lay.groups)
    if (threads is not None and threads < 2) or cores() < 2 or total <= START_MAX_PARTITIONS or not lay.topics:
        return None
    return StartWhile(instance, lay, threads, deadline)


def start_beside(instance: ConsumersInstance, lay: Layout, threads: int | None,
                 deadline: float | None) -> StartBeside | None:
    """The tree's start made in a thread while the caller runs the dec-min stages, or ``None`` where that
    does not pay or is not allowed: one core only, ``threads=1`` (the caller's budget, as for the tree's
    leaves two at a time), or more than :data:`START_MAX_PARTITIONS` partitions. This thread's HiGHS
    pool is made here first (at ``threads``, when given), before the other thread starts (which makes its
    own at its first run: HiGHS keeps one per calling thread)."""
    total = sum(g.size for g in lay.groups)
    if (threads is not None and threads < 2) or cores() < 2 or total > START_MAX_PARTITIONS or not lay.topics:
        return None
    size_thread_pool(threads)
    return StartBeside(instance, lay, threads, deadline)
