"""The hot topic's bound at level vectors with topics below ``q - 1``: the first step past the two-level box.

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
"""

from __future__ import annotations

import numpy as np

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
        q, subs = self.q, self.subs
        deep = in_q & ~(subs & ~low2[None, :]).any(axis=1)
        holders = (subs & in_q[:, None]).sum(axis=0)
        least = np.where(holders > 0, np.ceil(self.sizes / np.maximum(holders, 1)) - 1, np.inf)
        floor = np.where(subs, least[None, :], -np.inf).max(axis=1)
        steps = []
        for m in np.flatnonzero(deep):     # a deep member is a holder of its own topics: the floor is finite
            lowest = int(max(floor[m], 0))
            if lowest < q - 1:       # x from the deepest the supply lets to q - 1: each step's loss
                xs = np.arange(lowest, q)
                steps.append(np.diff(term(self.keep[m:m + 1], subs[m:m + 1], xs, self.h, theta)))
        return np.sort(np.concatenate(steps)) if steps else np.zeros(0)
