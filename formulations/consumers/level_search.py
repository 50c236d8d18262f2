"""The rule ``balanced`` exactly by enumerating topic levels: one small MILP per level vector, pruned.

Notation as in :mod:`kipopt.formulations.consumers.rules`. Lemma (levels).
An assignment meets the rule iff there are integers ``λ_t`` (one per topic)
such that, with ``μ_c = max_{t ∈ S_c} λ_t`` for each subscription class c,
every member m of class c holds

* ``x_m = μ_c + 1`` partitions, all of topics with ``λ_t = μ_c`` ("high"), or
* ``x_m = μ_c`` partitions, all of topics with ``λ_t >= μ_c - 1`` ("low").

Proof. If the rule holds, take ``λ_t`` the least load of t's subscribers.
Every member of c subscribes to each ``t ∈ S_c``, so ``x_m >= μ_c``; a member
holding anything holds some t, so ``x_m <= λ_t + 1 <= μ_c + 1``, and a
member holding ``μ_c + 1`` only holds topics with ``λ_t + 1 >= μ_c + 1``; one
holding ``μ_c`` only topics with ``λ_t >= μ_c - 1``. (A member holding
nothing has ``μ_c = 0``: low.) Conversely, given such ``λ``, every
subscriber m of t holds ``x_m >= μ_c >= λ_t``, and every holder of t holds at
most ``λ_t + 1`` (high: ``μ_c = λ_t``; low: ``μ_c <= λ_t + 1``), so a holder
exceeds t's least-loaded subscriber by at most one. ∎

The least loads of every valid assignment lie in the box
``[λ_lo, λ_hi]`` of :func:`~kipopt.formulations.consumers.groups.topic_levels`,
so the rule's optimum is the least, over the level vectors of that box, of
the optimum with ``λ`` fixed. With ``λ`` fixed, member m of class c takes
``A_m`` partitions of its topics at ``λ_t = μ_c`` and ``B_m`` of those at
``μ_c - 1``, with ``A + B = μ_c + η`` and ``B <= μ_c (1 - η)`` for one
integer ``η ∈ {0, 1}`` (high members take no B). For ``n`` interchangeable
members (one rack, one class, owning nothing) the same two rows with
``η ∈ [0, n]`` are exact: ``η`` members take ``μ_c + 1`` of A, the others the
B and the rest of A, since ``A = nμ_c + η - B >= nμ_c + η - μ_c(n - η) =
η(μ_c + 1)`` (:func:`read_back` deals them so). Owners stay one per node
(what they keep is theirs). Flows ``y`` from partition groups (topic,
replica racks) cover each group; an owner keeps ``k <= min(owned, y)`` of
its own. Objective ``W Σ cross · y - Σ k + O``, the rule's scalar. When no
class has B topics the matrix is a network matrix; otherwise the B row
couples ``η`` with a coefficient ``μ_c`` and HiGHS branches (rarely: it is
one binary per owner).

Search. Each level vector first gets a cheap lower bound (every partition
group at the least cross-rack cost over the classes that may hold its
topic, every owned partition whose owner may not hold it there revoked) and
two necessary conditions (class totals can add up to the partitions; every
topic's partitions fit into what its allowed classes may take). Vectors
are solved in bound order; the search stops when the next bound reaches
the best answer found (or the incumbent given). The answer's bound is the
least of the unsolved vectors' bounds and the solved ones' MILP bounds:
valid whatever the time limit cuts. The box grows exponentially with the
topics, so :func:`search_levels` declines boxes above ``max_vectors``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from kipopt.instance import ConsumersInstance

from kipopt.formulations.consumers.groups import Layout, class_counts, topic_levels
from kipopt.formulations.consumers.levels import owned_by_group
from kipopt.formulations.consumers.rules import owners
from kipopt.formulations.highs import SparseBuilder, is_integral, solve_lp

MAX_VECTORS = 250_000
"""Level boxes larger than this are left to the (member, partition group) MILP."""

SCREEN_CHUNK = 4096
"""Vectors screened at once."""


@dataclass(frozen=True)
class LevelSpace:
    """What every level vector's bound and model share."""

    layout: Layout
    classes: tuple[frozenset[str], ...]
    member_class: np.ndarray
    count: np.ndarray
    member_of: np.ndarray          # (classes, topics) bool: class c subscribes to topic t
    sizes: np.ndarray              # partitions per topic
    group_topic: np.ndarray        # topic index of each partition group
    class_cross: np.ndarray        # (groups, classes): least cross-rack cost over the class's racks
    owned: dict[tuple[int, int], list[int]]
    owned_total: int
    weight: int
    vectors: np.ndarray            # (V, topics) level vectors that pass the necessary conditions
    bounds: np.ndarray             # their lower bounds, rule units


def level_base(instance: ConsumersInstance, lay: Layout) -> LevelSpace:
    """What every level vector shares (classes, sizes, costs, ownership), with no vectors yet."""
    classes, member_class, count, sizes_map = class_counts(instance, lay)
    T = len(lay.topics)
    member_of = np.array([[t in ts for t in lay.topics] for ts in classes], dtype=bool).reshape(len(classes), T)
    sizes = np.array([sizes_map[t] for t in lay.topics], dtype=np.int64)
    topic_index = {t: i for i, t in enumerate(lay.topics)}
    group_topic = np.array([topic_index[g.topic] for g in lay.groups], dtype=np.int64)
    class_cross = np.ones((len(lay.groups), len(classes)), dtype=np.int64)
    for c, rack in {(int(c), int(r)) for c, r in zip(member_class, lay.member_rack)}:
        class_cross[:, c] = np.minimum(class_cross[:, c], lay.cross[:, rack])
    owner_of = owners(instance)
    owned = owned_by_group(instance, lay)
    return LevelSpace(lay, classes, member_class, count, member_of, sizes, group_topic, class_cross, owned,
                      len(owner_of), len(owner_of) + 1, np.zeros((0, T), dtype=np.int64), np.zeros(0))


def level_space(instance: ConsumersInstance, lay: Layout, max_vectors: int = MAX_VECTORS) -> LevelSpace | None:
    """The filtered, bounded level vectors; ``None`` when the box has more than ``max_vectors``."""
    space = level_base(instance, lay)
    lo, hi, _, _ = topic_levels(lay, dict(zip(lay.topics, space.sizes.tolist())), space.classes, space.count)
    T = len(lay.topics)
    box = 1
    for t in lay.topics:
        box *= max(0, hi[t] - lo[t] + 1)
        if box > max_vectors:
            return None
    ranges = [np.arange(lo[t], hi[t] + 1, dtype=np.int64) for t in lay.topics]
    vectors = (np.stack(np.meshgrid(*ranges, indexing="ij"), axis=-1).reshape(-1, T) if T
               else np.zeros((1, 0), dtype=np.int64))
    kept, bounds = [], []
    for at in range(0, len(vectors), SCREEN_CHUNK):  # (chunk, classes, topics) arrays stay small
        chunk = vectors[at:at + SCREEN_CHUNK]
        ok, bound = _screen(space, chunk)
        kept.append(chunk[ok])
        bounds.append(bound[ok])
    return LevelSpace(**{**space.__dict__, "vectors": np.concatenate(kept) if kept else vectors,
                         "bounds": np.concatenate(bounds) if bounds else np.zeros(0)})


def _mu(space: LevelSpace, vectors: np.ndarray) -> np.ndarray:
    """``μ_c`` per vector and class (0 for a class without topics)."""
    masked = np.where(space.member_of[None, :, :], vectors[:, None, :], -1)
    return np.maximum(masked.max(axis=2), 0)


def _allowed(space: LevelSpace, vectors: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """(V, classes, topics): class c's members may hold topic t (low ones at least)."""
    return space.member_of[None] & (vectors[:, None, :] >= mu[:, :, None] - 1)


def _screen(space: LevelSpace, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Necessary conditions and lower bounds of each vector (module docstring); the bound of a vector
    that fails a condition is meaningless."""
    mu = _mu(space, vectors)
    active = space.member_of.any(axis=1)
    n = np.where(active, space.count, 0)
    total = int(space.sizes.sum())
    ok = (mu @ n <= total) & ((mu + 1) @ n >= total)
    bound = np.full(len(vectors), np.inf)
    if not ok.any():
        return ok, bound
    vectors, mu, where = vectors[ok], mu[ok], np.nonzero(ok)[0]
    allowed = _allowed(space, vectors, mu)
    top = vectors[:, None, :] == mu[:, :, None]
    cap = np.where(allowed, mu[:, :, None] + top, 0) * n[None, :, None]
    fine = (np.minimum(cap.sum(axis=1), space.sizes[None]) >= space.sizes[None]).all(axis=1)
    groups_allowed = allowed[:, :, space.group_topic]                     # (V, classes, groups)
    cost = np.where(groups_allowed, space.class_cross.T[None], 2).min(axis=1)  # (V, groups)
    fine &= (cost <= 1).all(axis=1)
    sizes = np.array([g.size for g in space.layout.groups], dtype=np.int64)
    found = (space.weight * (cost @ sizes)).astype(np.float64)
    if space.owned:
        lay = space.layout
        pairs = list(space.owned)
        pg = np.array([g for g, _ in pairs], dtype=np.int64)
        pm = np.array([m for _, m in pairs], dtype=np.int64)
        pn = np.array([len(space.owned[p]) for p in pairs], dtype=np.int64)
        pc = space.member_class[pm]
        kept = allowed[:, pc, space.group_topic[pg]] & (lay.cross[pg, lay.member_rack[pm]][None] <= cost[:, pg])
        found += ((~kept) * pn).sum(axis=1)
        owner_ids, owner_of_pair = np.unique(pm, return_inverse=True)
        keepable = np.zeros((len(vectors), len(owner_ids)), dtype=np.int64)
        np.add.at(keepable.T, owner_of_pair, (kept * pn).T)
        # an owner holds at most μ + 1
        found += np.maximum(0, keepable - mu[:, space.member_class[owner_ids]] - 1).sum(axis=1)
    ok[where] = fine
    bound[where] = found
    return ok, bound


@dataclass(frozen=True)
class FixedModel:
    """The MILP of one level vector: per node (owner or group of plain members) its flows."""

    nodes: tuple[tuple[int, ...], ...]  # members of each node (owners alone)
    owner: tuple[bool, ...]             # the node is one owner
    mu: tuple[int, ...]
    flows: np.ndarray                   # rows (g, node, column, is_b)
    keeps: np.ndarray                   # rows (g, member, column)
    high: np.ndarray                    # η column per node
    lp: object


@dataclass(frozen=True)
class Arcs:
    """Every (node, partition group) pair a level vector may open, built once per instance."""

    nodes: tuple[tuple[int, ...], ...]
    owner: tuple[bool, ...]
    node_class: np.ndarray
    node_size: np.ndarray
    arc_node: np.ndarray
    arc_group: np.ndarray
    arc_cost: np.ndarray
    arc_owned: np.ndarray   # owned partitions of g the node's owner may keep (0 for plain nodes)


def arcs(space: LevelSpace, best: np.ndarray | None = None) -> Arcs:
    """The pairs; with ``best`` (per partition group, a cross-rack cost) only those at that cost."""
    lay = space.layout
    is_owner = np.zeros(len(lay.members), dtype=bool)
    is_owner[[m for _, m in space.owned]] = True
    plain: dict[tuple[int, int], list[int]] = {}
    nodes: list[tuple[int, ...]] = []
    for m in range(len(lay.members)):
        c = int(space.member_class[m])
        if not space.member_of[c].any():
            continue
        if is_owner[m]:
            nodes.append((m,))
        else:
            plain.setdefault((int(lay.member_rack[m]), c), []).append(m)
    owner = (True,) * len(nodes) + (False,) * len(plain)
    nodes.extend(tuple(ms) for ms in plain.values())
    node_class = np.array([space.member_class[ms[0]] for ms in nodes], dtype=np.int64)
    node_rack = np.array([lay.member_rack[ms[0]] for ms in nodes], dtype=np.int64)
    opens = space.member_of[node_class][:, space.group_topic]            # (nodes, groups)
    if best is not None:
        opens &= lay.cross[:, node_rack].T <= best[None, :]
    arc_node, arc_group = np.nonzero(opens)
    owned = np.array([len(space.owned.get((int(g), nodes[v][0]), ())) if owner[v] else 0
                      for v, g in zip(arc_node, arc_group)], dtype=np.int64)
    return Arcs(tuple(nodes), owner, node_class, np.array([len(ms) for ms in nodes], dtype=np.int64),
                arc_node, arc_group, space.weight * lay.cross[arc_group, node_rack[arc_node]], owned)


def fixed_model(space: LevelSpace, vector: np.ndarray, net: Arcs | None = None) -> FixedModel:
    net = net or arcs(space)
    mu_c = _mu(space, vector[None])[0]
    mu = mu_c[net.node_class]
    level = vector[space.group_topic[net.arc_group]]
    live = level >= mu[net.arc_node] - 1
    node, group, cost, owned = net.arc_node[live], net.arc_group[live], net.arc_cost[live], net.arc_owned[live]
    is_b = (level[live] < mu[node]).astype(np.int64)
    sizes = np.array([g.size for g in space.layout.groups], dtype=np.float64)
    N, K = len(net.nodes), len(node)
    b = SparseBuilder()
    high = b.add_cols(N, 0.0, net.node_size.astype(np.float64), integer=True)
    # an arc's flow is y = z + k: z partitions from the pool, k of the owner's own (k <= y for free)
    ys = b.add_cols(K, 0.0, np.minimum(sizes[group], net.node_size[node] * (mu[node] + 1)), integer=True,
                    cost=cost.astype(np.float64))
    has_keep = owned > 0
    ks = b.add_cols(int(has_keep.sum()), 0.0, owned[has_keep].astype(np.float64), integer=True,
                    cost=cost[has_keep].astype(np.float64) - 1.0)
    nk = len(ks)
    keep_arc = np.nonzero(has_keep)[0]

    def flow_rows(count: int, arc_rows: np.ndarray, arcs_of: np.ndarray, extra_rows=(), extra_cols=(), extra_vals=(),
                  lo=-np.inf, hi=np.inf, arc_vals=1.0) -> None:
        """Rows over the flows ``y`` of the arcs ``arcs_of`` (each row ``arc_rows``), plus extra entries."""
        with_k = has_keep[arcs_of]
        vals = np.broadcast_to(np.asarray(arc_vals, dtype=np.float64), (len(arcs_of),))
        kcol = ks[np.searchsorted(keep_arc, arcs_of[with_k])]
        b.add_rows(count, np.r_[arc_rows, arc_rows[with_k], extra_rows], np.r_[ys[arcs_of], kcol, extra_cols],
                   np.r_[vals, vals[with_k], extra_vals], lo, hi)

    every = np.arange(K)
    nmu = (net.node_size * mu).astype(np.float64)
    flow_rows(N, node, every, np.arange(N), high, -np.ones(N), nmu, nmu)
    bsel = np.nonzero(is_b)[0]
    flow_rows(N, node[bsel], bsel, np.arange(N), high, mu.astype(np.float64), -np.inf, nmu)
    _keep_cuts(b, node[has_keep], is_b[has_keep], owned[has_keep], ks, high, mu, N)
    G = len(sizes)
    flow_rows(G, group, every, lo=sizes, hi=sizes)
    flows = np.stack([group, node, ys, is_b], axis=1)
    keeps = np.stack([group[has_keep], np.array([net.nodes[v][0] for v in node[has_keep]], dtype=np.int64),
                      ks], axis=1) if nk else np.zeros((0, 3), dtype=np.int64)
    return FixedModel(net.nodes, net.owner, tuple(int(v) for v in mu), flows, keeps, high, b.build())


def _keep_cuts(b: SparseBuilder, node: np.ndarray, is_b: np.ndarray, owned: np.ndarray, ks: np.ndarray,
               high: np.ndarray, mu: np.ndarray, N: int) -> None:
    """Per owner node (``η`` binary), the hull of its two modes on what it keeps: low keeps at most
    ``a = min(μ, owned on A and B)``, high at most ``b = min(μ + 1, owned on A)`` and nothing of B, so
    ``Σ k <= a (1 - η) + b η`` and ``Σ_B k <= owned_B (1 - η)``. Valid for every integer point; the LP
    relaxation, which otherwise lets a sliver of ``η`` buy a whole high member's keeping, gets tight."""
    if not len(node):
        return
    own_all = np.bincount(node, weights=owned, minlength=N)
    own_b = np.bincount(node, weights=owned * is_b, minlength=N)
    a = np.minimum(mu, own_all)
    top = np.minimum(mu + 1, own_all - own_b)
    nodes = np.unique(node)
    local = np.searchsorted(nodes, node)
    R = len(nodes)
    b.add_rows(R, np.r_[local, np.arange(R)], np.r_[ks, high[nodes]], np.r_[np.ones(len(ks)), a[nodes] - top[nodes]],
               -np.inf, a[nodes])
    with_b = np.unique(node[is_b.astype(bool)])
    if len(with_b):
        sel = is_b.astype(bool)
        local_b = np.searchsorted(with_b, node[sel])
        RB = len(with_b)
        b.add_rows(RB, np.r_[local_b, np.arange(RB)], np.r_[ks[sel], high[with_b]],
                   np.r_[np.ones(int(sel.sum())), own_b[with_b]], -np.inf, own_b[with_b])


def read_back(space: LevelSpace, model: FixedModel, x: np.ndarray) -> dict[str, tuple[str, ...]]:
    """Owners keep their first ``k`` owned partitions of g and take the rest of ``y`` from g's pool; a
    group's ``η`` high members take ``μ + 1`` of its A partitions, the others the B ones and the rest."""
    lay = space.layout
    v = np.rint(x).astype(np.int64).tolist()  # Python ints: read one by one below
    lists: list[list[str]] = [[] for _ in lay.members]
    kept = {(g, m): v[k] for g, m, k in model.keeps.tolist()}
    taken: list[set[int]] = [set() for _ in lay.groups]
    for (g, m), n in kept.items():
        mine = space.owned[(g, m)][:n]
        lists[m].extend(f"{lay.groups[g].topic}-{p}" for p in mine)
        taken[g].update(mine)
    pools = [[p for p in grp.partitions if p not in taken[g]] for g, grp in enumerate(lay.groups)]
    cursor = [0] * len(lay.groups)
    got: list[tuple[list[str], list[str]]] = [([], []) for _ in model.nodes]
    for g, node, col, is_b in model.flows.tolist():
        amount = v[col]  # from the pool; the node's own kept ones are listed already
        at = cursor[g]
        cursor[g] = at + amount
        got[node][is_b].extend(f"{lay.groups[g].topic}-{p}" for p in pools[g][at:at + amount])
    if any(c != len(p) for c, p in zip(cursor, pools)):
        raise ValueError("the flows do not cover every partition")
    for node, members in enumerate(model.nodes):
        a_list, b_list = got[node]
        mu, eta = model.mu[node], v[model.high[node]]
        if model.owner[node]:  # its kept partitions are already in its list; high owners take no B
            lists[members[0]].extend(a_list + b_list)
            continue
        order = a_list[:(mu + 1) * eta] + b_list + a_list[(mu + 1) * eta:]
        at = 0
        for i, m in enumerate(members):
            share = mu + 1 if i < eta else mu
            lists[m].extend(order[at:at + share])
            at += share
        if at != len(order):
            raise ValueError(f"node {node}: {len(order)} partitions, {at} dealt")
    return {m: tuple(lists[i]) for i, m in enumerate(lay.members)}


@dataclass(frozen=True)
class SearchResult:
    assignment: dict[str, tuple[str, ...]] | None
    value: float | None     # rule objective of ``assignment`` as the model counts it
    bound: float            # valid lower bound on the rule's optimum
    info: dict


def search_levels(instance: ConsumersInstance, lay: Layout, incumbent: float | None = None,
                  deadline: float | None = None, threads: int | None = None,
                  max_vectors: int = MAX_VECTORS, best: np.ndarray | None = None) -> SearchResult | None:
    """Best assignment over the level box (``None`` if the box is too large); see the module docstring.

    ``incumbent``: the value of an answer already in hand (vectors that cannot beat it are skipped; the
    result's ``assignment`` is then ``None`` when none does). ``deadline``: a ``time.perf_counter()``
    instant after which no further vector is started and a running solve is cut. ``best``: per
    partition group its least cross-rack cost, when the incumbent already has the balance-free least
    cross-rack count; then every answer that beats it gives each partition to a member at that cost,
    and only those pairs enter the models (a vector whose every answer costs more cannot beat the
    incumbent, so the bound stays valid).
    """
    t0 = time.perf_counter()
    if not lay.topics:  # nothing to assign: the dec-min answer is the only one
        return None
    space = level_space(instance, lay, max_vectors)
    if space is None:
        return None
    order = np.argsort(space.bounds, kind="stable")
    best_value = np.inf if incumbent is None else float(incumbent)
    found = None
    relaxed = solved = 0
    open_bound = np.inf   # least lower bound of the vectors not settled
    net = arcs(space, best if incumbent is not None else None)
    for i in order:
        bound = float(space.bounds[i])
        if bound >= best_value:
            break
        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None and left <= 0.01:
            open_bound = min(open_bound, bound)
            break
        model = fixed_model(space, space.vectors[i], net)
        lp = solve_lp(replace(model.lp, integrality=None), time_limit=left, threads=threads)
        relaxed += 1
        if lp.status == "infeasible":
            continue
        if lp.status != "optimal" or lp.objective is None:
            open_bound = min(open_bound, bound)
            continue
        bound = max(bound, math.ceil(lp.objective - 1e-6) + space.owned_total)
        if bound >= best_value:
            continue
        result = lp
        if not is_integral(lp.x):
            left = None if deadline is None else deadline - time.perf_counter()
            # only an answer below the best counts (objectives are integers): HiGHS prunes the rest,
            # and "infeasible" then means this vector cannot beat it
            cutoff = None if not np.isfinite(best_value) else best_value - space.owned_total - 0.5
            result = solve_lp(model.lp, integer=True, time_limit=left, threads=threads, cutoff=cutoff)
            solved += 1
            if result.status == "infeasible":
                continue
            if result.status != "optimal":
                open_bound = min(open_bound, bound if result.bound is None
                                 else max(bound, float(result.bound) + space.owned_total))
        if result.x is not None and result.objective is not None:
            value = float(round(result.objective)) + space.owned_total
            if value < best_value:
                best_value, found = value, read_back(space, model, result.x)
    info = {"level_vectors": int(len(space.vectors)), "level_relaxed": relaxed, "level_milps": solved,
            "level_seconds": round(time.perf_counter() - t0, 6)}
    return SearchResult(found, None if found is None else best_value, float(min(best_value, open_bound)), info)
