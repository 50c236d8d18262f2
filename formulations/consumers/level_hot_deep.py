"""The hot topic's bound at level vectors with topics below ``q - 1`` (and above ``q``): past the two-level box.

Notation as in :mod:`~kipopt.formulations.consumers.level_hot`. Per member the relaxation's term is
``f(x, A) = min(x, k(A)) + θ cap(x, A)`` (``A`` the topics it may hold: those at least ``x - 1``), and
``saved ≤ (1 - θ) E + Σ_m [f(x_m, A_m) - f(q, S_m)]`` at every valid assignment whatever its levels (checked by
enumeration in ``tests/formulations/consumers/test_level_hot.py``). Take a level vector with no topic above
``q``, ``H`` its topics at ``q`` and ``C⁻`` those at ``q - 2`` or below. Then

* a member with a topic in ``H`` (``N``) holds ``q`` or ``q + 1``: up, ``a_m = f(q + 1, S ∩ H) - f(q, S)``;
  at ``q`` it cannot hold ``C⁻``, and pays ``c_m = f(q, S) - f(q, S \\ C⁻)``;
* a member with none (``Q``) holds at most ``q``: its first unit down is worth at most
  ``w_m = f(q - 1, S) - f(q, S)``; it goes further down only if every topic it subscribes to lies in
  ``C⁻``, each further unit costing its own ``f`` step, and no deeper than the topics' supply lets:
  the holders of a topic of ``C⁻`` are members of ``Q`` at most one above its level, so a topic of ``P_t``
  partitions with ``n_t`` such subscribers sits at ``⌈P_t / n_t⌉ - 1`` or more;
* the units balance: the members up are ``r`` plus the units down.

So ``saved ≤ (1 - θ) E - Σ_N c_m + max [top_{r + k + X} (a + c over N) + top_k (w over Q) - cost(X)]``
over ``k`` first units and ``X`` further ones (a member up escapes its charge). :func:`deep_bound` is its
least over the multipliers at one ``(H, C⁻)``; with ``C⁻`` empty it is the two-level bound of the set.

Measured on the paper grid's four overloaded 50-topic groups (``benchmarks/bench_open_groups.py
--hot-deep 30``): at the set of the local search's answer (its bound is the target the two-level search
proves: 125, 91, 99, 101) every single topic below ``q - 1`` brings the bound down to at most 60.4, 16.8,
10.5 and 28.0 (the charges of some 500 subscribers at ``q`` outweigh the deep units); on 30 random sets
each, one or two of the twelve smallest topics below ``q - 1`` bound at least 37 below the set's own
two-level bound (the least margins per group 43, 37, 42 and 44), and never above the target. Checked against each such level vector's exact optimum (its
leaf MILP) on small groups of the same cell (``tests/formulations/consumers/test_level_hot_deep.py``: 150
vectors, every one held; without the charges' refund to members up, or without the deeper units, it fails).
A search over the sets with this bound, and one for topics above ``q`` (every subscriber up), would
complete the certificate over every level vector for these groups; neither is built.

:func:`every_vector_bound` takes one top set ``H`` (the topics at ``q`` or above) and bounds every level
vector with it at once, topics above ``q`` and below ``q - 1`` alike: a Lagrangian in which each member
moves alone and the count's units are priced by ``ν``, the topics below ``q - 1`` chosen by one minimum cut
(:func:`vector_lagrangian`). On the four overloaded groups, at the local search's set, it equals the
two-level bound at ``θ = ν = 1`` (125, 91, 99, 101; 0.07 to 0.13 s): no assignment whose topics at 100 or
above are that set revokes fewer than the answer ``exact.balanced`` gives in 60 s (``benchmarks/bench_open_groups.py
--every-vector 30``). Elsewhere it is weaker than the two-level pairing: on 30 random sets per group it lies
above the set's two-level bound on 12 to 29 (by up to 218 to 634), as ``ν ≥ θ`` (which keeps units above
``q + 1`` finite) prices the pairs' units badly. A node version, each member's moves taken over
``lo ⊆ H ⊆ hi``, was 150 to 1,900 at the nodes where the two-level search of seed 0 prunes (target 125; not
kept): without the slots' coupling of :mod:`~kipopt.formulations.consumers.level_slots` it cannot extend
that search to every vector. Nor can the two-level bound plus what ``C⁻`` adds to the Lagrangian at
``θ = ν = 1`` (where ``ν = 1`` prices the pairs exactly while enough members holding ``h`` can go up): at
those nodes the two-level bound at ``θ = 1`` alone is already 163 to 476 (the search prunes them at ``θ``
below 1, where the overload counts), and ``C⁻`` adds 0 to 26,419 more.
"""

from __future__ import annotations

import numpy as np

from kipopt._scipy import csgraph, sparse
from kipopt.formulations.consumers.level_hot import COARSE, Hot


def deep_bound(hot: Hot, high: np.ndarray, low2: np.ndarray, thetas: np.ndarray = COARSE) -> float:
    """The least over ``thetas`` of the module's bound on what any valid assignment whose levels put exactly
    ``high`` at ``q``, ``low2`` at ``q - 2`` or below and nothing above ``q`` saves (0/1 per topic each)."""
    members = _Members(hot)
    return min(members.bound(high.astype(bool), low2.astype(bool), float(theta)) for theta in thetas)


def term(keep: np.ndarray, held: np.ndarray, x, h: int, theta: float) -> np.ndarray:
    """``min(x, k(A)) + θ cap(x, A)`` per row of ``keep`` (keepable partitions per topic) holding the topics
    ``held`` (bool, the same shape) at ``x`` partitions (a scalar, or an array broadcast against the rows)."""
    own = (keep * held).sum(axis=1)
    c = keep[:, h]
    cap = np.where(held[:, h], np.minimum(x, np.maximum(c, x - (own - c))), 0)
    return np.minimum(x, own) + theta * cap


class _Members:
    """The rows spread to members (a class row's members alike)."""

    def __init__(self, hot: Hot) -> None:
        r = hot.rows
        self.hot, self.q, self.h, self.extra = hot, r.q, hot.hot, r.extra
        self.keep, self.subs, self.sizes = r.keep[hot.spread], r.subs[hot.spread], r.sizes

    def f(self, x, held: np.ndarray, theta: float) -> np.ndarray:
        return term(self.keep, held, x, self.h, theta)

    def bound(self, high: np.ndarray, low2: np.ndarray, theta: float) -> float:
        q, subs = self.q, self.subs
        in_q = ~(subs & high[None, :]).any(axis=1)
        at_q = self.f(q, subs, theta)
        up = self.f(q + 1, subs & high[None, :], theta) - at_q
        charge = at_q - self.f(q, subs & ~low2[None, :], theta)
        down = self.f(q - 1, subs, theta) - at_q
        ups = np.cumsum(np.r_[0.0, -np.sort(-(up + charge)[~in_q])])
        downs = np.cumsum(np.r_[0.0, -np.sort(-down[in_q])])
        # further units beyond the members able to go up change nothing: cut there
        costs = np.cumsum(np.r_[0.0, self._further(in_q, low2, theta)])[:max(1, len(ups) - self.extra)]
        n_up = self.extra + np.arange(len(downs))[:, None] + np.arange(len(costs))[None, :]
        total = np.where(n_up < len(ups), ups[np.minimum(n_up, len(ups) - 1)] + downs[:, None] - costs[None, :],
                         -np.inf)
        return float((1 - theta) * self.hot.overload - charge[~in_q].sum() + total.max())

    def _further(self, in_q: np.ndarray, low2: np.ndarray, theta: float) -> np.ndarray:
        """Each further unit down (beyond a member's first) the members of ``Q`` with every topic in ``C⁻`` may
        give, by its cost (the member's own step of ``f``), cheapest first; as deep as the supply lets."""
        subs = self.subs
        deep = in_q & ~(subs & ~low2[None, :]).any(axis=1)
        steps = _steps_below(self.keep, subs, (subs & in_q[:, None]).sum(axis=0), self.sizes, deep, self.q, self.h,
                             theta)
        return np.sort(np.concatenate(list(steps.values()))) if steps else np.zeros(0)


def _steps_below(keep: np.ndarray, subs: np.ndarray, holders: np.ndarray, sizes: np.ndarray, deep: np.ndarray,
                 q: int, h: int, theta: float) -> dict[int, np.ndarray]:
    """Per row of ``deep`` (members of ``Q`` whose topics all lie below ``q - 1``), the step of ``f`` each unit it
    may give below ``q - 1`` costs, from ``q - 1`` down to the deepest its topics' supply lets: a topic there is
    held only by members of ``Q`` (``holders`` per topic) at most one above its level. A deep row holds its own
    topics, so its floor is finite; rows whose supply lets them no lower are left out."""
    least = np.where(holders > 0, np.ceil(sizes / np.maximum(holders, 1)) - 1, np.inf)
    floor = np.where(subs, least[None, :], -np.inf).max(axis=1)
    steps = {}
    for m in np.flatnonzero(deep):
        lowest = int(max(floor[m], 0))
        if lowest < q - 1:
            steps[int(m)] = np.diff(term(keep[m:m + 1], subs[m:m + 1], np.arange(lowest, q), h, theta))
    return steps


STEP = 0.05
""":func:`every_vector_bound` tries multipliers on this grid: every term is then a multiple of ``STEP`` and the
minimum cut runs on integers (``1 / STEP`` per unit) exactly."""


def every_vector_bound(hot: Hot, high: np.ndarray, start: tuple[float, float] = (1.0, 1.0),
                       cutoff: float = -np.inf) -> tuple[int, float, float]:
    """The most any valid assignment saves whose topics at level ``q`` or above are exactly ``high`` (below
    ``q - 1``, any of the others; above ``q``, any of ``high``), floored, and the multipliers ``(θ, ν)`` it was
    found at: the least of :func:`vector_lagrangian` by a pattern search over the grid :data:`STEP` from
    ``start`` (``ν ≥ θ``), which stops once at most ``cutoff``. Every ``(θ, ν)`` gives a valid bound."""
    memo: dict[tuple[int, int], float] = {}

    def value(i: int, j: int) -> float:
        if (i, j) not in memo:
            theta, nu = i * STEP, j * STEP
            memo[i, j] = vector_lagrangian(hot, high, theta, nu) if 0 <= i <= round(1 / STEP) and j >= i else np.inf
        return memo[i, j]

    at = (round(start[0] / STEP), round(start[1] / STEP))
    best, step = value(*at), 4
    while step and best > cutoff:
        moves = [(at[0] + a * step, at[1] + b * step) for a, b in ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, -1))]
        found = min(moves, key=lambda m: value(*m))
        if value(*found) < best - 1e-9:
            best, at = value(*found), found
        else:
            step //= 2
    return int(np.floor(best + 1e-9)), at[0] * STEP, at[1] * STEP


def vector_lagrangian(hot: Hot, high: np.ndarray, theta: float, nu: float) -> float:
    """At multipliers ``θ`` (the overload's, as in :mod:`~kipopt.formulations.consumers.level_hot`) and ``ν``
    (a unit of count, ``ν ≥ θ``; multiples of :data:`STEP`), a bound on what any valid assignment whose
    topics at ``q`` or above are ``high`` saves against every member at ``q``.

    Each member chooses alone: up by ``j`` (a topic of ``high``; it holds only those:
    ``f(q + j, S ∩ high) - f(q, S) - jν``), down one (none of ``high``: ``f(q - 1, S) - f(q, S) + ν``), further
    down (all its topics in ``C⁻``, the topics below ``q - 1``, each unit ``ν`` less its own step of ``f``, no
    deeper than the topics' supply lets, as in :func:`deep_bound`), or stay at ``q`` and lose its keeps of
    ``C⁻`` (``c_m(C⁻)``, superadditive over the topics, so at least the sum of each topic's charge). With
    ``b_m`` its best move, a member pays ``min(c_m(C⁻), -b_m)`` where ``b_m < 0``; the deep units need every
    topic of their member in ``C⁻``. So ``saved ≤ (1 - θ) E + ν r + Σ b⁺ + Σ γ - min_C⁻ [Σ_m min(c_m(C⁻),
    κ_m) + Σ γ_m [S_m ⊄ C⁻]]``: one minimum cut (a member's charges from its topics in ``C⁻``, capped at
    ``κ_m``; a deep member's units lost unless all its topics are in). ``ν ≥ θ``: past its keepable
    partitions a member holding ``h`` gains ``θ`` a partition up, never more than ``ν``."""
    r, q, h = hot.rows, hot.rows.q, hot.hot
    subs, keep, w = r.subs, r.keep, r.weight
    held = subs & high[None, :]
    can_up, pot = held.any(axis=1), ~held.any(axis=1)
    at_q = term(keep, subs, q, h, theta)
    reach = int(max(1, ((keep * held).sum(axis=1) - q + 1).max()))
    up = np.max([term(keep, held, q + j, h, theta) - at_q - j * nu for j in range(1, reach + 1)], axis=0)
    best = np.maximum(np.where(can_up, up, -np.inf), np.where(pot, term(keep, subs, q - 1, h, theta) - at_q + nu, -np.inf))
    holders = w[pot] @ subs[pot]
    lows = ~high & (r.sizes <= (q - 1) * holders)      # topics the members of Q can hold below q - 1
    gamma = _deep_units(hot, pot, lows, holders, theta, nu) * w
    charge = np.zeros(subs.shape)
    for t in np.flatnonzero(lows):
        without = subs.copy()
        without[:, t] = False
        charge[:, t] = np.where(subs[:, t], at_q - term(keep, without, q, h, theta), 0.0)
    base = (1 - theta) * hot.overload + nu * r.extra + w @ np.maximum(best, 0.0) + gamma.sum()
    # every member of a complete set may go up or down, so each payment is capped
    return float(base - _least_cut(subs, lows, charge * w[:, None], np.maximum(-best, 0.0) * w, gamma))


def _deep_units(hot: Hot, pot: np.ndarray, lows: np.ndarray, holders: np.ndarray, theta: float, nu: float
                ) -> np.ndarray:
    """Per row, what its units below ``q - 1`` gain at ``ν`` a unit (zero unless in ``Q`` with every topic able
    to lie below ``q - 1``): each unit down to the deepest its topics' supply lets, ``ν`` less its step of
    ``f``, where positive."""
    r = hot.rows
    deep = pot & ~(r.subs & ~lows[None, :]).any(axis=1) & r.subs.any(axis=1)
    gain = np.zeros(len(r.weight))
    for m, steps in _steps_below(r.keep, r.subs, holders, r.sizes, deep, r.q, hot.hot, theta).items():
        gain[m] = np.maximum(nu - steps, 0.0).sum()
    return gain


def _least_cut(subs: np.ndarray, lows: np.ndarray, charge: np.ndarray, cap: np.ndarray, gamma: np.ndarray) -> float:
    """``min_C Σ_m min(Σ_{t ∈ C} charge_mt, cap_m) + Σ_m gamma_m [S_m ⊄ C]`` over ``C ⊆ lows``: a minimum cut with
    topics and members as nodes, on integers (the terms are multiples of :data:`STEP`)."""
    topics = np.flatnonzero(lows)
    payers = np.flatnonzero((cap > 0) & (charge[:, topics] > 0).any(axis=1))
    deep = np.flatnonzero(gamma > 0)
    if not len(topics):
        return float(gamma.sum())       # no topic can lie below q - 1: every deep unit is lost
    if not len(payers) and not len(deep):
        return 0.0
    T, P, D = len(topics), len(payers), len(deep)
    source, sink = T + P + D, T + P + D + 1
    units = 1 / STEP
    pr, pt = np.nonzero(charge[payers][:, topics] > 0)
    dr, dt = np.nonzero(subs[deep][:, topics])
    finite = np.r_[cap[payers], charge[payers[pr], topics[pt]], gamma[deep]]
    finite = np.rint(finite * units).astype(np.int64)
    infinite = int(finite.sum()) + 1
    tail = np.r_[T + np.arange(P), pt, np.full(D, source), T + P + dr]
    head = np.r_[np.full(P, sink), T + pr, T + P + np.arange(D), dt]
    caps = np.r_[finite, np.full(len(dr), infinite)]
    if infinite >= 2 ** 31:
        raise OverflowError("the cut's capacities pass 32 bits")
    graph = sparse().csr_matrix((caps.astype(np.int32), (tail, head)), shape=(sink + 1, sink + 1))
    return float(csgraph().maximum_flow(graph, source, sink).flow_value) / units
