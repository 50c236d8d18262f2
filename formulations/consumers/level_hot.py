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
target, then branches on ``h`` first. The bound is convex in ``θ`` (a sum of the best ``k`` of functions
linear in ``θ`` is convex, and so is the maximum of such sums over ``k``), so the least over the grid
:data:`THETAS` is found from :data:`COARSE` and the grid points between its best's neighbours (20 of the 51
multipliers; a node already settled by the first pass skips the second); and a node's probes, two per
undecided topic, are bounded in one pass (:meth:`Hot.probes`). Where that bound exceeds the target, a
node takes the lesser of it and the slots' bound (:mod:`~kipopt.formulations.consumers.level_slots`: how
many undecided topics ``H`` can hold and still leave ``k`` members to go down), which couples the two
sides; it cut seed 0's search from 37,077 nodes and 917 s to 2,879 nodes and 102 s (the same hour, one core
each). Only the best ``r`` plus as many up values as there are members that may go down are sorted.

Measured on the paper grid's 100,000 x 1,000 x 50 groups (``benchmarks/bench_open_groups.py --hot``): four
of the five have an overloaded topic, the largest (overload 240 to 1,244; every least load at ``q`` then
revokes 10,377 to 12,596, where counting alone says 10,137 to 11,352). The relaxation is tight where it was
checked against the leaf LP: on 32 random sets (``h`` and 2 to 9 of the 20 largest topics, eight per group)
the base less the bound is the leaf LP's value on every one, and on seed 0 (``h`` = topic 0) the sets
``{0}``, ``{0, 2, 4, 6, 8, 10}`` and that with 46 bound 53, 123 and 125 (leaf LPs 12,543, 12,473, 12,471;
its tree alone answered 12,473 in the grid's 60 s, and the last set, which an early version of this
search met among its sets above 123, holds 2 fewer). The bound at the root is 449 to 476. From the target 125
the search closes on seed 0 in 415 s (37,077 nodes; 2,109 s and 40,191 nodes before the probes were bounded in
one pass, the multipliers found in two and ties in branching broken): no two-level vector of that group
revokes fewer than 12,596 - 125 = 12,471, which the set above holds. From the other groups' 60-s answers it
did not close in 1,500 to 1,800 s (37,500 to 61,100 nodes) but met 10,289 on seed 1 and 11,146 on seed 4,
2 and 3 fewer than those answers (seed 3 stays at 10,720). Elsewhere the sets
that spare enough members to go down are many, and a node bound that treats each member's up value alone
does not see that the topics its owners need are the ones those members subscribe to: the slots' bound
(above) is what sees it. A Lagrangian on the
number of pairs, solved as one minimum cut per multiplier, is weaker still (480 on seed 0: it adds ups and
downs where the saving is the lesser of the two). Charging each owner, for ``k`` members down, the ``k``-th
smallest overlap of one of them with its partitions (each takes its topics out of ``H``) lowers seed 0's
root from 476 to 390 and, with ``h`` in ``H``, from 343 to 315, at 30 times the cost of a bound: not kept.
The relaxation as one MILP (topic binaries, a member's up and down binaries, the up values linearised with a
product per owned topic) is hopeless at this size: its LP bound at the root is 1,514 (19 s by interior point),
and HiGHS ends 120 s without a useful answer.

:func:`~kipopt.formulations.consumers.level_hot_local.best_set` uses the bound as a guide instead: an iterated local search over the sets (one topic in or
out, else an exchange; then kicks). On the four overloaded groups its first climb ends in 0.7 to 1.1 s at sets
of bound 125, 91, 99 and 100, and a kick lifts the last to 101 (1.5 s): their rounded leaf answers are 12,471,
10,286, 10,714 and 11,146, on seeds 1 and 3 better than every answer the search above met in half an hour.
From 11,146 the search above then closes on seed 4 in 1,371 s (76,859 nodes): 11,146 is optimal over that
group's two-level box, as 12,471 is over seed 0's and, after 2,589 s (99,139 nodes), 10,714 over seed 3's.
With the slots' bound the search closes all four from these answers: seed 0 in 102 s, seed 1 in 604 s
(17,261 nodes; 119,751 had not closed it), seed 3 in 300 s, seed 4 in 636 s (12,131 nodes; runs side by
side). On 60 small groups (3,000 x 60 x 12, seeds 0-29, every set
enumerated) one climb ends below the largest bound on 17 and the kicks reach it on all but one.
``exact.balanced`` scores that set once its tree has searched 10 s
(:data:`~kipopt.formulations.consumers.level_local.HOT_AFTER_SECONDS`).

Not a bound over every level vector: the certificate's stages over the other vectors count only. The
relaxation's inequality itself holds at every level vector, with ``A_m`` the topics at least ``x_m - 1``
(checked at every valid assignment of tiny overloaded groups, 1,926 of 3,625 with levels outside
``{q - 1, q}``, tight on 315 of those), and a member at ``q`` still holding ``h`` keeps ``q + min(k⁰, q)``
of count and room together whatever other topics it gives up: it loses ``1 - θ`` of each keep it drops.
Those are the grounds of a certificate over every vector with this topic's flow (not built).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from kipopt.formulations.consumers.level_bounds import Tree
from kipopt.formulations.consumers.level_certificate import Rows, rows
from kipopt.formulations.consumers.level_slots import SlotNode, applies, best_first, cumulative, floored

THETAS = np.linspace(0.0, 1.0, 51)
"""The multipliers a node's bound is the least of (every ``θ`` in [0, 1] gives a valid bound)."""

COARSE = THETAS[::5]
"""The first pass over :data:`THETAS` (every fifth): the least of the whole grid lies next to its least."""

FEW_TOPICS = 6
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
    keep_other: np.ndarray = field(repr=False)   # (topics, rows): keepable partitions, ``h``'s row zero
    subs_t: np.ndarray = field(repr=False)       # (topics, rows): subscriptions as 0/1

    def up_many(self, highs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per set (rows of ``highs``, sets × topics) and row, the count change and ``Δcap`` at ``q + 1`` holding
        only topics of the set, and whether the row subscribes to one of them (may go up)."""
        q, h, keep = self.rows.q, self.hot, self.rows.keep
        chosen = highs.astype(np.float64)
        k_other = chosen @ self.keep_other
        has_hot = highs[:, h][:, None] & self.rows.subs[None, :, h]
        count = np.minimum(k_other + np.where(has_hot, keep[None, :, h], 0), q + 1) - self.kept_q
        cap = np.where(has_hot, np.minimum(q + 1, np.maximum(keep[None, :, h], q + 1 - k_other)), 0)
        return count, cap - self.cap_q, chosen @ self.subs_t > 0

    def cum_ups(self, highs: np.ndarray, thetas: np.ndarray, top: int) -> np.ndarray:
        """Per set (rows of ``highs``) and multiplier, the running sums of the best ``top`` of the members' up
        values, best first (sets × θ × top + 1; ``-inf`` past the members able to go up). The pairs need no
        more ups than ``r`` plus the members that may go down."""
        count, cap, can_up = self.up_many(highs)
        spread = self.spread
        ups = np.where(can_up[:, None, spread], count[:, None, spread] + thetas[None, :, None] * cap[:, None, spread],
                       -np.inf)
        return cumulative(best_first(ups, top))

    def probes(self, lo: np.ndarray, hi: np.ndarray, thetas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For every undecided topic (in ``hi``, not in ``lo``), in that order, :meth:`bound` without crowding of
        the node with the topic put into ``H`` and of the node with it left out, at ``thetas``. One pass for
        all: a topic put in only strikes its subscribers from the downs (the sorted downs, masked), a topic
        left out only changes the ups (one sort per set)."""
        r, spread, extra = self.rows, self.spread, self.rows.extra
        free = np.flatnonzero(hi & ~lo)
        if not len(free):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        downs = spread[~(r.subs & lo[None, :]).any(axis=1)[spread]]
        down = (self.down_count + thetas[:, None] * self.down_cap)[:, downs]
        order = np.argsort(-down, axis=1)
        down = np.take_along_axis(down, order, axis=1)                        # θ × downs, best first
        highs = np.repeat(hi[None, :], len(free) + 1, axis=0)
        highs[np.arange(1, len(free) + 1), free] = False                        # hi, then hi without each
        cum_up = self.cum_ups(highs, thetas, len(downs) + r.extra)
        ks, cum_down = np.arange(down.shape[1] + 1), cumulative(down)
        out = np.array([_pairs(cum, cum_down, ks, extra).max(axis=1) for cum in cum_up[1:]])
        kept = np.moveaxis(~r.subs[downs[order]][:, :, free], 2, 0)            # free × θ × downs
        into = _best_masked(np.broadcast_to(cum_up[0][None], (len(free),) + cum_up.shape[1:]), down, kept, extra)
        tail = (1.0 - thetas) * self.overload
        return floored(into + tail), floored(out + tail)

    def downs_needed(self, lo: np.ndarray, hi: np.ndarray, target: int) -> float:
        """The fewest members that must go down for a set between ``lo`` and ``hi`` to save more than
        ``target``: saved is at most ``Σ_U (count + Δcap^+)`` over the members up (a member down adds nothing,
        ``min(E, ·)`` no more than its argument), each term at most its count at ``hi`` plus its room gained
        at ``lo`` (the room shrinks as ``H`` grows); ``inf`` when no set can."""
        least = lo.copy()
        least[self.hot] = hi[self.hot]
        count, cap, can_up = self.up_many(np.vstack([hi, least]))
        best = np.maximum(count[0] + np.maximum(cap[1], 0), 0)[self.spread]
        best = best[can_up[0][self.spread]]
        reach = np.cumsum(-np.sort(-best))
        ups = int(np.searchsorted(reach, target, side="right")) + 1
        return math.inf if ups > len(best) else ups - self.rows.extra

    def bound(self, lo: np.ndarray, hi: np.ndarray, thetas: np.ndarray | None = None,
              crowding: bool = True, cutoff: float = -math.inf, slots: bool = True) -> tuple[int, np.ndarray]:
        """The most any two-level set ``H`` with ``lo ⊆ H ⊆ hi`` saves (floored), and the multipliers tried,
        the best first.

        ``thetas=None`` takes the least over :data:`THETAS`: the bound is convex in ``θ`` (the best ``k`` of
        functions linear in ``θ`` sum to a convex one, and so do their maximum over ``k``), so the grid's
        least lies within one coarse step of the least of :data:`COARSE` and a second pass between those
        neighbours finds it, unless the first pass already bounds at most ``cutoff``. With ``crowding``, for
        ``k`` members down a topic subscribed by more than ``W - k`` of the ``W`` that may go down (those with
        no topic in ``lo``) lies outside ``H``: the up values of ``k`` pairs are taken at ``hi`` less those
        topics (one set per distinct threshold; without, all at ``hi``). Where that least is above ``cutoff``
        the slots' bound (:mod:`~kipopt.formulations.consumers.level_slots`, convex in ``θ`` too) is found the
        same way and the lesser taken (unless ``slots`` is false); the multipliers returned are the first
        bound's."""
        slots = slots and applies(self, lo, hi)
        if thetas is not None:
            values = self._values(lo, hi, thetas, crowding)
            values = np.minimum(values, SlotNode(self, lo, hi).values(thetas)) if slots else values
            return int(floored(values[None, :])[0]), thetas[np.argsort(values)]
        least, thetas = _least(lambda ts: self._values(lo, hi, ts, crowding), cutoff)
        if least > cutoff and slots:
            node = SlotNode(self, lo, hi)
            at_slots, tried = _least(node.values, cutoff)
            if at_slots > cutoff:
                at_slots = node.least(tried[:PROBE_THETAS], cutoff)
            least = min(least, at_slots)
        return least, thetas

    def _values(self, lo: np.ndarray, hi: np.ndarray, thetas: np.ndarray, crowding: bool) -> np.ndarray:
        """Per multiplier, the most the pairs of :meth:`bound` save plus ``(1 - θ) E`` (``-inf``: no pairing)."""
        r, spread, extra = self.rows, self.spread, self.rows.extra
        may_down = ~(r.subs & lo[None, :]).any(axis=1)
        downs = spread[may_down[spread]]
        down = -np.sort(-(self.down_count + thetas[:, None] * self.down_cap)[:, downs], axis=1)
        free = np.flatnonzero(hi & ~lo)
        out_from = (len(downs) - r.weight[may_down] @ r.subs[np.ix_(may_down, free)] + 1).astype(np.int64)
        if not crowding:
            out_from[:] = len(downs) + 1
        starts = np.unique(np.r_[0, out_from[(out_from > 0) & (out_from <= len(downs))]]).astype(np.int64)
        highs = np.repeat(hi[None, :], len(starts), axis=0)
        highs[:, free] = out_from[None, :] > starts[:, None]         # from its threshold on, a topic is out
        cum_down, ks = cumulative(down), np.arange(len(downs) + 1)
        top = len(downs) + extra
        at_hi = _pairs(self.cum_ups(highs[:1], thetas, top)[0], cum_down, ks, extra)      # θ × k, every k at hi
        best = at_hi[:, :starts[1] if len(starts) > 1 else len(ks)].max(axis=1)
        # a later segment's ups are no better than hi's: only one whose k reach more at hi can beat best
        needed = 1 + np.flatnonzero((np.maximum.reduceat(at_hi, starts, axis=1)[:, 1:] > best[:, None]).any(axis=0))
        if len(needed):
            segment = np.searchsorted(starts, ks, side="right") - 1
            chosen = np.isin(segment, needed)
            cum_up = self.cum_ups(highs[needed], thetas, top)
            place = np.searchsorted(needed, segment[chosen])
            later = _pairs(cum_up, cum_down[:, chosen], ks[chosen], extra, place)
            best = np.maximum(best, later.max(axis=1))
        return best + (1.0 - thetas) * self.overload


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
    keep_other = np.ascontiguousarray((keep * r.subs).T)
    keep_other[hot] = 0.0
    return Hot(r, hot, int(overload[hot]), at_q[:, hot], np.minimum(k, q), -(k >= q).astype(np.float64),
               caps(q - 1)[:, hot] - at_q[:, hot], np.repeat(np.arange(len(r.weight)), r.weight.astype(np.int64)),
               keep_other, np.ascontiguousarray(r.subs.T.astype(np.float64)))


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
    ``h`` first and then on the topic whose worse move bounds lowest (ties: whose better move does), into
    ``H`` first. ``score`` is called with the complete set (0/1 per topic) and returns a saving against the
    module's base, or ``None``."""
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
        value, thetas = hot.bound(lo, hi, cutoff=found.target)
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
                value = hot.bound(high, high, cutoff=found.target)[0]
                if value > found.target:
                    _leaf(hot, high, value, found, score)
            return None
        thetas = thetas[:PROBE_THETAS]
        into, out = hot.probes(lo, hi, thetas)
        must_out, must_in = into <= found.target, out <= found.target
        if (must_in & must_out).any():
            return None
        if must_in.any() or must_out.any():
            lo, hi = lo.copy(), hi.copy()
            lo[free[must_in]], hi[free[must_out]] = True, False
            continue
        worse, better = np.maximum(into, out), np.minimum(into, out)
        t = hot.hot if hot.hot in free else int(free[np.lexsort((better, worse))[0]])
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


def _least(values, cutoff: float) -> tuple[int, np.ndarray]:
    """The floored least over :data:`THETAS` of ``values(thetas)``, a function convex in ``θ``, and the
    multipliers tried, the best first: :data:`COARSE`, then the grid points between its best's neighbours
    unless the first pass already bounds at most ``cutoff``."""
    coarse = values(COARSE)
    least = int(floored(coarse[None, :])[0])
    if least <= cutoff:
        return least, COARSE[np.argsort(coarse)]
    step, best = COARSE[1] - COARSE[0], COARSE[int(np.argmin(coarse))]
    fine = THETAS[(THETAS > best - step + 1e-9) & (THETAS < best + step - 1e-9) & ~np.isin(THETAS, COARSE)]
    thetas, both = np.r_[COARSE, fine], np.r_[coarse, values(fine)]
    return int(floored(both[None, :])[0]), thetas[np.argsort(both)]


def _pairs(cum_up: np.ndarray, cum_down: np.ndarray, ks: np.ndarray, extra: int,
           place: np.ndarray | None = None) -> np.ndarray:
    """What ``k + r`` ups and the ``k`` downs save, per multiplier and ``k`` of ``ks`` (θ × len(ks); ``-inf``
    past the ups): ``cum_up`` (θ × members + 1, or sets × θ × members + 1 with ``place`` the set per ``k``) at
    ``k + r`` plus ``cum_down`` (θ × len(ks))."""
    at = np.minimum(ks + extra, cum_up.shape[-1] - 1)
    ups = cum_up[:, at] if place is None else cum_up[place, :, at].T
    return np.where(ks + extra < cum_up.shape[-1], ups + cum_down, -np.inf)


def _best_masked(cum_up: np.ndarray, down: np.ndarray, kept: np.ndarray, extra: int) -> np.ndarray:
    """Per set and multiplier, the most ``k + r`` ups and ``k`` downs save: ``cum_up`` (sets × θ × members + 1)
    the ups' running sums, ``down`` (θ × members) the down values best first and ``kept`` (sets × θ ×
    members) which of them may go down in each set."""
    pairs = cumulative(kept.astype(np.int64)) + extra
    ups = np.take_along_axis(cum_up, np.minimum(pairs, cum_up.shape[2] - 1), axis=2)
    return np.where(pairs < cum_up.shape[2], ups + cumulative(np.where(kept, down[None], 0.0)), -np.inf).max(axis=2)
