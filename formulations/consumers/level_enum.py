"""Every vector of a small box bounded at once, by the Lagrangian of :mod:`~kipopt.formulations.consumers.level_lagrange`.

At fixed supply prices ``π`` the Lagrangian bound of a level vector ``λ`` is a sum of node terms
(:mod:`~kipopt.formulations.consumers.level_lagrange`), and a node's term depends on ``λ`` only through
its class's topics: its base level ``μ`` and which of its arcs are open in either mode. A box with few
vectors has few *states* per node (the levels of its class's topics that the box leaves free), so the
term of every (node, state) pair is computed once, in one vectorized pass, and the bound of every vector
of the box is a sum of table entries::

    L_π(λ) = Σ_g π_g s_g + Σ_v term_π(v, λ restricted to v's class)

(exactly :func:`~kipopt.formulations.consumers.level_lagrange.lagrangian_bound` at each vector, checked
in the tests). On the 10,000 x 1,000 benchmark group of seed 2 the level tree popped 459 boxes to prove
its optimum, almost all of them in the box ``{9, 10}^10``; there the prices of one leaf optimum bound 621
of its 1,024 vectors above the optimum, and three leaves' prices all of them.

The level tree (:mod:`~kipopt.formulations.consumers.level_tree`), after its first
``level_policy.ENUM_AFTER_BOXES`` boxes, turns a box of at most ``level_policy.ENUM_MAX_VECTORS`` vectors
into an :class:`Enumerated` item instead of splitting it: the
vectors its bound leaves below the best answer, each with its own bound. Whenever the item comes up it
is priced again at the duals the leaves' solves left since (:meth:`Enumerated.reprice`), its least vector
goes into line as a leaf (solved as any other), and the item goes back with the least bound of the rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from kipopt.formulations.consumers.level_lagrange import ArcUnits, arc_units, fill_sorted, prices, repeated, unit_caps
from kipopt.formulations.consumers.level_warm import LeafLP

MAX_UNIT_STATES = 3_000_000
"""A box whose (node, state) pairs hold more units than this in all is split as before: on the
10,000 x 1,000 group of seed 2 the box ``{9, 10}^10`` holds 1,085,310 (its states made once in about 80 ms,
then one pricing 70-80 ms, 150 ms before the caps were kept with the states). Each unit holds 40 bytes
while its box is in line (the tree keeps at most ``level_policy.ENUM_MAX_LIVE_UNITS`` in all)."""


@dataclass(frozen=True)
class States:
    """A box's node states: per node its class's free topics in mixed radix (the first one most
    significant), the pairs node-major; and the units of each pair (its node's, repeated), with their caps
    in either mode, which do not depend on the prices."""

    lo: np.ndarray
    vectors: np.ndarray        # (V, T) every vector of the box, in mixed radix
    place: np.ndarray          # (T, classes): the radix place of each free topic within each class
    pair_start: np.ndarray     # per node: its first pair
    pair_mu: np.ndarray        # per pair: its node's base level there
    pair_size: np.ndarray      # per pair: its node's members
    pair_single: np.ndarray
    unit_pair: np.ndarray      # per unit of a pair: the pair
    unit_slot: np.ndarray      # per unit of a pair: its place among all units, node-major
    unit_base: np.ndarray      # per unit of a pair: where its pair's units start
    cap: np.ndarray            # per unit of a pair, in its node's units' own order: its cap (mode 0)
    high_cap: np.ndarray       # the same one level up (mode 1)
    reach: np.ndarray          # per pair: its units' total cap (mode 0)
    high_reach: np.ndarray     # the same one level up (mode 1)
    units: ArcUnits


def vector_count(lo: np.ndarray, hi: np.ndarray) -> int:
    """The vectors in the box ``[lo, hi]``."""
    return math.prod(int(w) for w in (hi - lo + 1))


def states(leaf: LeafLP, lo: np.ndarray, hi: np.ndarray, most: int = MAX_UNIT_STATES) -> States | None:
    """The box's :class:`States`, ``None`` above ``most`` units of its pairs in all."""
    sp, net = leaf.space, leaf.net
    width = (hi - lo + 1).astype(np.int64)
    free = sp.member_of & (width > 1)[None, :]                          # (classes, T)
    # the place of free topic t in class c: the product of the widths of c's free topics after t
    w = np.where(free, width[None, :], 1)
    suffix = np.cumprod(w[:, ::-1], axis=1)[:, ::-1]
    place = np.where(free, suffix // w, 0).T
    class_states = suffix[:, 0] if w.shape[1] else np.ones(len(w), dtype=np.int64)
    node_states = class_states[net.node_class]
    un = arc_units(leaf)
    if int((node_states * un.count).sum()) > most:
        return None
    pair_node = np.repeat(np.arange(len(net.nodes)), node_states)
    pair_start = np.cumsum(node_states) - node_states
    state = np.arange(len(pair_node)) - pair_start[pair_node]
    cls = net.node_class[pair_node]
    digits = (state[:, None] // np.maximum(place[:, cls].T, 1)) % width[None, :]
    pair_levels = lo[None, :] + np.where(free[cls], digits, 0)
    pair_mu = np.maximum(np.where(sp.member_of[cls], pair_levels, -1).max(axis=1), 0).astype(np.float64)
    unit_pair, unit_slot, unit_base = repeated(un, pair_node)
    unit = un.natural[unit_slot]
    size = net.node_size[pair_node].astype(np.float64)
    level = pair_levels[unit_pair, sp.group_topic[un.group[unit]]].astype(np.float64)
    cap, high = unit_caps(leaf, un, unit, size[unit_pair], pair_mu[unit_pair], level)
    grid = np.indices(tuple(int(w) for w in width)).reshape(len(width), -1).T
    pairs = len(pair_node)
    return States(lo, lo[None, :] + grid, place, pair_start, pair_mu, size, size == 1, unit_pair, unit_slot,
                  unit_base, cap, high, np.bincount(unit_pair, weights=cap, minlength=pairs),
                  np.bincount(unit_pair, weights=high, minlength=pairs), un)


def pair_terms(leaf: LeafLP, st: States, price: np.ndarray) -> np.ndarray:
    """Each (node, state) pair's least cost at ``price``, over its modes (``inf``: it cannot fill one)."""
    un = st.units
    cost = un.cost - price[un.group]
    order = np.lexsort((cost, un.node))                    # node-major, cheapest first
    # the k-th cheapest unit of a node, as a place among its node's units in their own order
    rank = un.slot[order] - un.first[un.node[order]]
    src = st.unit_base + rank[st.unit_slot]
    c = cost[order][st.unit_slot]
    least = st.pair_size * st.pair_mu
    most = np.where(st.pair_single, least, least + st.pair_size)
    pairs = len(st.pair_mu)
    low = fill_sorted(st.unit_pair, c, st.cap[src], least, most, pairs, st.unit_base, st.reach)
    high = fill_sorted(st.unit_pair, c, st.high_cap[src], st.pair_mu + 1.0, st.pair_mu + 1.0, pairs, st.unit_base,
                       st.high_reach)
    return np.where(st.pair_single, np.minimum(low, high), low)


def bounds(leaf: LeafLP, st: States, vectors: np.ndarray, price: np.ndarray) -> np.ndarray:
    """:func:`~kipopt.formulations.consumers.level_lagrange.lagrangian_bound` at ``price`` of each of
    ``vectors`` (rows of the box ``st`` was made for), in rule units."""
    terms = pair_terms(leaf, st, price)
    index = (vectors - st.lo[None, :]) @ st.place                       # (V, classes)
    total = float(price @ leaf.group_sizes) + terms[st.pair_start[None, :] + index[:, leaf.net.node_class]].sum(axis=1)
    out = np.full(len(vectors), math.inf)
    finite = np.isfinite(total)
    out[finite] = np.ceil(total[finite] - 1e-6) + leaf.space.owned_total
    return out


@dataclass
class Enumerated:
    """A box's vectors not yet settled, each with its bound (rule units), and the duals they were priced at."""

    states: States
    vectors: np.ndarray
    bound: np.ndarray
    priced: list = field(default_factory=list)

    @classmethod
    def of(cls, leaf: LeafLP, lo: np.ndarray, hi: np.ndarray, bound: float,
           most: int = MAX_UNIT_STATES) -> "Enumerated | None":
        """The box's vectors at its bound ``bound`` (none priced yet), ``None`` where its pairs hold more than
        ``most`` units."""
        st = states(leaf, lo, hi, most)
        if st is None:
            return None
        return cls(st, st.vectors, np.full(len(st.vectors), float(bound)))

    @property
    def size(self) -> int:
        """The units of its pairs: what it holds in memory, 40 bytes each."""
        return len(self.states.unit_pair)

    def reprice(self, leaf: LeafLP, duals: list[np.ndarray | None], best: float) -> None:
        """Raise the bounds by the supply prices of ``duals`` not applied yet, and drop the vectors they put at
        ``best`` or above."""
        for dual in duals:
            if dual is None or any(dual is done for done in self.priced) or not len(self.vectors):
                continue
            self.priced.append(dual)
            self.bound = np.maximum(self.bound, bounds(leaf, self.states, self.vectors, prices(leaf, dual)))
            self._drop(best)
        self._drop(best)

    def _drop(self, best: float) -> None:
        keep = self.bound < best
        self.vectors, self.bound = self.vectors[keep], self.bound[keep]

    def least(self) -> tuple[np.ndarray, float]:
        """Take out the vector of least bound: ``(vector, bound)``."""
        i = int(np.argmin(self.bound))
        vector, bound = self.vectors[i], float(self.bound[i])
        self.vectors, self.bound = np.delete(self.vectors, i, axis=0), np.delete(self.bound, i)
        return vector, bound

    @property
    def floor(self) -> float:
        """The least bound left (``inf`` when none)."""
        return float(self.bound.min()) if len(self.bound) else math.inf
