"""A certificate over every level vector: the most revocations the count coupling can save.

Notation as in :mod:`~kipopt.formulations.consumers.level_coupling` (``q``, ``r``, ``G(H)``, ``S(H)``);
``k_m`` is member m's keepable partitions (``k_m(T)`` of topics in ``T``), ``e_m = (k_m - q)^+`` its
excess and ``f_m = (q - k_m)^+`` its room. Against every member at ``q`` (flows aside), the revocations
of any valid assignment at the least cross-rack count are at least ``O - Σ_m min(k_m, q) - saved``
(``O`` the owned partitions). :mod:`~kipopt.formulations.consumers.level_coupling` bounds ``saved`` over
the two-level vectors only. This module bounds it over every vector. That settles a group whose answer
meets the bound, which the level tree's LPs cannot do: they let each topic be half in ``H``.

Theorem. Take any valid assignment with least loads ``λ``, and let ``H = {λ ≥ q}``,
``H+ = {λ ≥ q + 1}`` and ``C- = {λ ≤ q - 2}``. Let ``Q`` be the members whose topics all lie outside
``H`` (the only ones that may hold fewer than ``q``). Then::

    saved ≤ min(A, r + S(H) + N - W)      with
    A = G(H) if H+ is empty, else Σ_m (k_m(H) - q)^+
    N = Σ_{m ∈ Q, S_m ⊆ C-} (min(f_m, d_m) - 1)^+ + Σ_{m ∈ Q} κ_m(C-) - Σ_m κ_m(C-),
        κ_m(T) = Σ_{t ∈ T} (k_m(t) - e_m)^+
    W = the subscribers of a topic of H+ with at most q keepable partitions of topics in H

``d_m`` caps a member's drop below ``q``. Below ``q - 2`` every partition of its topics is held by members
of ``Q`` at most one above its level, so ``P_t ≤ n_t (q + 1 - d)`` with ``n_t`` the subscribers of ``t``
in ``Q``. A topic of ``C-`` needs ``P_t ≤ (q - 1) n_t``.

Proof sketch. A member holds ``x_m ∈ {μ_m, μ_m + 1}`` partitions, only of topics with
``λ_t ≥ x_m - 1``, and ``Σ_m (x_m - q) = r``.
* A member above ``q`` holds only topics of ``H``, so it gains at most ``(k_m(H) - q)^+`` over
  ``min(k_m, q)``, and at most one partition unless it holds only topics of ``H+``.
* A member at ``q`` holds no topic of ``C-`` and loses ``(k_m(C-) - e_m)^+ ≥ κ_m(C-)``.
* A member ``d`` below ``q`` is in ``Q`` and loses ``(d - f_m)^+``. It is below ``q - 1`` only if
  all its topics lie in ``C-``.
* Counting units, ``saved ≤ r + Σ_{down} min(d, f) - W - Σ_{not down} κ_m(C-)``, and the first
  unit of each member down is counted by ``S(H)``. Every subscriber of a topic of ``H+`` is above ``q``.

So ``saved ≤ s`` for every assignment once three searches over the topic sides ``H`` close, with
``k = s + 1``:

1. the two-level max-min of :func:`~kipopt.formulations.consumers.level_coupling.best_split` is at most
   ``s``. Then ``G(H) ≥ k`` forces ``r + S(H) ≤ s``, and when ``H+`` is empty and ``G(H) ≤ s``,
   ``A ≤ s``.
2. no ``H`` with ``G(H) ≥ k`` has ``r + S(H) + N ≥ k`` (``H+`` empty).
3. no ``H`` has ``A ≥ k`` and ``r + S(H) + N - W ≥ k`` (``H+`` not empty).

``N`` of a node is bounded over ``Q`` and ``C-`` as large as the node allows, by a minimum cut: a
closure whose members need all their topics. The members may be taken one by one (their drops and the
topics' holders are not matched). Every step is checked by enumeration on tiny groups
(``tests/formulations/consumers/test_level_certificate.py``).

On the paper grid's 50-topic group whose answer is 10,094 (``benchmarks/bench_open_groups.py --seeds 2
--certify 1800``) the three searches close with ``s = 64`` in 814 to 850 s on one core (two runs; stage 1
about 100 s of it): 5.8 million nodes and 485,000 minimum cuts. The group owns 10,158 partitions beyond 100, so 10,094
is optimal, which ``exact.balanced`` answered in 60 s but could not prove. On the other four groups
``O - Σ min(k, q)`` less the max-min is 231 to 1,197 below the answer: there the partitions' flow costs
what the coupling does not count. It is not part of ``exact.balanced``, whose grid limit is 60 s.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from kipopt._scipy import csgraph, sparse
from kipopt.formulations.consumers.level_bounds import Tree
from kipopt.formulations.consumers.level_coupling import best_split, coupling, owned_by_topic, stopped_gainers


CUT_MEMBERS = 1
"""Stage 2 bounds ``N`` only at nodes with at most this many times ``k`` members whose topics may all lie
outside ``H``: above, ``N`` is rarely below one, and each bound may cost a minimum cut."""


@dataclass(frozen=True)
class Rows:
    """The members as rows: one per owner of keepable partitions, one per class for its members owning none
    (``weight`` members alike)."""

    q: int
    extra: int               # r
    subs: np.ndarray         # (rows, topics) bool
    keep: np.ndarray         # (rows, topics) keepable partitions
    weight: np.ndarray
    sizes: np.ndarray        # partitions per topic


def rows(tr: Tree) -> Rows | None:
    """The tree's group as :class:`Rows`; ``None`` when a member subscribes to nothing (it holds nothing,
    and the count around ``q`` that the theorem reads leaves it out)."""
    sp, pr = tr.space, tr.pairs
    members = len(sp.member_class)
    if pr.members.sum() != members:
        return None
    keep, others = owned_by_topic(tr)
    classes = pr.classes[others > 0]
    subs = np.vstack([sp.member_of[pr.classes[tr.owner_pos]], sp.member_of[classes]]).astype(bool)
    return Rows(tr.q, tr.extra, subs, np.vstack([keep, np.zeros((len(classes), keep.shape[1]))]),
                np.r_[np.ones(len(keep)), others[others > 0]].astype(np.float64),
                np.asarray(sp.sizes, dtype=np.float64))


@dataclass
class Certificate:
    """What :func:`certify` proved: ``proven`` when no valid assignment saves more than ``saving``."""

    saving: int
    proven: bool
    stage: str               # the stage that ended it ("coupling", "no topic above q", "a topic above q", "done")
    nodes: int = 0
    cuts: int = 0
    seconds: float = 0.0


def certify(tr: Tree, saving: int, until: float, max_min: float | None = None) -> Certificate:
    """Try to prove that no valid assignment saves more than ``saving`` (the three searches above), until
    ``until`` (a ``time.perf_counter()`` instant). ``max_min``: the two-level max-min when a closed
    :func:`~kipopt.formulations.consumers.level_coupling.best_split` gave it already (stage 1 is then
    skipped)."""
    started = time.perf_counter()
    r = rows(tr)
    done = Certificate(saving, False, "coupling")
    if r is None:
        return done
    if max_min is None:
        value, _, closed = best_split(coupling(tr), until)
        max_min = value if closed else None
    if max_min is None or max_min > saving:
        return _timed(done, started)
    search = _Sides(r, saving + 1)
    for stage, settle in (("no topic above q", search.settle_level), ("a topic above q", search.settle_above)):
        done.stage = stage
        if not search.run(settle, until):
            done.nodes, done.cuts = search.nodes, search.cuts
            return _timed(done, started)
    done.stage, done.proven, done.nodes, done.cuts = "done", True, search.nodes, search.cuts
    return _timed(done, started)


def _timed(c: Certificate, started: float) -> Certificate:
    c.seconds = time.perf_counter() - started
    return c


class _Sides:
    """Depth-first search over the topic sides (``state``: 0 undecided, 1 in ``H``, 2 out), pruned by the
    theorem's bound at threshold ``k``."""

    def __init__(self, r: Rows, k: int):
        self.r, self.k = r, k
        total = r.keep.sum(axis=1)
        self.room = np.maximum(r.q - total, 0)
        self.excess = np.maximum(total - r.q, 0)
        self.charge = np.maximum(r.keep - self.excess[:, None], 0) * r.weight[:, None]   # κ per row and topic
        self.charged = self.charge.sum(axis=0)
        self.gainers = total >= r.q + 1
        self.gain_keep = r.keep[self.gainers]                            # the owners that may gain, their rows
        self.slack = total[self.gainers] - (r.q + 1)
        self.first = r.weight * np.minimum(1, self.room)                # a member's first unit down
        self.subs = r.subs.astype(np.float64)
        self.nodes = self.cuts = 0

    def run(self, settle, until: float) -> bool:
        stack = [np.zeros(self.r.subs.shape[1], dtype=np.int8)]
        while stack:
            if time.perf_counter() >= until:
                return False
            self.nodes += 1
            node = settle(stack.pop())
            if node is None:
                continue
            if node[1] is None:
                return False      # a complete side set the bound does not exclude
            state, t = node
            out, into = state.copy(), state.copy()
            out[t], into[t] = 2, 1
            stack += [out, into]
        return True

    def settle_level(self, state: np.ndarray):
        """Stage 2: ``None`` when no completion has ``G(H) ≥ k`` and ``r + S(H) + N ≥ k`` (with
        ``r + S(H) < k`` from stage 1); else the state with every topic ``G`` forces into ``H``, and the
        topic to branch on (``None`` at a complete state)."""
        k = self.k
        while True:
            free = np.flatnonzero(state == 0)
            alive, lost = stopped_gainers(self.gain_keep, self.slack, state, free)
            if alive.sum() < k:
                return None
            eligible = self.subs @ (state == 1) == 0
            members = float(self.r.weight[eligible].sum())
            first = min(self.r.extra + float(self.first[eligible].sum()), k - 1)   # stage 1: r + S(H) < k
            if members <= CUT_MEMBERS * k and first + self._drop(eligible) < k:
                return None
            if not len(free):
                return state, None
            must = alive.sum() - lost < k
            if not must.any():
                lost_members = self.r.weight[eligible] @ self.subs[eligible][:, free]
                share = np.minimum(lost / alive.sum(), lost_members / max(members, 1.0))
                return state, int(free[np.argmax(share)])
            state = state.copy()
            state[free[must]] = 1

    def settle_above(self, state: np.ndarray):
        """Stage 3: ``None`` when no completion with a topic of ``H+`` can save ``k``."""
        q, k = self.r.q, self.k
        possible = (state != 2).astype(np.float64)
        if not possible.any():
            return None
        if np.maximum(self.gain_keep @ possible - q, 0).sum() < k:
            return None
        idle = self.r.weight * (self.r.keep @ possible <= q)
        waste = float((idle @ self.subs)[possible > 0].min())
        eligible = self.subs @ (state == 1) == 0
        base = self.r.extra + float(self.first[eligible].sum()) - waste
        if base < k and base + self._drop(eligible) < k:
            return None
        free = np.flatnonzero(state == 0)
        if not len(free):
            return state, None
        lost = self.first[eligible] @ self.subs[eligible][:, free]
        return state, int(free[np.argmax(lost)])

    def _drop(self, eligible: np.ndarray) -> float:
        """An upper bound on ``N`` with ``Q`` the eligible rows: per topic first, then a minimum cut."""
        rows = np.flatnonzero(eligible)
        if not len(rows):
            return 0.0
        subs, w = self.r.subs[rows], self.r.weight[rows]
        holders = w @ subs
        with np.errstate(divide="ignore"):
            deepest = np.where(holders > 0, self.r.q + 1 - np.ceil(self.r.sizes / np.maximum(holders, 1)), -np.inf)
        depth = np.maximum(np.where(subs, deepest, np.inf).min(axis=1), 2)
        gain = w * np.maximum(np.minimum(self.room[rows], depth) - 1, 0)
        cost = self.charged - self.charge[rows].sum(axis=0)
        spread = subs * (gain / subs.sum(axis=1))[:, None] + self.charge[rows]
        if np.maximum(spread.sum(axis=0) - self.charged, 0).sum() < 1:
            return 0.0
        self.cuts += 1
        return _closure(subs, gain, cost, self.r.sizes > (self.r.q - 1) * holders)


def _closure(subs: np.ndarray, gain: np.ndarray, cost: np.ndarray, banned: np.ndarray) -> float:
    """``max Σ gain(rows chosen) - Σ cost(topics chosen)`` where a row needs all its topics and no banned
    topic is chosen: a minimum cut (project selection)."""
    rows = np.flatnonzero((gain > 0) & ~subs[:, banned].any(axis=1))
    if not len(rows):
        return 0.0
    topics = np.flatnonzero(subs[rows].any(axis=0))
    at = np.full(subs.shape[1], -1)
    at[topics] = np.arange(len(rows), len(rows) + len(topics))
    source, sink = len(rows) + len(topics), len(rows) + len(topics) + 1
    profit = np.rint(gain[rows]).astype(np.int64)
    pr, pt = np.nonzero(subs[rows])
    tail = np.r_[np.full(len(rows), source), pr, at[topics]]
    head = np.r_[np.arange(len(rows)), at[pt], np.full(len(topics), sink)]
    caps = np.r_[profit, np.full(len(pr), profit.sum() + 1), np.rint(cost[topics]).astype(np.int64)]
    graph = sparse().csr_matrix((caps.astype(np.int32), (tail, head)), shape=(sink + 1, sink + 1))
    return float(profit.sum() - csgraph().maximum_flow(graph, source, sink).flow_value)
