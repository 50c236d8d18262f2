"""Bounds of many sub-boxes at once from one box relaxation's row duals, and the shave they drive.

A box relaxation (:func:`~kipopt.formulations.consumers.level_warm.relax_box`) of ``[lo, hi]`` ends
with row duals ``y``. Every box's relaxation has the same pattern, so by weak duality
(:func:`~kipopt.formulations.highs.dual_bound`) ``y`` bounds the relaxation of *any* box, hence every
vector in it, with no solve: :func:`dual_bounds` does it for a batch of boxes in a few array passes
(the rows' and columns' terms written out per column kind, from the same
:func:`~kipopt.formulations.consumers.level_warm.box_terms` that
:func:`~kipopt.formulations.consumers.level_warm._model` builds a box's relaxation from). A narrower box's relaxation has
other coefficients (its count rows, B rows and keep cuts follow its own levels), not only tighter
bounds, so ``y`` may say less of it than of the box it came from; where a half of a topic's range
closes arcs or tightens counts that ``y`` prices, it says more.

:func:`shave` cuts a relaxed box's topic ranges with them, as
:func:`~kipopt.formulations.consumers.level_bounds.children` does with the closed form (the same loop,
:func:`~kipopt.formulations.consumers.level_bounds.shave_box`): per topic its two halves and its two end
levels are bounded, whatever cannot beat the best answer in hand is cut, until nothing is cut.
Measured on the production grid's 100-member, 20-topic groups (one thread), box relaxations and proofs
before and after: 315 -> 188 (2.0 -> 1.6 s), 2,805 -> 610 (18.2 -> 6.2 s), 2,199 -> 538 (10.9 -> 6.5
s); and the two groups no 60 s limit proved, 32,803 -> 3,532 boxes (112.6 -> 19.1 s) and about 120 ->
28.7 s. With the halves alone (no end levels) the last three took 14.6, 9.4 and 82.3 s.
"""

from __future__ import annotations

import math

import numpy as np

from kipopt.formulations.consumers.level_bounds import Tree, children, shave_box
from kipopt.formulations.consumers.level_lagrange import best_lagrangian, pricing_pays
from kipopt.formulations.consumers.level_warm import BoxTerms, LeafLP, box_terms


BATCH_ENTRIES = 4_000_000
"""(box, arc) entries per chunk of :func:`dual_bounds` (each of its dozen arrays then takes 32 MB): a
shave's batch at 1,000,000 x 10,000 (40 boxes, 208,000 arcs) held 8.3 million, and a 50-topic group with
leaf LPs of 125,000 columns would hold 25 million (200 boxes), 2.4 GB in all."""


def dual_bounds(leaf: LeafLP, los: np.ndarray, his: np.ndarray, row_dual: np.ndarray,
                terms: BoxTerms | None = None) -> np.ndarray:
    """Per box (rows of ``los``, ``his``), the weak-duality bound of its relaxation from ``row_dual`` (any
    duals of the family's pattern), in rule units (rounded up, plus ``O``); ``-inf`` where it says
    nothing. Equal, box by box, to ``dual_bound(_model(leaf, lo, hi), row_dual)`` so converted.
    ``terms``: the boxes' :func:`~kipopt.formulations.consumers.level_warm.box_terms`, when the caller
    bounds them with several duals. Without them, boxes go in chunks of at most :data:`BATCH_ENTRIES`
    (box, arc) entries: a shave's batch holds four boxes per topic still wide."""
    step = max(1, BATCH_ENTRIES // max(1, len(leaf.net.arc_node)))
    if terms is None and len(los) > step:
        return np.concatenate([dual_bounds(leaf, los[i:i + step], his[i:i + step], row_dual)
                               for i in range(0, len(los), step)])
    net, sp = leaf.net, leaf.space
    N, C = len(net.nodes), len(leaf.cut_nodes)
    y_count, y_b = row_dual[:N], np.minimum(row_dual[N:2 * N], 0.0)
    y_all, y_kb = np.minimum(row_dual[2 * N:2 * N + C], 0.0), np.minimum(row_dual[2 * N + C:2 * N + 2 * C], 0.0)
    y_supply = row_dual[2 * N + 2 * C:]
    node, group, ka = net.arc_node, net.arc_group, leaf.keep_arc
    knode, kcut = node[ka], leaf.keep_cut
    size = net.node_size.astype(np.float64)
    t = box_terms(leaf, los, his) if terms is None else terms
    mu_lo, mu_hi, a, own_b = t.mu_lo, t.mu_hi, t.a, t.own_b

    # rows: count rows [n μ⁻, n μ⁺], B rows (<= n μ⁻), keep cuts (<= a, <= own_b), supplies (= sizes)
    rows = (np.where(y_count > 0, y_count * size * mu_lo, y_count * size * mu_hi).sum(axis=1)
            + (y_b * size * mu_lo).sum(axis=1) + (y_all * a).sum(axis=1) + (y_kb * own_b).sum(axis=1)
            + float(y_supply @ leaf.group_sizes))
    # columns (all with lower bound 0): a negative reduced cost times the upper bound
    d_eta = y_count - mu_lo * y_b
    d_eta[:, leaf.cut_nodes] -= (a - t.top) * y_all + own_b * y_kb
    d_arc = net.arc_cost - y_count[node] - t.is_b * y_b[node] - y_supply[group]
    d_keep = (net.arc_cost[ka] - 1.0 - y_count[knode] - y_supply[group[ka]] - y_all[kcut]
              - t.kb * (y_b[knode] + y_kb[kcut]))
    cols = (np.minimum(d_eta, 0.0) * size).sum(axis=1)
    cols += (np.minimum(d_arc, 0.0) * t.arc_upper).sum(axis=1)
    cols += (np.minimum(d_keep, 0.0) * t.keep_upper).sum(axis=1)
    bound = rows + cols
    return np.where(np.isfinite(bound), np.ceil(bound - 1e-6) + sp.owned_total, -math.inf)


def shave(leaf: LeafLP, lo: np.ndarray, hi: np.ndarray, best: float, row_dual: np.ndarray,
          until: float | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """The box ``[lo, hi]`` shaved by the bounds ``row_dual`` gives
    (:func:`~kipopt.formulations.consumers.level_bounds.shave_box`: halves and end levels of every topic's
    range cut while they cannot beat ``best``, until ``until``); ``None`` when nothing in the box can."""
    shaved = shave_box(lo, hi, best, lambda los, his: dual_bounds(leaf, los, his, row_dual), until)
    return None if shaved is None else (shaved.lo, shaved.hi)


def carried_bound(leaf: LeafLP, lo: np.ndarray, hi: np.ndarray, given: np.ndarray | None = None,
                  enough: float = math.inf) -> tuple[float, np.ndarray]:
    """The best bound that the duals the leaves' solves left behind, or ``given`` (those the box's parent was
    bounded with), give the box ``[lo, hi]`` (weak duality on its relaxation, no solve), with those duals;
    where that stays below ``enough``, raised by the Lagrangian bound at their supply prices
    (:func:`~kipopt.formulations.consumers.level_lagrange.best_lagrangian`, every node's part priced afresh).
    The leaves' LPs are far stronger than the closed form: at 1,000,000 x 10,000 it left boxes at 224,000
    that these duals put above the answer, 243,636. At 100,000 x 5,000 the Lagrangian raised a box of
    32 levels' width from 20,082 to 23,790 (the answer: 23,549)."""
    duals = leaf.warm.carried + ([] if given is None else [given])
    terms = box_terms(leaf, lo[None], hi[None])
    values = [float(dual_bounds(leaf, lo[None], hi[None], d, terms)[0]) for d in duals]
    i = int(np.argmax(values))
    if values[i] < enough and pricing_pays(leaf):
        priced = best_lagrangian(leaf, hi, terms.mu_lo[0], terms.mu_hi[0], duals, enough)
        return max(values[i], priced), duals[i]
    return values[i], duals[i]


def split(tr: Tree, leaf: LeafLP | None, lo: np.ndarray, hi: np.ndarray, best: float,
           row_dual: np.ndarray | None, deadline: float | None = None) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """The box's children for the level tree (:func:`~kipopt.formulations.consumers.level_bounds.children`,
    its closed-form shave stopped at the ``deadline``); a box back with its relaxation (``row_dual``: its duals, in the
    leaves' family ``leaf``) is first shaved by them (until the ``deadline`` too: a batch takes 0.1-0.3 s on
    a 50-topic group of 100,000 partitions), and its children's bounds raised by them
    (:func:`shave`, :func:`dual_bounds`)."""
    if row_dual is None or leaf is None:
        return children(tr, lo, hi, best, deadline)
    box = shave(leaf, lo, hi, best, row_dual, deadline)
    if box is None:
        return []
    kids = children(tr, *box, best, deadline)
    if not kids:
        return kids
    raised = dual_bounds(leaf, np.array([k[0] for k in kids]), np.array([k[1] for k in kids]), row_dual)
    return [(l2, h2, max(b2, float(b))) for (l2, h2, b2), b in zip(kids, raised)]
