"""The LP relaxation of every level vector's MILP as one warm-started HiGHS model.

:func:`~kipopt.formulations.consumers.level_search.fixed_model` builds the MILP
of one level vector over the arcs that vector opens, each arc's flow counted
as A (topic at the node's base level ``μ``) or B (one level down). The level
tree bounds many neighbouring vectors by their LP relaxations; rebuilding and
solving each from scratch costs thousands of simplex pivots. Here every arc of
:func:`~kipopt.formulations.consumers.level_search.arcs` has its columns (pool
flow ``z``, and for an owner's own partitions a keep column ``k``) in every
vector's model, so the sparsity pattern is the same for all: a vector only
sets which columns may carry flow (bounds), each node's count ``n μ`` (row
bounds) and
the values of some entries (which arcs count in a node's B row, ``η``'s
coefficients). HiGHS then re-solves from the previous basis
(:class:`~kipopt.formulations.highs.WarmLP`). Rows, per vector:

* per node: ``Σ (z + k) - η = n μ``; ``Σ_B (z + k) + μ η <= n μ`` (high
  members hold no B);
* per owner node, the hull of its two modes on what it keeps (see
  :func:`~kipopt.formulations.consumers.level_search._keep_cuts`):
  ``Σ k + (a - b) η <= a`` and ``Σ kB + o_B η <= o_B``;
* per partition group: its flows sum to its size.

Its optimum equals the relaxation of ``fixed_model`` for the same vector (the
same constraints, with each live arc's flow in the one column its type allows).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from kipopt.formulations.consumers.level_search import Arcs, FixedModel, LevelSpace, _mu
from kipopt.formulations.highs import ArrayLP, HighsResult, WarmLP, is_integral


@dataclass(frozen=True)
class LeafLP:
    """The pattern: columns ``[η (nodes) | z (arcs) | k (keep arcs)]``, rows ``[count (nodes) | B (nodes)
    | keep-all cut | keep-B cut (cut nodes) | supply (groups)]``; COO entries in ``order`` for CSC."""

    space: LevelSpace
    net: Arcs
    warm: WarmLP
    keep_arc: np.ndarray
    cut_nodes: np.ndarray
    keep_cut: np.ndarray      # per keep arc, its node's index in ``cut_nodes`` (arcs run node by node)
    cut_starts: np.ndarray    # per cut node, its first keep arc
    order: np.ndarray
    base: ArrayLP
    group_sizes: np.ndarray


def leaf_lp(space: LevelSpace, net: Arcs, threads: int | None = None) -> LeafLP:
    N, K = len(net.nodes), len(net.arc_node)
    keep_arc = np.flatnonzero(net.arc_owned > 0)
    nk = len(keep_arc)
    node, knode = net.arc_node, net.arc_node[keep_arc]
    cut_nodes = np.unique(knode)
    C = len(cut_nodes)
    eta, y, k = np.arange(N), N + np.arange(K), N + K + np.arange(nk)
    local = np.searchsorted(cut_nodes, knode)
    rows = np.r_[node, knode, eta,                      # count rows
                 N + node, N + knode, N + eta,          # B rows
                 2 * N + local, 2 * N + np.arange(C),   # keep-all cuts
                 2 * N + C + local, 2 * N + C + np.arange(C),  # keep-B cuts
                 2 * N + 2 * C + net.arc_group, 2 * N + 2 * C + net.arc_group[keep_arc]]  # supply
    cols = np.r_[y, k, eta, y, k, eta, k, cut_nodes, k, cut_nodes, y, k]
    order = np.argsort(cols, kind="stable")
    start = np.zeros(N + K + nk + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=N + K + nk), out=start[1:])
    cost = net.arc_cost.astype(np.float64)
    sizes = np.array([g.size for g in space.layout.groups], dtype=np.float64)
    base = ArrayLP(cost=np.r_[np.zeros(N), cost, cost[keep_arc] - 1.0], lower=np.zeros(N + K + nk),
                   upper=np.r_[net.node_size.astype(np.float64), np.zeros(K + nk)],
                   row_lower=np.r_[np.zeros(2 * N + 2 * C), sizes], row_upper=np.r_[np.zeros(2 * N + 2 * C), sizes],
                   start=start, index=rows[order].astype(np.int32), value=np.ones(len(rows)))
    cut_starts = np.searchsorted(local, np.arange(C))
    return LeafLP(space, net, WarmLP(threads), keep_arc, cut_nodes, local, cut_starts, order, base, sizes)


def leaf_columns(net: Arcs) -> int:
    """The columns of :func:`leaf_lp` over ``net``'s arcs."""
    return len(net.nodes) + len(net.arc_node) + int(np.count_nonzero(net.arc_owned > 0))


def relax(leaf: LeafLP, vector: np.ndarray, time_limit: float | None = None,
          cutoff: float | None = None, start=None) -> HighsResult:
    """The LP relaxation of ``vector``'s MILP (objective without the constant ``O``), from the basis
    ``start`` or else of the vector solved before; status ``cutoff`` when its optimum is proven above
    ``cutoff`` (:meth:`~kipopt.formulations.highs.WarmLP.solve`)."""
    return relax_box(leaf, vector, vector, time_limit, cutoff, start)


def relax_box(leaf: LeafLP, lo: np.ndarray, hi: np.ndarray, time_limit: float | None = None,
              cutoff: float | None = None, start=None) -> HighsResult:
    """A relaxation of every vector's MILP in the box ``[lo, hi]`` at once, in the leaves' pattern (so
    it is tried against the last optimum's duals, and starts from the basis ``start``, else the last
    solve's): its optimum bounds every vector of the box (see :func:`_model`); at ``lo == hi`` it is
    :func:`relax`. On a 100-member, 20-topic group of the production grid it bounds the box
    ``λ ∈ {99, 100}^20`` by 1,501 where the closed form says 1,206 (the best vector: 1,526); an earlier
    transportation LP over the same boxes (count ranges and supplies only) gave the same bound there but
    stayed far below the leaves' LPs inside the box (1,501 at a vector whose LP is 1,549), and that group
    took 154 s to prove with it against about 20 s with these."""
    return leaf.warm.solve(_model(leaf, lo, hi), time_limit, cutoff, start)


def relax_rounded(leaf: LeafLP, vector: np.ndarray, time_limit: float | None = None, cutoff: float | None = None,
                  start=None, meanwhile=None) -> tuple[HighsResult, tuple[FixedModel, HighsResult] | None]:
    """:func:`relax`, then (when its optimum is at most ``cutoff``) a primal heuristic from its basis: the
    relaxation's high counts ``η`` rounded (largest remainders, their sum kept: it is ``P - Σ n μ``) and
    fixed, the LP solved again, in one HiGHS object where the leaf LP is large
    (:meth:`~kipopt.formulations.highs.WarmLP.solve_then`, which dives on the relaxation's optimal face where
    the rounding falls short of an integral value). An integral optimum of the second is an answer
    of the vector's MILP, returned with the model :func:`~kipopt.formulations.consumers.level_search.read_back`
    reads it through; ``None`` otherwise."""
    first, second = leaf.warm.solve_then(_model(leaf, vector, vector), lambda x: _rounded_high(leaf, x), time_limit,
                                         cutoff, start, meanwhile)
    return first, None if second is None else _answer(leaf, vector, second)


def relax_settled(leaf: LeafLP, vector: np.ndarray, cutoff: float | None) -> HighsResult | None:
    """``vector``'s relaxation settled above ``cutoff`` with no solve, by the duals the family's solves left
    (:meth:`~kipopt.formulations.highs.WarmLP.settled`); ``None`` when they do not."""
    return leaf.warm.settled(_model(leaf, vector, vector), cutoff)


def relax_rounded_each(leaf: LeafLP, vectors: list[np.ndarray], time_limit: float | None = None,
                       cutoff: float | None = None, meanwhile=None
                       ) -> list[tuple[HighsResult, tuple[FixedModel, HighsResult] | None]]:
    """:func:`relax_rounded` for each of ``vectors``, large leaf LPs all at once, each in a child of its own
    (:meth:`~kipopt.formulations.highs.WarmLP.solve_then_each`), ``meanwhile()`` run here while they work."""
    done = leaf.warm.solve_then_each([_model(leaf, v, v) for v in vectors], lambda x: _rounded_high(leaf, x),
                                     time_limit, cutoff, meanwhile)
    return [(first, None if second is None else _answer(leaf, v, second)) for v, (first, second) in zip(vectors, done)]


def _rounded_high(leaf: LeafLP, x: np.ndarray) -> np.ndarray:
    """The high counts ``η`` (the first columns) of ``x`` rounded by largest remainders, their sum kept."""
    eta = x[:len(leaf.net.nodes)]
    fixed = np.floor(eta + 1e-9)
    short = int(round(eta.sum() - fixed.sum()))
    if short > 0:
        fixed[np.argsort(-(eta - fixed), kind="stable")[:short]] += 1.0
    return fixed


def _answer(leaf: LeafLP, vector: np.ndarray, result: HighsResult) -> tuple[FixedModel, HighsResult] | None:
    """A rounded solve's integral optimum with the model that reads it back; ``None`` otherwise."""
    if result.status != "optimal" or result.x is None or not is_integral(result.x):
        return None
    return _read_model(leaf, vector), result


def _read_model(leaf: LeafLP, vector: np.ndarray) -> FixedModel:
    """The leaf LP's columns as :class:`~kipopt.formulations.consumers.level_search.FixedModel` names them
    (``η | z | k``), live arcs only, for :func:`~kipopt.formulations.consumers.level_search.read_back`."""
    net = leaf.net
    N, K = len(net.nodes), len(net.arc_node)
    terms = box_terms(leaf, vector[None], None)
    mu, level, live = terms.mu_lo[0], terms.level[0], terms.live[0]
    arcs = np.flatnonzero(live)
    flows = np.stack([net.arc_group[arcs], net.arc_node[arcs], N + arcs, (level[arcs] < mu[net.arc_node[arcs]])],
                     axis=1).astype(np.int64)
    kl = np.flatnonzero(live[leaf.keep_arc])
    ka = leaf.keep_arc[kl]
    keeps = np.stack([net.arc_group[ka], np.array([net.nodes[v][0] for v in net.arc_node[ka]], dtype=np.int64),
                      N + K + kl], axis=1).astype(np.int64).reshape(-1, 3)
    return FixedModel(net.nodes, net.owner, tuple(int(v) for v in mu), flows, keeps, np.arange(N), None)


@dataclass(frozen=True)
class BoxTerms:
    """What the relaxation of each box of a batch depends on (leading axis: the box; :func:`_model` says
    how each enters it, :func:`~kipopt.formulations.consumers.level_duals.dual_bounds` reads the same):
    per node its least and greatest base level ``μ⁻, μ⁺`` over the box; per arc its topic's highest
    level, whether it may be live (that level is at least ``μ⁻ - 1``) and whether it is a B arc; per
    keep arc whether it is a B arc; per cut node what its owner could keep on B arcs and its keep hull's
    ends ``a`` and ``top``; the flow and keep columns' upper bounds."""

    mu_lo: np.ndarray
    mu_hi: np.ndarray
    level: np.ndarray
    live: np.ndarray
    is_b: np.ndarray
    kb: np.ndarray
    arc_upper: np.ndarray
    keep_upper: np.ndarray
    own_b: np.ndarray
    a: np.ndarray
    top: np.ndarray


def box_terms(leaf: LeafLP, los: np.ndarray, his: np.ndarray | None) -> BoxTerms:
    """:class:`BoxTerms` of the boxes ``[los[i], his[i]]``; ``his`` ``None`` for single vectors (``los``)."""
    net, sp = leaf.net, leaf.space
    node, ka = net.arc_node, leaf.keep_arc
    mu_lo = _mu(sp, los)[:, net.node_class].astype(np.float64)                # (B, N)
    mu_hi = mu_lo if his is None else _mu(sp, his)[:, net.node_class].astype(np.float64)
    level = (los if his is None else his)[:, sp.group_topic[net.arc_group]].astype(np.float64)  # (B, K)
    live = level >= mu_lo[:, node] - 1
    is_b = live & (level < mu_lo[:, node])
    size = net.node_size.astype(np.float64)
    cap = np.minimum(leaf.group_sizes[net.arc_group], size[node] * (np.minimum(mu_hi[:, node], level) + 1.0))
    owned = net.arc_owned[ka].astype(np.float64)
    kb, klive = is_b[:, ka], live[:, ka]
    own_all = np.add.reduceat(klive * owned, leaf.cut_starts, axis=1)           # (B, C)
    own_b = np.add.reduceat(kb * owned, leaf.cut_starts, axis=1)
    cmu = mu_hi[:, leaf.cut_nodes]
    return BoxTerms(mu_lo, mu_hi, level, live, is_b, kb, np.where(live, cap, 0.0),
                    np.where(klive, np.minimum(owned, cap[:, ka]), 0.0), own_b, np.minimum(cmu, own_all),
                    np.minimum(cmu + 1, own_all - own_b))


def _model(leaf: LeafLP, lo: np.ndarray, hi: np.ndarray) -> ArrayLP:
    """The relaxation of the box ``[lo, hi]`` in the family's pattern: at a vector, its leaf LP. Over a
    box each row is one that every vector of the box satisfies (so the optimum bounds them all):

    * a node's count ``n μ + η`` lies in ``[n μ⁻ + η, n μ⁺ + η]``;
    * an arc is open when its topic's highest level reaches ``μ⁻ - 1`` and carries at most
      ``n (min(μ⁺, hi_t) + 1)`` (holders of t hold at most ``λ_t + 1``);
    * the B row and the keep-B cut take the arcs with ``hi_t = μ⁻ - 1`` at ``μ⁻``: such an arc is live
      only where ``μ = μ⁻``, and then it is a B arc; where ``μ > μ⁻`` it carries nothing and the rows
      hold since ``η <= n``;
    * an owner's keep-all cut takes ``a = min(μ⁺, owned on open arcs)`` and ``top = min(μ⁺ + 1, owned
      on arcs with hi_t >= μ⁻)``, each at least its value at any vector of the box, so the segment
      from ``(0, a)`` to ``(1, top)`` lies above that vector's.

    At ``lo == hi`` these are the leaf's rows (a B arc's bound ``n μ`` is the leaf's own: its holders
    are low members), so the box's optimum is at most each of its leaves'. A box's transportation LP
    (count ranges and supplies only) has a subset of these rows: measured on a 100-member, 20-topic
    group, equal on the widest boxes and far below inside them (1,501 against 1,549 at a vector)."""
    net = leaf.net
    N, K, nk, C = len(net.nodes), len(net.arc_node), len(leaf.keep_arc), len(leaf.cut_nodes)
    t = box_terms(leaf, lo[None], None if hi is lo else hi[None])
    mu_lo, mu_hi, own_b, a = t.mu_lo[0], t.mu_hi[0], t.own_b[0], t.a[0]
    is_b, kb = t.is_b[0].astype(np.float64), t.kb[0].astype(np.float64)
    sizes = leaf.group_sizes
    values = np.r_[np.ones(K + nk), -np.ones(N), is_b, kb, mu_lo, np.ones(nk), a - t.top[0], kb, own_b,
                   np.ones(K + nk)]
    n_lo, n_hi = net.node_size * mu_lo, net.node_size * mu_hi
    return replace(leaf.base, value=values[leaf.order],
                   upper=np.r_[net.node_size.astype(np.float64), t.arc_upper[0], t.keep_upper[0]],
                   row_lower=np.r_[n_lo, np.full(N + 2 * C, -np.inf), sizes],
                   row_upper=np.r_[n_hi, n_lo, a, own_b, sizes])
