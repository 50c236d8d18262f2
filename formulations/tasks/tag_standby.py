r"""``exact.tag_standby``: the KIP-708 rule ``tag_standby`` solved exactly (rule: :mod:`.rules`).

Actives are the instance's (each task active on exactly one client ``a(t)``),
every stateful task gets ``σ = min(num_standby_replicas, |C| − 1)`` standbys
off ``a(t)``, and lexicographically (1) the tag shortfall ``D`` is minimised,
i.e. the distinct tag values over each task's hosts are maximised, then (2)
the standby imbalance per thread ``J``.

Profiles. With tag keys ``K`` a client's *profile* is ``π(c) = (tag_k(c))_{k∈K}``
(``None`` where it lacks key k); clients of one profile are interchangeable
for distinctness. Let ``P`` be the profiles and ``N_p`` the clients of p.

Stage 1 is separable by task and depends only on the active's profile
``q = π(a(t))``: a task's standby profiles are a vector ``m ∈ ℤ^P_{≥0}`` with
``Σ_p m_p = σ`` and ``m_p <= N_p − [p = q]``, and its distinct values are
``δ_q(m) = Σ_k |{q_k} ∪ {p_k : m_p > 0}| ∖ {None}``. So ``D* = Σ_t (ideal −
max_m δ_{q(t)}(m))``, and the optimal vectors ``O_q = argmax_m δ_q(m)`` (the
*options*) are enumerated per active profile q (at most :data:`MAX_OPTIONS`;
beyond that the ungrouped model decides). A task meets stage 1 at its
optimum iff its standby profiles form an option of its q.

Stage 2, grouped. Tasks form classes κ: by active profile q, or by active
client when some option of q uses q's own group (then the active client
itself must be excluded, which profile-level counts cannot see). Class κ
has ``m_κ`` tasks, options ``O_κ`` and clients ``A_κ`` (all clients, minus
the active one for a client class):

    Σ_{o∈O_κ} w[κ,o] = m_κ                                    ∀κ
    Σ_{c ∈ A_κ, π(c) = p} y[κ,c] = Σ_o m^o_p · w[κ,o]         ∀κ, p
    y[κ,c] <= Σ_o [m^o_p >= 1] · w[κ,o]    (c ∈ p; only if some m^o_p >= 2)
    k_c·U >= s_c := Σ_κ y[κ,c] >= k_c·L                       ∀c
    min U − L;      w, y, U, L integer,

``w[κ,o]`` tasks of κ using option o, ``y[κ,c]`` of them with a standby on c.
Every optimal assignment maps to a solution of this program (so its optimum
is a lower bound on ``J``), and a solution maps back to an assignment when,
per class and profile, tasks demanding ``m^o_p`` distinct clients can be
matched to the clients' ``y`` — a bipartite degree-sequence question that the
greedy of Gale and Ryser (largest demand first, each to the clients of
largest remaining supply) answers exactly. With 0/1 options (the common
case) it always succeeds. Should it fail, the ungrouped model below decides.

It is solved by :mod:`kipopt.formulations.tasks.tag_balance`, not as one
MIP: with ``U`` and ``L`` fixed it is a feasibility problem (with σ = 1 a
transportation problem, solved aggregated over clients serving the same
classes), so the levels are scanned from the least ``U − L`` up and the first
feasible pair is optimal (100,000 tasks × 5,000 clients: ``U − L = 1``, proven
in about a second, where the MIP had not finished in 20 s with the start's 15).

Size: ``Σ_κ |O_κ| + Σ_κ |A_κ| + 2`` columns (at most ``P·(|O| + |C|)`` with
profile classes: independent of the number of tasks) and ``#κ + #κ·P + 2|C|``
rows (plus the cover rows of non-0/1 options).

Ungrouped model (:func:`solve_ungrouped`, for checks and as the fallback):
``x[t,c] ∈ {0,1}`` for c ≠ a(t), ``Σ_c x[t,c] = σ``; indicators
``z[t,k,v] <= [tag_k(a(t)) = v] + Σ_{c: tag_k(c) = v} x[t,c]``, ``z <= 1``;
stage 1 ``max Σ z``, stage 2 ``min U − L`` with the same load rows.

>>> from kipopt.datasets.scenarios import load_scenario
>>> x = load_scenario("kip708_nine_clients")
>>> r = run_tag_standby(x, SolveOptions())
>>> r.status.value, r.objective, sorted(c for c, roles in r.assignment.items() if roles.standby)
('optimal', 1.0, ['Node-5', 'Node-9'])
"""

from __future__ import annotations

import functools
import heapq
import itertools
import time
from collections import defaultdict
from dataclasses import astuple, dataclass

import numpy as np

from kipopt.evaluation.tasks import tag_keys
from kipopt.instance import TasksInstance
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solution import Status, TaskRoles

from kipopt.formulations.tasks.guard import guarded, tagged_standbys
from kipopt.formulations.highs import SparseBuilder, solve_lexicographic
from kipopt.formulations.tasks.tag_balance import GroupedModel, greedy_start, scan_levels, transport_form
from kipopt.formulations.tasks.rack.model import unique_owners, unique_owners_reason
from kipopt.formulations.tasks.rules import lexicographic, standby_target, tag_standby_levels, tag_standby_objective

MAX_OPTIONS = 20_000
"""Most option vectors enumerated per active profile before the ungrouped model takes over."""


@dataclass(frozen=True)
class Profiles:
    """Clients grouped by tag profile: ``of[c]`` the profile index of client c, ``members[p]`` its clients."""

    keys: tuple[str, ...]
    values: tuple[tuple[str | None, ...], ...]
    of: np.ndarray
    members: tuple[np.ndarray, ...]

    @property
    def size(self) -> np.ndarray:
        return np.array([len(m) for m in self.members], dtype=np.int64)


def profiles(instance: TasksInstance) -> Profiles:
    keys = tag_keys(instance)
    clients = instance.client_ids
    prof = [tuple(instance.clients[c].tags.get(k) for k in keys) for c in clients]
    values = tuple(sorted(set(prof), key=lambda v: tuple((x is None, x or "") for x in v)))
    index = {v: i for i, v in enumerate(values)}
    of = np.array([index[v] for v in prof], dtype=np.int64)
    return Profiles(keys, values, of, tuple(np.nonzero(of == p)[0] for p in range(len(values))))


def distinct(pr: Profiles, q: int, used: tuple[int, ...]) -> int:
    """``δ_q``: distinct values over the keys of profile q and the profiles ``used``."""
    total = 0
    for k in range(len(pr.keys)):
        seen = {pr.values[q][k]} | {pr.values[p][k] for p in used}
        seen.discard(None)
        total += len(seen)
    return total


def options(pr: Profiles, q: int, sigma: int) -> tuple[int, tuple[np.ndarray, ...]] | None:
    """``(max δ_q, the optimal option vectors)``; ``None`` when there are more than :data:`MAX_OPTIONS`.

    Only the *set* of profiles used decides δ, so the optimal sets are found
    first (by size, at most σ), then expanded to every multiplicity vector
    that fits the group sizes.
    """
    avail = pr.size - (np.arange(len(pr.values)) == q)
    groups = [p for p in range(len(pr.values)) if avail[p] > 0]
    best, found = -1, []
    for size in range(1, min(sigma, len(groups)) + 1):
        for used in itertools.combinations(groups, size):
            if sum(min(avail[p], sigma) for p in used) < sigma:
                continue
            d = distinct(pr, q, used)
            if d > best:
                best, found = d, [used]
            elif d == best:
                found.append(used)
            if len(found) > MAX_OPTIONS:
                return None
    out: list[np.ndarray] = []
    for used in found:
        for m in _multiplicities([int(avail[p]) for p in used], sigma):
            vec = np.zeros(len(pr.values), dtype=np.int64)
            vec[list(used)] = m
            out.append(vec)
            if len(out) > MAX_OPTIONS:
                return None
    return best, tuple(out)


def _multiplicities(caps: list[int], total: int):
    """Every vector ``m`` with ``1 <= m_i <= caps[i]`` and ``Σ m = total``."""
    if len(caps) == 1:
        if 1 <= total <= caps[0]:
            yield (total,)
        return
    rest = sum(caps[1:])
    for first in range(max(1, total - rest), min(caps[0], total - (len(caps) - 1)) + 1):
        for tail in _multiplicities(caps[1:], total - first):
            yield (first, *tail)


@dataclass(frozen=True)
class Grouped:
    """Classes of stateful tasks: ``tasks``, options, allowed clients, and the excluded active client."""

    tasks: tuple[tuple[int, ...], ...]
    options: tuple[tuple[np.ndarray, ...], ...]
    excluded: tuple[int, ...]          # client index, or -1 for a profile class
    best: dict[int, int]               # active profile -> max δ


def grouped_classes(pr: Profiles, owner: np.ndarray, stateful: np.ndarray, sigma: int) -> Grouped | None:
    """Classes of the module docstring (``owner[t]`` the active client index of task t)."""
    opts: dict[int, tuple[int, tuple[np.ndarray, ...]]] = {}
    keyed: dict[tuple[int, int], list[int]] = defaultdict(list)
    for t in np.nonzero(stateful)[0].tolist():
        q = int(pr.of[owner[t]])
        if q not in opts:
            found = options(pr, q, sigma)
            if found is None:
                return None
            opts[q] = found
        own_group = any(o[q] > 0 for o in opts[q][1])
        keyed[(q, int(owner[t]) if own_group else -1)].append(t)
    keys = sorted(keyed)
    return Grouped(tuple(tuple(keyed[k]) for k in keys), tuple(opts[k[0]][1] for k in keys),
                   tuple(k[1] for k in keys), {q: v[0] for q, v in opts.items()})


def solve_grouped(pr: Profiles, cl: Grouped, capacity: np.ndarray, time_limit: float | None,
                  threads: int | None):
    """The stage-2 program by :func:`~kipopt.formulations.tasks.tag_balance.scan_levels`; returns
    ``(LexResult, w columns, y columns, allowed clients, lp)``."""
    m = build_grouped(pr, cl, capacity)
    res = scan_levels(m, capacity, time_limit, threads)
    return res, m.w_cols, m.y_cols, m.allowed, m.lp


def build_grouped(pr: Profiles, cl: Grouped, capacity: np.ndarray) -> GroupedModel:
    """The stage-2 program (objective ``U − L``) and the greedy start."""
    b = SparseBuilder()
    C = len(capacity)
    total = sum(len(ts) for ts in cl.tasks)
    w_cols, y_cols, allowed = [], [], []
    for ts, opts, ex in zip(cl.tasks, cl.options, cl.excluded):
        clients = np.array([c for c in range(C) if c != ex and any(o[pr.of[c]] > 0 for o in opts)], dtype=np.int64)
        w_cols.append(b.add_cols(len(opts), 0.0, len(ts), integer=True))
        y_cols.append(b.add_cols(len(clients), 0.0, len(ts), integer=True))
        allowed.append(clients)
    U, L = b.add_cols(2, 0.0, float(total), integer=True)
    for ts, opts, w, y, clients in zip(cl.tasks, cl.options, w_cols, y_cols, allowed):
        b.add_row(w, 1.0, len(ts), len(ts))
        m = np.stack(opts)  # |O| × P
        for p in np.nonzero(m.sum(axis=0))[0]:
            here = pr.of[clients] == p
            b.add_row(np.concatenate([y[here], w]), np.concatenate([np.ones(here.sum()), -m[:, p]]), 0.0, 0.0)
            if m[:, p].max() >= 2:
                uses = (m[:, p] >= 1).astype(np.float64)
                for col in y[here]:
                    b.add_row(np.concatenate([[col], w]), np.concatenate([[1.0], -uses]), -np.inf, 0.0)
    ys = np.concatenate(y_cols) if y_cols else np.zeros(0, dtype=np.int64)
    yc = np.concatenate(allowed) if allowed else np.zeros(0, dtype=np.int64)
    cap = capacity.astype(np.float64)
    b.add_rows(C, np.concatenate([yc, np.arange(C)]), np.concatenate([ys, np.full(C, U)]),
               np.concatenate([-np.ones(len(ys)), cap]), 0.0, np.inf)
    b.add_rows(C, np.concatenate([yc, np.arange(C)]), np.concatenate([ys, np.full(C, L)]),
               np.concatenate([np.ones(len(ys)), -cap]), 0.0, np.inf)
    cost = np.zeros(b.num_col)
    cost[U], cost[L] = 1.0, -1.0
    lp = b.build(cost)
    start = functools.partial(greedy_start, pr, cl, capacity, lp.num_col, w_cols, y_cols, allowed, int(U), int(L))
    copies = sum(len(ts) * int(opts[0].sum()) for ts, opts in zip(cl.tasks, cl.options))
    unit = all(int(o.sum()) == 1 for opts in cl.options for o in opts)
    unit_profile = [np.array([int(np.argmax(o)) for o in opts]) for opts in cl.options] if unit else None
    transport = transport_form([len(ts) for ts in cl.tasks], allowed, pr.of) if unit else None
    return GroupedModel(lp, w_cols, y_cols, allowed, int(U), int(L), start, copies, capacity, pr.of, unit_profile,
                        transport)


def disaggregate(pr: Profiles, cl: Grouped, x: np.ndarray, w_cols, y_cols, allowed) -> dict[int, list[int]] | None:
    """Task -> standby clients from the class counts (Gale–Ryser greedy); ``None`` if no matching exists."""
    out: dict[int, list[int]] = {}
    for ts, opts, w, y, clients in zip(cl.tasks, cl.options, w_cols, y_cols, allowed):
        counts = np.rint(x[w]).astype(np.int64)
        need_of = np.stack(opts)[np.repeat(np.arange(len(opts)), counts)]  # per task (in order) its option
        task_arr = np.array(ts, dtype=np.int64)
        supply = dict(zip(clients.tolist(), np.rint(x[y]).astype(np.int64).tolist()))
        for t in ts:
            out[t] = []
        for p in sorted({int(p) for o in opts for p in np.nonzero(o)[0]}):
            here = clients[pr.of[clients] == p].tolist()
            needs = need_of[:, p]
            users = np.nonzero(needs > 0)[0]
            users = users[np.argsort(-needs[users], kind="stable")]  # largest demand first, then task order
            demand = zip(needs[users].tolist(), task_arr[users].tolist())
            heap = [(-supply[c], c) for c in here]  # the clients with the most supply left, then by index
            heapq.heapify(heap)
            for need, t in demand:
                best = [heapq.heappop(heap)[1] for _ in range(min(need, len(heap)))]
                if len(best) < need or supply[best[-1]] <= 0:
                    return None
                for c in best:
                    supply[c] -= 1
                    heapq.heappush(heap, (-supply[c], c))
                out[t].extend(best)
        if any(v != 0 for v in supply.values()):
            return None
    return out


def solve_ungrouped(instance: TasksInstance, time_limit: float | None = None, threads: int | None = None):
    """The per-task model of the module docstring; returns ``(LexResult, task -> clients)``."""
    clients, tasks = instance.client_ids, instance.task_ids
    owner_of = unique_owners(instance)
    cindex = {c: j for j, c in enumerate(clients)}
    sigma = standby_target(instance)
    keys = tag_keys(instance)
    stateful = [i for i, t in enumerate(tasks) if instance.tasks[t].stateful]
    b = SparseBuilder()
    x_cols: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    z_all = []
    for i in stateful:
        a = cindex[owner_of[tasks[i]]]
        cs = np.array([c for c in range(len(clients)) if c != a], dtype=np.int64)
        xs = b.add_cols(len(cs), 0.0, 1.0, integer=True)
        x_cols[i] = (cs, xs)
        b.add_row(xs, 1.0, sigma, sigma)
        for k in keys:
            values = sorted({v for c in clients if (v := instance.clients[c].tags.get(k)) is not None})
            mine = instance.clients[clients[a]].tags.get(k)
            for v in values:
                z = int(b.add_cols(1, 0.0, 1.0)[0])
                z_all.append(z)
                if v == mine:
                    continue
                carriers = xs[[instance.clients[clients[c]].tags.get(k) == v for c in cs]]
                b.add_row(np.concatenate([[z], carriers]), np.concatenate([[1.0], -np.ones(len(carriers))]),
                          -np.inf, 0.0)
    C = len(clients)
    U, L = b.add_cols(2, 0.0, float(len(tasks)), integer=True)
    rows = np.concatenate([cs for cs, _ in x_cols.values()]) if x_cols else np.zeros(0, dtype=np.int64)
    cols = np.concatenate([xs for _, xs in x_cols.values()]) if x_cols else np.zeros(0, dtype=np.int64)
    cap = np.array([instance.clients[c].capacity for c in clients], dtype=np.float64)
    b.add_rows(C, np.concatenate([rows, np.arange(C)]), np.concatenate([cols, np.full(C, U)]),
               np.concatenate([-np.ones(len(cols)), cap]), 0.0, np.inf)
    b.add_rows(C, np.concatenate([rows, np.arange(C)]), np.concatenate([cols, np.full(C, L)]),
               np.concatenate([np.ones(len(cols)), -cap]), 0.0, np.inf)
    lp = b.build()
    spread, balance = np.zeros(lp.num_col), np.zeros(lp.num_col)
    spread[z_all] = -1.0
    balance[U], balance[L] = 1.0, -1.0
    res = solve_lexicographic(lp, [spread, balance], time_limit, threads)
    chosen = {}
    if res.x is not None:
        chosen = {i: cs[np.rint(res.x[xs]) > 0.5].tolist() for i, (cs, xs) in x_cols.items()}
    return res, chosen


def greedy_standbys(pr: Profiles, owner: np.ndarray, stateful: np.ndarray, sigma: int,
                    capacity: np.ndarray) -> dict[int, list[int]]:
    """Each stateful task's σ standbys one by one: most new tag values first, then least loaded per thread."""
    load = np.zeros(len(capacity), dtype=np.int64)
    out: dict[int, list[int]] = {}
    for t in np.nonzero(stateful)[0].tolist():
        hosts = [int(owner[t])]
        for _ in range(sigma):
            used = tuple(int(pr.of[h]) for h in hosts[1:])
            gain = np.array([distinct(pr, int(pr.of[hosts[0]]), used + (int(pr.of[c]),)) for c in range(len(load))])
            gain[hosts] = -1
            c = int(np.lexsort((np.arange(len(load)), load / capacity, -gain))[0])
            hosts.append(c)
            load[c] += 1
        out[t] = hosts[1:]
    return out


def to_assignment(instance: TasksInstance, standbys: dict[int, list[int]]) -> dict[str, TaskRoles]:
    clients, tasks = instance.client_ids, instance.task_ids
    lists: list[list[str]] = [[] for _ in clients]
    for i in sorted(standbys):
        for c in standbys[i]:
            lists[c].append(tasks[i])
    return {cid: TaskRoles(instance.clients[cid].active, tuple(lists[j])) for j, cid in enumerate(clients)}


def run_tag_standby(instance: TasksInstance, options: SolveOptions) -> MethodResult:
    """``exact.tag_standby``: stage 1 by enumeration per active profile, stage 2 grouped (module docstring)."""
    t0 = time.perf_counter()
    owner_of = unique_owners(instance)
    clients, tasks = instance.client_ids, instance.task_ids
    cindex = {c: j for j, c in enumerate(clients)}
    sigma = standby_target(instance)
    stateful = np.array([instance.tasks[t].stateful for t in tasks])
    if sigma == 0 or not stateful.any():
        assignment = to_assignment(instance, {})
        objective = tag_standby_objective(instance, assignment)
        return MethodResult(assignment, Status.OPTIMAL, objective, objective, info={"model": "tag-standby-trivial"})
    pr = profiles(instance)
    owner = np.array([cindex[owner_of[t]] for t in tasks], dtype=np.int64)
    classes = grouped_classes(pr, owner, stateful, sigma)
    capacity = np.array([instance.clients[c].capacity for c in clients], dtype=np.int64)
    info: dict = {"profiles": len(pr.values)}
    left = _left(options.time_limit, t0)
    standbys, grouped_bounds = None, None
    if classes is not None:
        res, w, y, allowed, lp = solve_grouped(pr, classes, capacity, left, options.threads)
        info.update(model="tag-standby-grouped", classes=len(classes.tasks), columns=lp.num_col, rows=lp.num_row)
        if res.x is not None:
            standbys = disaggregate(pr, classes, res.x, w, y, allowed)
        stage1 = _constant(instance, pr) - sum(len(ts) * classes.best[int(pr.of[owner[ts[0]]])]
                                               for ts in classes.tasks)
        values, bounds, stopped, message = (stage1, *res.values), (stage1, *res.bounds), res.stopped, res.message
        grouped_bounds = bounds  # a relaxation: its bounds stay valid whatever decides below
    if standbys is None:
        res, standbys = solve_ungrouped(instance, _left(options.time_limit, t0), options.threads)
        info.update(model="tag-standby-ungrouped", columns=None, rows=None)
        shift = _constant(instance, pr)  # stage 1 minimised -Σz; D = constant - Σz
        values = tuple(v + shift if i == 0 else v for i, v in enumerate(res.values))
        bounds = tuple(v + shift if i == 0 else v for i, v in enumerate(res.bounds))
        stopped, message = res.stopped, res.message
        if not standbys:  # the time limit struck before any incumbent: a greedy answer, the best bound known
            standbys = greedy_standbys(pr, owner, stateful, sigma, capacity)
            bounds = grouped_bounds or bounds
            stopped, message = (stopped if stopped is not None else 0), "time limit: greedy standbys"
            info.update(model="tag-standby-greedy")
    info.update(seconds_model=round(time.perf_counter() - t0, 6), stage_values=list(map(float, values)),
                stage_bounds=[float(v) if np.isfinite(v) else None for v in bounds])
    assignment = to_assignment(instance, standbys)
    levels = tag_standby_levels(instance, assignment)
    objective = lexicographic(instance, astuple(levels))
    if stopped is None:
        optimum = lexicographic(instance, values)
        if objective == optimum:
            return MethodResult(assignment, Status.OPTIMAL, objective, objective, info=info)
        return MethodResult(assignment, Status.FEASIBLE, objective, min(objective, optimum), info=info,
                            message=f"read-back lost optimality ({objective} vs {optimum}, levels {levels})")
    bound = _lex_bound(instance, bounds)
    return MethodResult(assignment, Status.FEASIBLE, objective, min(bound, objective), info=info,
                        message=message or "time limit")


def _left(limit: float | None, t0: float) -> float | None:
    return None if limit is None else max(0.0, limit - (time.perf_counter() - t0))


def _constant(instance: TasksInstance, pr: Profiles) -> float:
    """``D + Σ_t δ(t)``: the ideal over the stateful tasks plus the (fixed) shortfall of the stateless ones."""
    sigma = standby_target(instance)
    sizes = [len({v for v in vals if v is not None}) for vals in zip(*pr.values)] if pr.keys else []
    ideal = sum(min(1 + sigma, n) for n in sizes)
    stateful = sum(1 for t in instance.tasks.values() if t.stateful)
    if stateful == len(instance.tasks):
        return float(stateful * ideal)
    stateless = {c: TaskRoles(tuple(t for t in r.active if not instance.tasks[t].stateful))
                 for c, r in instance.clients.items()}
    return float(stateful * ideal + tag_standby_levels(instance, stateless).tag_shortfall)


def _lex_bound(instance: TasksInstance, bounds) -> float:
    levels = [max(0.0, float(np.ceil(b - 1e-6))) if np.isfinite(b) else 0.0 for b in bounds]
    levels += [0.0] * (2 - len(levels))
    return lexicographic(instance, levels[:2])


def start(instance: TasksInstance) -> dict[str, TaskRoles]:
    """The actives as they are and σ standbys per stateful task spread round robin: what a guarded run
    answers when its model cannot finish (:mod:`kipopt.formulations.tasks.guard`)."""
    actives = {cid: TaskRoles(instance.clients[cid].active) for cid in instance.client_ids}
    return tagged_standbys(instance, actives, standby_target(instance))


METHODS = [
    Method("exact.tag_standby", "tasks", "tag_standby", guarded(run_tag_standby, start, tag_standby_objective),
           "KIP-708 standbys exactly: distinct tag values per task (enumerated per active profile), then "
           "standby balance per thread (a level scan over profile classes)", requires=unique_owners_reason),
]
