"""The hot topic: the two-level bound that counts the partitions' flow through one overloaded topic.

Notation as in :mod:`~kipopt.formulations.consumers.level_certificate` (``q``, ``r``, ``k_m``, ``k_m(T)``,
rows). :mod:`~kipopt.formulations.consumers.level_coupling` bounds what the two-level vectors save
against every member at ``q`` by counting alone; where one topic ``h`` has more partitions than its
subscribers can take without giving up their own, every member at ``q`` already revokes more, and that
bound falls far below the answers (on four of the paper grid's five open groups, 231 to 1,197 below). Give
every other topic an unlimited supply and keep ``h`` exact. A member holding ``x`` partitions of topics
``A`` (with ``k⁰ = k_m(h)`` and ``k' = k_m(A \\ h)``) keeps at most ``min(k_m(A), x)``, less what it takes of
``h`` beyond its room::

    cap_m(x, A) = min(x, max(k⁰, x - k'))   when h ∈ A, else 0

(below ``cap`` a partition of ``h`` displaces none it owns). Partitions of ``h`` beyond ``Σ_m cap_m`` each
cost one, so with ``E = P_h - Σ_m cap_m(q, S_m)`` (the overload, every member at ``q``) and the base
``R = O - Σ_m min(k_m, q) + E``, any valid assignment revokes at least ``R - saved`` with::

    saved = Σ_m [min(k_m(A_m), x_m) - min(k_m, q)] + min(E, Σ_m Δcap_m)
          ≤ Σ_m [min(k_m(A_m), x_m) - min(k_m, q) + θ Δcap_m] + (1 - θ) E     for every θ in [0, 1]

(``min(a, b) ≤ θ a + (1 - θ) b``). On a two-level vector (``H`` the topics at ``q``) a member with a topic
in ``H`` holds ``q`` (``A = S_m``: nothing changes) or ``q + 1`` (``A = S_m ∩ H``); one with none holds
``q`` or ``q - 1`` (``A = S_m``); ``k`` members go down, ``k + r`` up. Per ``θ`` the best choice takes the
best ``k + r`` up values and the best ``k`` down values. A member's up value is nondecreasing in ``H``
(in ``k_m(A)``, the count gains what the room loses, ``θ ≤ 1``), so the bound of ``H = hi`` with the
members whose topics all lie outside ``lo`` going down holds for every set between ``lo`` and ``hi``.

:func:`hot_search` searches the sets depth first for one saving more than a target (``θ`` on a grid; saved
is whole, so the bound is floored). At a node it puts into ``H`` every topic no member that may still go
down subscribes to (``H`` with it saves no less: a member's count gains at least what its room loses);
takes out every topic subscribed by more members than may be spared, the fewest that must go down for
the target to be beaten being known from each member's largest up value (one per member, ``Δcap``
counted from ``lo``); settles a node of at most :data:`FEW_TOPICS` undecided topics by bounding each set
that spares enough members; and otherwise decides every topic one of whose moves bounds at most the
target, then branches on ``h`` first.

Measured on the paper grid's 100,000 x 1,000 x 50 groups (``benchmarks/bench_open_groups.py --hot``): four
of the five have an overloaded topic, the largest (overload 240 to 1,244; every least load at ``q`` then
revokes 10,377 to 12,596, where counting alone says 10,137 to 11,352). The relaxation is tight where it was
checked against the leaf LP: on 32 random sets (``h`` and 2 to 9 of the 20 largest topics, eight per group)
the base less the bound is the leaf LP's value on every one, and on seed 0 (``h`` = topic 0) the sets
``{0}``, ``{0, 2, 4, 6, 8, 10}`` and that with 46 bound 53, 123 and 125 (leaf LPs 12,543, 12,473, 12,471;
``exact.balanced`` answers 12,473 in the grid's 60 s, and the last set, which an early version of this
search met among its sets above 123, holds 2 fewer). The bound at the root is 449 to 476 and the search does
not close in 600 s (3,000 to 8,400 nodes; on four groups of 10,000 x 100 x 20 of the same draw it proves its
maximum in 10 to 54 s); from the target 125 it closes on seed 0 in 2,109 s (40,191 nodes): no two-level
vector of that group revokes fewer than 12,596 - 125 = 12,471, which the set above holds. Elsewhere the sets
that spare enough members to go down are many, and a node bound that treats each member's up value alone
does not see that the topics its owners need are the ones those members subscribe to. A Lagrangian on the
number of pairs, solved as one minimum cut per multiplier, is weaker still (480 on seed 0: it adds ups and
downs where the saving is the lesser of the two). Charging each owner, for ``k`` members down, the ``k``-th
smallest overlap of one of them with its partitions (each takes its topics out of ``H``) lowers seed 0's
root from 476 to 390 and, with ``h`` in ``H``, from 343 to 315, at 30 times the cost of a bound: not kept.

Not a bound over every level vector: the certificate's stages over the other vectors count only.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from kipopt.formulations.consumers.level_bounds import Tree
from kipopt.formulations.consumers.level_certificate import Rows, rows

THETAS = np.linspace(0.0, 1.0, 51)
"""The multipliers a node's bound is the least of (every ``θ`` in [0, 1] gives a valid bound)."""

FEW_TOPICS = 12
FEW_SETS = 4096
"""A node with at most ``FEW_TOPICS`` undecided topics whose sets ``H`` able to leave enough members to go
down number at most ``FEW_SETS`` is settled by bounding each of them."""

PROBE_THETAS = 3
"""A probe (one topic moved into or out of ``H``, bounded without crowding) uses only the node's best
multipliers: any multiplier gives a valid bound, and a node makes two probes per undecided topic."""


@dataclass(frozen=True)
class Hot:
    """What the bound reads: the rows, the hot topic ``h``, its overload ``E`` and, per row, its room at
    ``q`` and what going down changes (count and room)."""

    rows: Rows
    hot: int
    overload: int
    cap_q: np.ndarray
    kept_q: np.ndarray       # per row, min(k_m, q)
    down_count: np.ndarray
    down_cap: np.ndarray
    spread: np.ndarray = field(repr=False)   # row index per member (rows of ``weight`` members repeated)

    def up(self, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per row, the count change and ``Δcap`` at ``q + 1`` holding only topics of ``high``."""
        r, q, h = self.rows, self.rows.q, self.hot
        other = r.subs & high[None, :]
        has_hot = other[:, h].copy()
        other[:, h] = False
        k_other = (r.keep * other).sum(axis=1)
        k_hot = r.keep[:, h]
        count = np.minimum(k_other + np.where(has_hot, k_hot, 0), q + 1) - self.kept_q
        cap = np.where(has_hot, np.minimum(q + 1, np.maximum(k_hot, q + 1 - k_other)), 0)
        return count, cap - self.cap_q

    def downs_needed(self, lo: np.ndarray, hi: np.ndarray, target: int) -> float:
        """The fewest members that must go down for a set between ``lo`` and ``hi`` to save more than
        ``target``: saved is at most ``Σ_U (count + Δcap^+)`` over the members up (a member down adds nothing,
        ``min(E, ·)`` no more than its argument), each term at most its count at ``hi`` plus its room gained
        at ``lo`` (the room shrinks as ``H`` grows); ``inf`` when no set can."""
        r = self.rows
        count, _ = self.up(hi)
        least = lo.copy()
        least[self.hot] = hi[self.hot]
        _, cap = self.up(least)
        best = np.maximum(count + np.maximum(cap, 0), 0)[self.spread]
        best = best[(r.subs & hi[None, :]).any(axis=1)[self.spread]]
        reach = np.cumsum(-np.sort(-best))
        ups = int(np.searchsorted(reach, target, side="right")) + 1
        return math.inf if ups > len(best) else ups - r.extra

    def bound(self, lo: np.ndarray, hi: np.ndarray, thetas: np.ndarray = THETAS,
              crowding: bool = True) -> tuple[int, np.ndarray]:
        """The most any two-level set ``H`` with ``lo ⊆ H ⊆ hi`` saves (floored), and the multipliers
        ordered from the best.

        With ``crowding``, for ``k`` members down a topic subscribed by more than ``W - k`` of the ``W``
        that may go down (those with no topic in ``lo``) lies outside ``H``: the up values of ``k`` pairs are
        taken at ``hi`` less those topics (one more ``up`` per distinct threshold; without, all at ``hi``)."""
        r, spread = self.rows, self.spread
        may_down = ~(r.subs & lo[None, :]).any(axis=1)
        down = (self.down_count + thetas[:, None] * self.down_cap)[:, may_down]
        down = -np.sort(-np.repeat(down, r.weight[may_down].astype(np.int64), axis=1), axis=1)
        cum_down = np.hstack([np.zeros((len(thetas), 1)), np.cumsum(down, axis=1)])
        free = np.flatnonzero(hi & ~lo)
        held = r.weight[may_down] @ r.subs[np.ix_(may_down, free)]
        out_from = (down.shape[1] - held + 1).astype(np.int64)    # k from which the topic lies outside H
        if not crowding:
            out_from[:] = down.shape[1] + 1
        starts = np.unique(np.r_[0, out_from[(out_from > 0) & (out_from <= down.shape[1])]])
        best = np.full(len(thetas), -np.inf)
        for i, start in enumerate(starts):
            end = starts[i + 1] - 1 if i + 1 < len(starts) else down.shape[1]
            high = hi.copy()
            high[free[out_from <= start]] = False
            count, cap = self.up(high)
            can_up = (r.subs & high[None, :]).any(axis=1)[spread]
            up = -np.sort(-(count[spread] + thetas[:, None] * cap[spread])[:, can_up], axis=1)
            end = min(end, up.shape[1] - r.extra)
            if end < start:
                continue
            cum_up = np.hstack([np.zeros((len(thetas), 1)), np.cumsum(up, axis=1)])
            ks = np.arange(start, end + 1)
            best = np.maximum(best, (cum_up[:, ks + r.extra] + cum_down[:, ks]).max(axis=1))
        value = best + (1.0 - thetas) * self.overload
        if not np.isfinite(value).any():
            return -1, np.argsort(value)
        return math.floor(float(value.min()) + 1e-9), np.argsort(value)


def hot_rows(tr: Tree, topic: int | None = None) -> Hot | None:
    """The group's :class:`Hot`, on ``topic`` or else the topic of greatest overload; ``None`` when no topic
    is overloaded (``E ≤ 0``: then the count coupling loses nothing) or the rows do not apply."""
    r = rows(tr)
    if r is None:
        return None
    q, keep = r.q, r.keep
    k = keep.sum(axis=1)

    def caps(x: int) -> np.ndarray:    # per (row, topic): room for the topic at x holding every topic
        room = np.minimum(x, np.maximum(keep, x - (k[:, None] - keep)))
        return np.where(r.subs, room, 0)

    at_q = caps(q)
    overload = r.sizes - r.weight @ at_q
    hot = int(np.argmax(overload)) if topic is None else topic
    if overload[hot] <= 0:
        return None
    return Hot(r, hot, int(overload[hot]), at_q[:, hot], np.minimum(k, q), -(k >= q).astype(np.float64),
               caps(q - 1)[:, hot] - at_q[:, hot], np.repeat(np.arange(len(r.weight)), r.weight.astype(np.int64)))


@dataclass
class HotSearch:
    """What :func:`hot_search` found: ``proven`` when no two-level set saves more than ``target``;
    ``above``: the complete sets whose bound stays above it (the relaxation's slack, or better answers)."""

    target: int
    proven: bool
    closed: bool
    nodes: int = 0
    above: list[tuple[int, np.ndarray]] = field(default_factory=list)
    seconds: float = 0.0


def hot_search(hot: Hot, target: int, until: float, score=None) -> HotSearch:
    """Depth first over the topic sets ``H`` until ``until`` (a ``time.perf_counter()`` instant): prove that
    none saves more than ``target``. ``score(H)``, when given, is asked for the saving of a complete set
    whose bound exceeds the target (an answer's, e.g. its leaf LP's); a larger one raises the target.

    A node first applies the rules of the module docstring (idle topics into ``H``, crowded ones out, a few
    sets bounded one by one), then decides every undecided topic one of whose moves leaves the bound at
    most the target (the other move then), closes when a topic is forced both ways, and else branches on
    ``h`` first and then on the topic whose worse move bounds lowest, into ``H`` first. ``score`` is called
    with the complete set (0/1 per topic) and returns a saving against the module's base, or ``None``."""
    started = time.perf_counter()
    T = hot.rows.subs.shape[1]
    found = HotSearch(target, False, False)
    stack = [(np.zeros(T, dtype=bool), np.ones(T, dtype=bool))]
    while stack:
        if time.perf_counter() >= until:
            break
        lo, hi = stack.pop()
        found.nodes += 1
        node = _settle(hot, lo, hi, found, score)
        if node is not None:
            lo, hi, t = node
            into, out = lo.copy(), hi.copy()
            into[t], out[t] = True, False
            stack += [(lo, out), (into, hi)]
    else:
        found.closed = True
    found.proven = found.closed and not found.above
    found.seconds = time.perf_counter() - started
    return found


def _settle(hot: Hot, lo: np.ndarray, hi: np.ndarray, found: HotSearch, score):
    """The node with its forced topics decided and the topic to branch on; ``None`` when it is settled."""
    subs, weight = hot.rows.subs, hot.rows.weight
    while True:
        value, order = hot.bound(lo, hi)
        if value <= found.target:
            return None
        free = np.flatnonzero(hi & ~lo)
        if not len(free):
            _leaf(hot, lo, value, found, score)
            return None
        down = ~(subs & lo[None, :]).any(axis=1)
        idle = ~subs[np.ix_(down, free)].any(axis=0)
        if idle.any():    # no member that may go down subscribes to it: H with it saves no less
            lo = lo.copy()
            lo[free[idle]] = True
            continue
        slack = weight[down].sum() - hot.downs_needed(lo, hi, found.target)
        if slack < 0:
            return None
        crowded = weight[down] @ subs[np.ix_(down, free)] > slack
        if crowded.any():  # in H, it would leave too few members to go down
            hi = hi.copy()
            hi[free[crowded]] = False
            continue
        sets = _few_sets(subs[np.ix_(down, free)], weight[down], slack) if len(free) <= FEW_TOPICS else None
        if sets is not None:
            for chosen in sets:
                high = lo.copy()
                high[free[chosen]] = True
                value = hot.bound(high, high)[0]
                if value > found.target:
                    _leaf(hot, high, value, found, score)
            return None
        thetas = THETAS[order[:PROBE_THETAS]]
        into = np.array([hot.bound(_with(lo, t, True), hi, thetas, crowding=False)[0] for t in free])
        out = np.array([hot.bound(lo, _with(hi, t, False), thetas, crowding=False)[0] for t in free])
        must_out, must_in = into <= found.target, out <= found.target
        if (must_in & must_out).any():
            return None
        if must_in.any() or must_out.any():
            lo, hi = lo.copy(), hi.copy()
            lo[free[must_in]], hi[free[must_out]] = True, False
            continue
        t = hot.hot if hot.hot in free else int(free[np.argmin(np.maximum(into, out))])
        return lo, hi, t


def _leaf(hot: Hot, high: np.ndarray, value: int, found: HotSearch, score) -> None:
    """A complete set whose bound exceeds the target: scored (a larger saving raises the target), else kept."""
    saved = None if score is None else score(high.copy())
    if saved is not None and saved > found.target:
        found.target = saved
        found.above = [(v, s) for v, s in found.above if v > saved]
    if value > found.target:
        found.above.append((value, high.copy()))


def _few_sets(member_of: np.ndarray, weight: np.ndarray, slack: float) -> list[np.ndarray] | None:
    """Every set of topics (columns of ``member_of``, members that may go down by topic) whose subscribers
    weigh at most ``slack`` together, or ``None`` past :data:`FEW_SETS` of them."""
    T = member_of.shape[1]
    sets: list[np.ndarray] = []
    stack = [(0, np.zeros(T, dtype=bool), np.zeros(len(weight), dtype=bool))]
    while stack:
        start, chosen, covered = stack.pop()
        sets.append(chosen)
        if len(sets) > FEW_SETS:
            return None
        for t in range(start, T):
            more = covered | member_of[:, t]
            if weight[more].sum() <= slack:
                now = chosen.copy()
                now[t] = True
                stack.append((t + 1, now, more))
    return sets


def _with(mask: np.ndarray, t: int, value: bool) -> np.ndarray:
    out = mask.copy()
    out[t] = value
    return out
