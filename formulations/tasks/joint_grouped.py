r"""``exact.joint`` by client types: a relaxation over (task, client type) counts, realized client by client.

The ``joint`` rule (:mod:`kipopt.formulations.tasks.joint_stages`) reads a
placement of task t on client c through: whether c is most caught up for t,
c's rack (traffic), c's tag values (tags), whether c holds t now (non-overlap)
and c's total count (balance). Call a client *special* for t when it is one of
t's listed most caught-up clients, holds t now (active or standby), or, when
t's silent clients are most caught up, lists a lag for t. Every other client of
a *type* τ = (rack, tag values) is, for t, like every other: same caught-up
status (the silent flag), same traffic, same tags, not a current holder.

Relaxation R. Per task: binaries ``a[t,c]``, ``s[t,c]`` on its special clients
(as in :mod:`.joint`); integers ``A[t,τ]``, ``S[t,τ]`` counting its active /
standbys on *generic* clients of τ, ``A + S <= g[t,τ]`` (its generic clients
there); per client an integer generic load ``m[c] <= u[c]`` (tasks it is
generic for) with ``Σ_{c∈τ} m[c] = Σ_t (A[t,τ] + S[t,τ])`` per type; the
rule's rows with ``n[c] = Σ_t (a[t,c] + s[t,c]) + m[c]``; tag indicators
``z[t,q] <= hosts of t with value q``. Each stage's objective is the rule's,
read through the same coefficients. Any assignment maps to a point of R with
the same stage values (count its generic placements by type, ``m[c]`` its
generic load), so R's lexicographic optimum is a lower bound of the rule's.

Realization. Given R's point, per type τ (:func:`~kipopt.formulations.tasks.joint_realize.realize`) fill a 0/1 matrix (tasks with
``d[t] = A + S > 0``) × (clients of τ) with row sums ``d[t]``, column sums
``m[c]``, and no 1 on a special pair: tasks by decreasing demand, each on the
clients of largest remaining ``m`` it may use (the Gale–Ryser greedy; a heap
per type, never a tasks × clients array). If every type is filled, the
assignment (the generic active on one of the task's clients of τ, its
standbys on the others) has exactly R's stage values: it is optimal, proven
by R's bound. If the greedy fails (special pairs can block it), the caller
falls back to the per-client model. Size: ``2·(specials + T·types) + S·V +
3|C|`` columns instead of ``(T + S)·|C|``.

Settled stages. Every stage is a non-negative count, so a stage the start
(:func:`~kipopt.formulations.tasks.joint.joint_start`) already has at 0, with
every stage before it at 0 too, is 0 at every lexicographic optimum; R then
states it as constraints rather than leaving HiGHS to discover it
(:func:`settled_stages`, :func:`build`): non-caught-up placements closed,
window excesses closed, exactly k standbys, and the tag indicators replaced
by one host per tag value (:func:`distinct_rows`), which also closes every
standby that would share a value with an active whose type is fixed. Closed
columns are not handed to HiGHS. At 5,000 tasks × 250 clients (9 types) that
leaves 47,605 columns whose traffic stage has an integral root LP
(2,500,000 binaries in the per-client program, which stopped in that stage).

>>> from kipopt.datasets import generate
>>> from kipopt.formulations.tasks.joint_realize import solve_grouped
>>> x = generate("tasks", 3, tasks=30, clients=9, tags=2)
>>> r = solve_grouped(x, time_limit=None)
>>> r.realized, r.result.status
(True, 'optimal')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from kipopt.costs import cross_rack_partitions
from kipopt.instance import TasksInstance
from kipopt.solution import TaskRoles

from kipopt.formulations.highs import SparseBuilder
from kipopt.formulations.tasks.joint_stages import JointScores, tag_values

STAGES = ("caught_up", "standbys", "tags", "balance", "traffic", "non_overlap")


@dataclass(frozen=True)
class Grouping:
    """Client types, and per task its special clients (``sp_task``/``sp_client``, one arc each) and its
    generic room per type (``gen_task``/``gen_type``/``gen_room``, only where ``gen_room > 0``)."""

    tasks: tuple[str, ...]
    clients: tuple[str, ...]
    stateful: np.ndarray        # per task
    client_type: np.ndarray     # per client
    type_rack: tuple[str | None, ...]
    type_tags: tuple[tuple[str | None, ...], ...]
    sp_task: np.ndarray
    sp_client: np.ndarray
    gen_task: np.ndarray
    gen_type: np.ndarray
    gen_room: np.ndarray
    generic_caught: np.ndarray  # per task: a generic client is most caught up (its silent flag)
    generic_for: np.ndarray     # per client: tasks it is generic for

    @property
    def num_types(self) -> int:
        return len(self.type_rack)


def grouping(instance: TasksInstance, scores: JointScores) -> Grouping:
    tasks, clients = instance.task_ids, instance.client_ids
    T, C = len(tasks), len(clients)
    cindex = {c: j for j, c in enumerate(clients)}
    tindex = {t: i for i, t in enumerate(tasks)}
    kinds: dict[tuple, int] = {}
    client_type = np.array([kinds.setdefault((instance.clients[c].rack,
                                              tuple(instance.clients[c].tags.get(g) for g in scores.keys)),
                                             len(kinds)) for c in clients], dtype=np.int64)
    special: list[set[int]] = [set() for _ in tasks]
    for c in clients:
        client = instance.clients[c]
        for t in (*client.active, *client.standby):
            special[tindex[t]].add(cindex[c])
    generic_caught = np.zeros(T, dtype=bool)
    stateful = np.array([instance.tasks[t].stateful for t in tasks], dtype=bool)
    for i, t in enumerate(tasks):
        if not stateful[i]:
            generic_caught[i] = True
            continue
        best = scores.best[t]
        special[i].update(cindex[c] for c in best.listed)
        generic_caught[i] = best.unlisted
    if generic_caught[stateful].any():  # silent clients are caught up: the clients listing a lag are special
        for c in clients:
            for t in instance.clients[c].lags:
                i = tindex.get(t)
                if i is not None and stateful[i] and generic_caught[i]:
                    special[i].add(cindex[c])
    sizes = np.fromiter(map(len, special), dtype=np.int64, count=T)
    sp_task = np.repeat(np.arange(T), sizes)
    sp_client = np.fromiter((c for s in special for c in sorted(s)), dtype=np.int64, count=int(sizes.sum()))
    K = len(kinds)
    room = np.tile(np.bincount(client_type, minlength=K), (T, 1))
    np.subtract.at(room, (sp_task, client_type[sp_client]), 1)
    gen_task, gen_type = np.nonzero(room)
    types = list(kinds)
    return Grouping(tasks, clients, stateful, client_type, tuple(k[0] for k in types), tuple(k[1] for k in types),
                    sp_task, sp_client, gen_task, gen_type, room[gen_task, gen_type], generic_caught,
                    T - np.bincount(sp_client, minlength=C))


@dataclass(frozen=True)
class GroupedModel:
    grouping: Grouping
    builder: SparseBuilder
    a: np.ndarray          # per special arc
    s: np.ndarray          # per special arc (-1 where the task is stateless)
    A: np.ndarray          # per generic (task, type)
    S: np.ndarray          # per generic (task, type) (-1 where the task is stateless)
    z: np.ndarray          # stateful task × tag value
    m: np.ndarray          # per client
    e: np.ndarray          # 2 × per client: above, below the window
    objectives: Mapping[str, np.ndarray]
    constants: Mapping[str, int]


def build(instance: TasksInstance, scores: JointScores, gr: Grouping,
          settled: frozenset[str] = frozenset()) -> GroupedModel:
    """R of the module docstring. Stages in ``settled`` are known to be 0 at every lexicographic optimum
    (:func:`settled_stages`): ``caught_up`` closes the placements that would not be caught up (column
    bounds 0), ``balance`` the window excesses, ``standbys`` makes each task's standby row an equality;
    ``tags`` replaces the tag indicators by :func:`distinct_rows` (with every task on k + 1 hosts they say
    exactly that the shortfall is 0), so the tags stage is the constant 0. Each only restates what the
    stage at 0 imposes, so no lexicographic optimum changes."""
    T, C, K = len(gr.tasks), len(gr.clients), gr.num_types
    b = SparseBuilder()
    P, Q = len(gr.sp_task), len(gr.gen_task)
    a = b.add_cols(P, 0.0, 1.0, integer=True)
    sp_stateful = gr.stateful[gr.sp_task]
    s = np.full(P, -1, dtype=np.int64)
    s[sp_stateful] = b.add_cols(int(sp_stateful.sum()), 0.0, 1.0, integer=True)
    A = b.add_cols(Q, 0.0, 1.0, integer=True)
    gen_stateful = gr.stateful[gr.gen_task]
    S = np.full(Q, -1, dtype=np.int64)
    S[gen_stateful] = b.add_cols(int(gen_stateful.sum()), 0.0, np.minimum(gr.gen_room[gen_stateful], scores.standbys),
                                 integer=True)
    stateful = np.flatnonzero(gr.stateful)
    pairs = tag_values(instance)
    V = len(pairs)
    if "tags" in settled:
        V = 0
    z = b.add_cols(len(stateful) * V, 0.0, 1.0, integer=True).reshape(len(stateful), V)
    m = b.add_cols(C, 0.0, gr.generic_for.astype(np.float64), integer=True)
    e = b.add_cols(2 * C, 0.0, integer=True).reshape(2, C)
    # one active per task
    b.add_rows(T, np.concatenate([gr.sp_task, gr.gen_task]), np.concatenate([a, A]), 1.0, 1.0, 1.0)
    # active and standby on different clients: a special pair holds one copy, a type at most its room
    both = np.flatnonzero(sp_stateful)
    b.add_rows(len(both), np.concatenate([np.arange(len(both))] * 2), np.concatenate([a[both], s[both]]),
               1.0, -np.inf, 1.0)
    gboth = np.flatnonzero(gen_stateful)
    tight = gboth[1 + np.minimum(gr.gen_room[gboth], scores.standbys) > gr.gen_room[gboth]]  # else implied
    b.add_rows(len(tight), np.concatenate([np.arange(len(tight))] * 2), np.concatenate([A[tight], S[tight]]),
               1.0, -np.inf, gr.gen_room[tight].astype(np.float64))
    # at most k standbys per stateful task
    row_of = np.full(T, -1, dtype=np.int64)
    row_of[stateful] = np.arange(len(stateful))
    b.add_rows(len(stateful), np.concatenate([row_of[gr.sp_task[both]], row_of[gr.gen_task[gboth]]]),
               np.concatenate([s[both], S[gboth]]), 1.0,
               float(scores.standbys) if "standbys" in settled else -np.inf, float(scores.standbys))
    if V:
        _tag_rows(b, gr, scores.keys, pairs, z, row_of, (a, s, A, S), both, gboth)
    # generic loads: per type, what the tasks send equals what its clients take
    b.add_rows(K, np.concatenate([gr.client_type, gr.gen_type, gr.gen_type[gboth]]),
               np.concatenate([m, A, S[gboth]]), np.concatenate([np.ones(C), -np.ones(Q), -np.ones(len(gboth))]),
               0.0, 0.0)
    # balance windows on n[c] = specials on c + m[c]
    lo = np.array([scores.window[c][0] for c in gr.clients], dtype=np.float64)
    hi = np.array([scores.window[c][1] for c in gr.clients], dtype=np.float64)
    host_rows = np.concatenate([gr.sp_client, gr.sp_client[both], np.arange(C)])
    host_cols = np.concatenate([a, s[both], m])
    ones = np.ones(len(host_cols))
    b.add_rows(C, np.concatenate([host_rows, np.arange(C)]), np.concatenate([host_cols, e[0]]),
               np.concatenate([ones, -np.ones(C)]), -np.inf, hi)
    b.add_rows(C, np.concatenate([host_rows, np.arange(C)]), np.concatenate([host_cols, e[1]]),
               np.concatenate([ones, np.ones(C)]), lo, np.inf)
    objectives, constants = _objectives(instance, scores, gr, b.num_col, (a, s, A, S, z, e), both, gboth)
    model = GroupedModel(gr, b, a, s, A, S, z, m, e, objectives, constants)
    if "tags" in settled:
        distinct_rows(model, instance, scores)
        constants["tags"] = 0
    if "caught_up" in settled:
        _close(b, np.flatnonzero(objectives["caught_up"] > 0))
    if "balance" in settled:
        _close(b, e.reshape(-1))
    if {"caught_up", "tags"} <= settled:
        _close(b, _clashing_standbys(model, objectives["caught_up"]))
    n = b.num_col
    for stage in objectives:
        objectives[stage] = np.concatenate([objectives[stage], np.zeros(n - len(objectives[stage]))])
    return model


def _close(b: SparseBuilder, cols: np.ndarray) -> None:
    """Upper bound 0 on ``cols`` (the builder keeps its bounds in chunks, one per ``add_cols``)."""
    first = 0
    for chunk in b.upper:
        mine = cols[(cols >= first) & (cols < first + len(chunk))] - first
        chunk[mine] = 0.0
        first += len(chunk)


def _clashing_standbys(model: GroupedModel, caught_cost: np.ndarray) -> np.ndarray:
    """Standby columns that would share a tag value with the task's active, for tasks whose active can only
    be on clients of one type (caught-up placements only): with the tags stage at 0 every host of a task
    has its own value of every key (:func:`distinct_rows`), so these are 0 in every optimum."""
    gr = model.grouping
    T, K = len(gr.tasks), gr.num_types
    tags = np.array(gr.type_tags, dtype=object).reshape(K, -1)
    compatible = np.ones((K, K), dtype=bool)
    for j in range(tags.shape[1]):
        column = tags[:, j]
        compatible &= (column[:, None] != column[None, :]) & (column[:, None] != None) & (column[None, :] != None)  # noqa: E711
    open_a = caught_cost[model.a] == 0
    kinds = np.full(T, -1, dtype=np.int64)
    many = np.zeros(T, dtype=bool)
    for t, k in zip(gr.sp_task[open_a].tolist(), gr.client_type[gr.sp_client[open_a]].tolist()):
        many[t] |= kinds[t] >= 0 and kinds[t] != k
        kinds[t] = k
    open_A = caught_cost[model.A] == 0
    many[gr.gen_task[open_A]] = True
    kinds[many] = -1
    sp = (model.s >= 0) & (kinds[gr.sp_task] >= 0)
    sp &= ~compatible[kinds[gr.sp_task].clip(0), gr.client_type[gr.sp_client]]
    gen = (model.S >= 0) & (kinds[gr.gen_task] >= 0)
    gen &= ~compatible[kinds[gr.gen_task].clip(0), gr.gen_type]
    return np.concatenate([model.s[sp], model.S[gen]])


def settled_stages(instance: TasksInstance, scores: JointScores, order: Sequence[str],
                   start: Mapping[str, TaskRoles]) -> frozenset[str]:
    """Stages whose lexicographic optimum is 0, read off the start: every stage up to them (in ``order``)
    is 0 there, and 0 is each stage's least value. ``tags`` only counts when every key has at least k + 1
    values (then :func:`distinct_rows` says all of it), and only with ``standbys`` settled too."""
    values = scores.stages(instance, start)
    zero = set()
    for stage in order:
        if values[stage] != 0:
            break
        zero.add(stage)
    counts = [sum(1 for h, _ in tag_values(instance) if h == g) for g in scores.keys]
    if not ({"tags", "standbys"} <= zero and all(scores.standbys + 1 <= n for n in counts)):
        zero.discard("tags")
    return frozenset(zero & {"caught_up", "standbys", "tags", "balance"})


def _tag_rows(b: SparseBuilder, gr: Grouping, keys: Sequence[str], pairs: Sequence[tuple[str, str]], z: np.ndarray,
              row_of: np.ndarray,
              cols: tuple[np.ndarray, ...], both: np.ndarray, gboth: np.ndarray) -> None:
    """``z[t,q] <= Σ`` hosts of t with tag value q: special copies on a client of that value, generic
    copies on a type of that value."""
    a, s, A, S = cols
    rows, cs, vals = [np.arange(z.size)], [z.reshape(-1)], [np.ones(z.size)]
    V = len(pairs)
    for q, (g, v) in enumerate(pairs):
        key = list(keys).index(g)
        of_type = np.array([tags[key] == v for tags in gr.type_tags], dtype=bool)
        sp = of_type[gr.client_type[gr.sp_client]] & gr.stateful[gr.sp_task]
        gen = of_type[gr.gen_type] & gr.stateful[gr.gen_task]
        sp_both = np.intersect1d(np.flatnonzero(sp), both, assume_unique=True)
        gen_both = np.intersect1d(np.flatnonzero(gen), gboth, assume_unique=True)
        for tasks, columns in ((gr.sp_task[sp], a[sp]), (gr.sp_task[sp_both], s[sp_both]),
                               (gr.gen_task[gen], A[gen]), (gr.gen_task[gen_both], S[gen_both])):
            rows.append(row_of[tasks] * V + q)
            cs.append(columns)
            vals.append(-np.ones(len(columns)))
    b.add_rows(z.size, np.concatenate(rows), np.concatenate(cs), np.concatenate(vals), -np.inf, 0.0)


def distinct_rows(model: GroupedModel, instance: TasksInstance, scores: JointScores) -> int:
    """Cuts valid once the ``standbys`` and ``tags`` stages sit at 0 (every stateful task on k + 1 hosts
    with ``min(k + 1, |V_g|)`` values of each key g): for a key with ``k + 1 <= |V_g|``, at most one host
    per value and none on a client without the key. Implied by those two stages at 0, so they change no
    lexicographic optimum that has them at 0; they make the LP relaxation of the later stages tight where
    the ``z`` rows alone let a task spread fractional hosts over values. Returns the rows added."""
    gr, b = model.grouping, model.builder
    k = scores.standbys
    pairs = tag_values(instance)
    stateful = np.flatnonzero(gr.stateful)
    row_of = np.full(len(gr.tasks), -1, dtype=np.int64)
    row_of[stateful] = np.arange(len(stateful))
    both = model.s >= 0
    gboth = model.S >= 0
    added = 0
    for key, g in enumerate(scores.keys):
        values = [v for h, v in pairs if h == g]
        if k + 1 > len(values):
            continue
        for v in [*values, None]:
            of_type = np.array([tags[key] == v for tags in gr.type_tags], dtype=bool)
            sp = of_type[gr.client_type[gr.sp_client]] & gr.stateful[gr.sp_task]
            gen = of_type[gr.gen_type] & gr.stateful[gr.gen_task]
            tasks = np.concatenate([gr.sp_task[sp], gr.sp_task[sp & both], gr.gen_task[gen], gr.gen_task[gen & gboth]])
            cols = np.concatenate([model.a[sp], model.s[sp & both], model.A[gen], model.S[gen & gboth]])
            b.add_rows(len(stateful), row_of[tasks], cols, 1.0, -np.inf, 1.0 if v is not None else 0.0)
            added += len(stateful)
    return added


def _objectives(instance: TasksInstance, scores: JointScores, gr: Grouping, n: int, cols: tuple[np.ndarray, ...],
                both: np.ndarray, gboth: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    a, s, A, S, z, e = cols
    obj = {stage: np.zeros(n) for stage in STAGES}
    caught = np.array([not scores.best[gr.tasks[t]].holds(gr.clients[c], gr.tasks[t] in instance.clients[gr.clients[c]].lags)
                       if gr.stateful[t] else False for t, c in zip(gr.sp_task.tolist(), gr.sp_client.tolist())],
                      dtype=float)
    obj["caught_up"][a] = caught
    obj["caught_up"][A] = ~gr.generic_caught[gr.gen_task]
    obj["standbys"][s[both]] = -1
    obj["standbys"][S[gboth]] = -1
    obj["tags"][z.reshape(-1)] = -1
    obj["balance"][e.reshape(-1)] = 1
    cost = instance.config.traffic_cost
    rack_of = [instance.clients[c].rack for c in gr.clients]
    for role, sp_cols, sp_arcs, gen_cols, gen_arcs in (("active", a, np.arange(len(a)), A, np.arange(len(A))),
                                                        ("standby", s[both], both, S[gboth], gboth)):
        obj["traffic"][sp_cols] = [cost * cross_rack_partitions(instance, gr.tasks[t], rack_of[c], role)
                                   for t, c in zip(gr.sp_task[sp_arcs].tolist(), gr.sp_client[sp_arcs].tolist())]
        obj["traffic"][gen_cols] = [cost * cross_rack_partitions(instance, gr.tasks[t], gr.type_rack[k], role)
                                    for t, k in zip(gr.gen_task[gen_arcs].tolist(), gr.gen_type[gen_arcs].tolist())]
    holds = {role: [gr.tasks[t] in getattr(instance.clients[gr.clients[c]], role)
                    for t, c in zip(gr.sp_task.tolist(), gr.sp_client.tolist())] for role in ("active", "standby")}
    obj["non_overlap"][a] = ~np.array(holds["active"], dtype=bool)
    obj["non_overlap"][s[both]] = ~np.array(holds["standby"], dtype=bool)[both]
    obj["non_overlap"][A] = 1
    obj["non_overlap"][S[gboth]] = 1
    stateful = int(gr.stateful.sum())
    constants = {stage: 0 for stage in STAGES}
    constants["standbys"] = scores.standbys * stateful
    constants["tags"] = scores.ideal_per_task * stateful
    return obj, constants


def grouped_size(instance: TasksInstance) -> str | None:
    """``None`` if R fits :data:`~kipopt.formulations.tasks.guard.MODEL_MEMORY_BYTES`, else the reason; its
    columns bounded without building it: two per (task, client type) and per (task, special client: a
    lag it lists, a current copy), one per (stateful task, tag value), three per client."""
    from kipopt.formulations.tasks.guard import too_large
    scores = JointScores.of(instance)
    clients = instance.clients.values()
    types = len({(c.rack, tuple(c.tags.get(g) for g in scores.keys)) for c in clients})
    T, C = len(instance.tasks), len(instance.clients)
    S = sum(1 for t in instance.tasks.values() if t.stateful)
    special = sum(len(c.lags) + len(c.active) + len(c.standby) for c in clients)
    columns = 2 * (T * types + special) + S * len(tag_values(instance)) + 3 * C
    return too_large("tasks", f"{T:,} tasks ({S:,} stateful) x {types:,} client types", columns)
