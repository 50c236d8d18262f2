"""Evaluator of Kafka Streams task assignments (KIP-441, KIP-708, KIP-925).

Metrics, all recomputed from the assignment:

* KIP-925 costs (``kipopt.costs``): traffic and non-overlap, for actives and
  standbys, with the instance's configured costs (Kafka's 10 and 1 when unset);
* load per client (active, standby, warm-up, total) and per thread of
  capacity, and their max - min imbalance;
* sub-topology spread: per sub-topology, max - min of the active counts;
* KIP-708 tag distinctness: for each tag dimension (the configured
  ``rack_aware_assignment_tags``, else every tag key in use), the distinct
  values over each task's active + standby hosts, against the best possible
  ``min(hosts, values of that key)``;
* standby shortfall against ``num_standby_replicas`` and the least shortfall
  any assignment could have (``clients - 1`` copies at most);
* KIP-441: stateful actives on a client that is not among the most caught-up
  (rank 0 when ``lag <= acceptable_recovery_lag``, else the lag).

Hard rules broken (violations): ``unassigned_active``, ``duplicate_active``,
``active_standby_colocated``, ``standby_of_stateless``, ``duplicate_in_list``,
``missing_client`` (a client the assignment leaves out: it counts as running
nothing).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import chain
from typing import Mapping

import numpy as np

from ..costs import ROLES, cross_rack_table, role_cost
from ..instance import TasksInstance
from ..solution import TaskRoles, completed, left_out
from . import Evaluation, ViolationLog, spread


def evaluate_tasks(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> Evaluation:
    log = ViolationLog()
    missing = left_out(instance, assignment)
    log.add_all("missing_client", missing, lambda c: f"{c} is not in the assignment")
    assignment = completed(instance, assignment, missing)
    placed = {role: placements(instance, assignment, role) for role in ("active", "standby", "warmup")}
    _check_lists(instance, assignment, log, placed)
    metrics: dict = {}
    metrics.update(_costs(instance, assignment, placed))
    metrics.update(_loads(instance, assignment))
    metrics.update(_subtopology_spread(instance, assignment, placed))
    metrics.update(_tags(instance, assignment, placed))
    metrics.update(_standbys(instance, assignment, placed))
    metrics.update(_caught_up(instance, assignment, placed))
    return Evaluation("tasks", metrics, log.violations())


def placements(instance: TasksInstance, assignment: Mapping[str, TaskRoles], role: str
               ) -> tuple[np.ndarray, np.ndarray]:
    """The task (``TaskId`` order) and client (order of ``instance.clients``) of each ``role`` listing of
    ``assignment``, in its order: the index form every metric below reads, built once."""
    lists = [getattr(roles, role) for roles in assignment.values()]
    sizes = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    task = np.fromiter(map(_task_index(instance).__getitem__, chain.from_iterable(lists)), dtype=np.int64,
                       count=int(sizes.sum()))
    client = np.fromiter(map(_client_index(instance).__getitem__, assignment), dtype=np.int64, count=len(lists))
    return task, np.repeat(client, sizes)


def _check_lists(instance: TasksInstance, assignment: Mapping[str, TaskRoles], log: ViolationLog,
                 placed: Placed | None = None) -> None:
    if placed is not None and _lists_clean(instance, placed):
        return  # no rule below is broken: checked by array operations over every listing
    owners: dict[str, list[str]] = defaultdict(list)
    stateless = instance.tasks.keys() - _stateful(instance)
    actives = Counter(chain.from_iterable(roles.active for roles in assignment.values()))
    one_each = actives.keys() == instance.tasks.keys() and max(actives.values()) == 1
    for cid, roles in assignment.items():
        for role in ("active", "standby", "warmup"):
            items = getattr(roles, role)
            if len(set(items)) == len(items):  # the common case, checked at C speed
                continue
            for task, n in Counter(items).items():
                if n > 1:
                    log.add("duplicate_in_list", f"{cid} lists {task} {n} times as {role}")
        if not one_each:
            for task in roles.active:
                owners[task].append(cid)
        if not roles.standby and not roles.warmup:
            continue
        actives = set(roles.active)
        if actives.isdisjoint(roles.standby) and actives.isdisjoint(roles.warmup) and stateless.isdisjoint(
                roles.standby) and stateless.isdisjoint(roles.warmup) and set(roles.standby).isdisjoint(roles.warmup):
            continue  # nothing below would be logged: checked at C speed
        for task in set(roles.standby) | set(roles.warmup):
            if task in actives:
                log.add("active_standby_colocated", f"{task} is active and standby/warm-up on {cid}")
            if not instance.tasks[task].stateful:
                log.add("standby_of_stateless", f"{task} is stateless but has a standby/warm-up on {cid}")
        for task in set(roles.standby) & set(roles.warmup):
            log.add("duplicate_in_list", f"{cid} lists {task} as both standby and warm-up")
    if one_each:
        return  # every task has exactly one active client
    for task in instance.task_ids:
        holders = owners.get(task, ())
        if not holders:
            log.add("unassigned_active", f"{task} has no active client")
        elif len(holders) > 1:
            log.add("duplicate_active", f"{task} is active on {', '.join(sorted(set(holders)))}")


def _lists_clean(instance: TasksInstance, placed: Placed) -> bool:
    """Whether :func:`_check_lists` would log nothing: no (client, task) listed twice in any of its lists
    or roles (a repeat, a colocation, a standby that is also a warm-up), standbys and warm-ups only of
    stateful tasks, and every task listed as active exactly once."""
    T = len(instance.tasks)
    keys = np.concatenate([client * T + task for task, client in placed.values()])
    stateful = lag_ranks(instance).stateful
    return (len(_distinct(keys)) == len(keys) and bool(stateful[placed["standby"][0]].all())
            and bool(stateful[placed["warmup"][0]].all())
            and bool((np.bincount(placed["active"][0], minlength=T) == 1).all()))


def _costs(instance: TasksInstance, assignment: Mapping[str, TaskRoles], placed: Placed) -> dict:
    out: dict = {}
    for role in ROLES:
        cost = role_cost(instance, assignment, role, placed=placed[role])
        out[f"{role}_traffic_cost"] = cost.traffic
        out[f"{role}_non_overlap_cost"] = cost.non_overlap
    out["traffic_cost"] = out["active_traffic_cost"] + out["standby_traffic_cost"]
    out["non_overlap_cost"] = out["active_non_overlap_cost"] + out["standby_non_overlap_cost"]
    out["total_cost"] = out["traffic_cost"] + out["non_overlap_cost"]
    return out


def _loads(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> dict:
    per_client = {}
    for cid in instance.client_ids:
        roles = assignment.get(cid, TaskRoles())
        cap = instance.clients[cid].capacity
        a, s, w = len(roles.active), len(roles.standby), len(roles.warmup)
        per_client[cid] = {"capacity": cap, "active": a, "standby": s, "warmup": w, "total": a + s + w,
                           "active_per_thread": a / cap, "total_per_thread": (a + s + w) / cap}
    rows = per_client.values()
    out = {f"{k}_imbalance": spread(r[k] for r in rows)
           for k in ("active", "standby", "total", "active_per_thread", "total_per_thread")}
    out["per_client"] = per_client
    return out


Placed = Mapping[str, tuple[np.ndarray, np.ndarray]]
"""Role -> :func:`placements` of an assignment (the metrics below build it when not given)."""


def _placed(instance: TasksInstance, assignment: Mapping[str, TaskRoles], placed: Placed | None) -> Placed:
    return placed if placed is not None else {role: placements(instance, assignment, role) for role in ROLES}


def _subtopology_spread(instance: TasksInstance, assignment: Mapping[str, TaskRoles],
                        placed: Placed | None = None) -> dict:
    """Per sub-topology, max - min active count over *all* clients (a client with none counts 0); one
    sort of the (sub-topology, client) keys of the actives."""
    groups = instance.subtopologies
    group_of = np.searchsorted(np.asarray(groups, dtype=np.int64), instance.task_subtopologies)
    task, client = _placed(instance, assignment, placed)["active"]
    C = len(instance.clients)
    pairs, count = _distinct_counts(group_of[task] * C + client)
    pair_group = pairs // C
    high = np.zeros(len(groups), dtype=np.int64)
    np.maximum.at(high, pair_group, count)
    low = np.full(len(groups), np.iinfo(np.int64).max)
    np.minimum.at(low, pair_group, count)
    low[np.bincount(pair_group, minlength=len(groups)) < C] = 0
    per = {str(g): int(h - m) for g, h, m in zip(groups, high.tolist(), low.tolist())}
    return {"subtopology_spread": per, "subtopology_imbalance": max(per.values(), default=0)}


def tag_keys(instance: TasksInstance) -> tuple[str, ...]:
    """The tag dimensions that count: the configured ones, else every key in use."""
    configured = instance.config.rack_aware_assignment_tags
    if configured:
        return configured
    return tuple(sorted({k for c in instance.clients.values() for k in c.tags}))


def _tags(instance: TasksInstance, assignment: Mapping[str, TaskRoles], placed: Placed | None = None) -> dict:
    """Per tag key: distinct values over each task's hosts (active and standby clients), against
    ``min(hosts, values of that key)``; vectorised over (task, host) pairs."""
    keys = tag_keys(instance)
    if not keys:
        return {"tag_distinct": {}, "tag_shortfall": 0}
    placed = _placed(instance, assignment, placed)
    clients = list(instance.clients.values())  # the client order of the placements
    C = len(clients)
    pairs = _distinct(np.concatenate([placed[role][0] * C + placed[role][1] for role in ROLES]))
    host_task, host_client = np.divmod(pairs, C)
    hosts = np.bincount(host_task, minlength=len(instance.tasks))
    hosts = hosts[hosts > 0]
    per_key = {}
    for key in keys:
        names: dict[str, int] = {}
        value = np.array([names.setdefault(c.tags[key], len(names)) if key in c.tags else -1 for c in clients],
                         dtype=np.int64)
        V = max(len(names), 1)
        v = value[host_client]
        has = v >= 0
        actual = len(_distinct(host_task[has] * V + v[has]))
        best = int(np.minimum(hosts, len(names)).sum())
        per_key[key] = {"distinct": actual, "best": best, "shortfall": best - actual}
    return {"tag_distinct": per_key, "tag_shortfall": sum(v["shortfall"] for v in per_key.values())}


def _distinct(keys: np.ndarray) -> np.ndarray:
    """Sorted distinct values by one sort (``np.unique``'s hash path was measured far slower on such keys)."""
    keys = np.sort(keys)
    return keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if len(keys) else keys


def _distinct_counts(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_distinct` and how often each value occurs (``np.unique(..., return_counts=True)`` by one sort)."""
    keys = np.sort(keys)
    starts = np.nonzero(np.concatenate(([True], keys[1:] != keys[:-1])))[0] if len(keys) else np.zeros(0, np.int64)
    return keys[starts], np.diff(np.concatenate((starts, [len(keys)])))


def _standbys(instance: TasksInstance, assignment: Mapping[str, TaskRoles], placed: Placed | None = None) -> dict:
    """Standby copies per stateful task (distinct clients listing it as standby) against the wanted number."""
    wanted = instance.config.num_standby_replicas
    if placed is None:
        placed = {role: placements(instance, assignment, role) for role in ("standby", "warmup")}
    T = len(instance.tasks)
    task, client = placed["standby"]
    copies = np.bincount(_distinct(client * T + task) % T, minlength=T)
    held = copies[lag_ranks(instance).stateful]
    possible = min(wanted, len(instance.clients) - 1)
    return {
        "standby_shortfall": wanted * len(held) - int(np.minimum(held, wanted).sum()),
        "standby_shortfall_min": (wanted - possible) * len(held),
        "standby_excess": int(np.maximum(held - wanted, 0).sum()),
        "warmups": len(placed["warmup"][0]),
    }


def _caught_up(instance: TasksInstance, assignment: Mapping[str, TaskRoles], placed: Placed | None = None) -> dict:
    """Stateful actives whose client's lag rank is above the least (:func:`lag_ranks`); each listing counts."""
    r = lag_ranks(instance)
    task, client = _placed(instance, assignment, placed)["active"]
    stateful = r.stateful[task]
    task, client = task[stateful], client[stateful]
    return {"actives_not_caught_up": int(np.count_nonzero(~r.caught_up(client, task)))}


@dataclass(frozen=True)
class LagRanks:
    """Every reported lag of an instance as arrays, and each task's least lag rank (rank 0 within
    ``acceptable_recovery_lag``, else the lag; a client reporting no lag for a task lags by its end
    offset). Tasks are numbered in ``TaskId`` order, clients in the order of ``instance.clients``."""

    task_index: dict[str, int]
    client_index: dict[str, int]
    stateful: np.ndarray       # per task
    low: np.ndarray            # per task: the least rank over all clients (stateful tasks)
    silent_best: np.ndarray    # per task: some client reports no lag, and that rank is the least
    entry_key: np.ndarray      # client * tasks + task of every reported lag, sorted
    entry_best: np.ndarray     # per reported lag (same order): its rank is the task's least

    def caught_up(self, client: np.ndarray, task: np.ndarray) -> np.ndarray:
        """Whether each (client, stateful task) pair is at the task's least rank."""
        if not len(self.entry_key):
            return self.silent_best[task]
        key = client * len(self.stateful) + task
        at = np.minimum(np.searchsorted(self.entry_key, key), len(self.entry_key) - 1)
        return np.where(self.entry_key[at] == key, self.entry_best[at], self.silent_best[task])


def lag_ranks(instance: TasksInstance) -> LagRanks:
    """The :class:`LagRanks` of ``instance``, once per instance, linear in the reported lags and tasks."""
    cached = instance.__dict__.get("_lag_ranks")
    if cached is not None:
        return cached
    acceptable = instance.config.acceptable_recovery_lag
    task_index = _task_index(instance)
    T, clients = len(task_index), list(instance.clients.values())
    at = np.fromiter(map(task_index.__getitem__, instance.tasks), dtype=np.int64, count=T)
    end, stateful = np.zeros(T, dtype=np.int64), np.zeros(T, dtype=bool)
    end[at] = np.fromiter((t.end_offset for t in instance.tasks.values()), dtype=np.int64, count=T)
    stateful[at] = np.fromiter((t.stateful for t in instance.tasks.values()), dtype=bool, count=T)
    sizes = np.fromiter((len(c.lags) for c in clients), dtype=np.int64, count=len(clients))
    n = int(sizes.sum())
    task = np.fromiter(map(task_index.__getitem__, chain.from_iterable(c.lags for c in clients)), dtype=np.int64,
                       count=n)
    lag = np.fromiter(chain.from_iterable(c.lags.values() for c in clients), dtype=np.int64, count=n)
    rank = np.where(lag <= acceptable, 0, lag)
    silent = np.where(end <= acceptable, 0, end)
    someone_silent = np.bincount(task, minlength=T) < len(clients)
    low = np.where(someone_silent, silent, np.iinfo(np.int64).max)
    np.minimum.at(low, task, rank)
    key = np.repeat(np.arange(len(clients), dtype=np.int64), sizes) * T + task
    order = np.argsort(key, kind="stable")
    cached = LagRanks(task_index, _client_index(instance), stateful, low,
                      someone_silent & (silent == low), key[order], (rank == low[task])[order])
    instance.__dict__["_lag_ranks"] = cached  # beside the fields, like cached_property
    return cached


def _task_index(instance: TasksInstance) -> dict[str, int]:
    """Task id -> its position in ``TaskId`` order (the cross-rack table's: built once per instance)."""
    return cross_rack_table(instance, "active").task_index


def _client_index(instance: TasksInstance) -> dict[str, int]:
    """Client id -> its position in ``instance.clients``, once per instance."""
    cached = instance.__dict__.get("_client_index")
    if cached is None:
        cached = instance.__dict__["_client_index"] = {c: j for j, c in enumerate(instance.clients)}
    return cached


def _stateful(instance: TasksInstance) -> frozenset[str]:
    """The stateful tasks' ids, once per instance (kept beside its fields, like ``cached_property``)."""
    cached = instance.__dict__.get("_stateful_ids")
    if cached is None:
        cached = instance.__dict__["_stateful_ids"] = frozenset(t for t, task in instance.tasks.items() if task.stateful)
    return cached


@dataclass(frozen=True)
class Best:
    """A stateful task's most caught-up clients: ``listed`` among the clients that report a lag for it, and,
    when ``unlisted`` is true, every client that reports none (it lags by the end offset)."""

    listed: frozenset[str]
    unlisted: bool

    def holds(self, cid: str, reports_lag: bool) -> bool:
        """Whether client ``cid`` is most caught up (``reports_lag``: it has a lag for the task)."""
        return cid in self.listed if reports_lag else self.unlisted


def least_lag_ranks(instance: TasksInstance) -> dict[str, int]:
    """Per stateful task (in the order of ``instance.tasks``), the least lag rank over all clients
    (:class:`LagRanks`); a client is most caught up on a task when its rank equals this."""
    r = lag_ranks(instance)
    low = r.low.tolist()
    return {t: low[r.task_index[t]] for t, task in instance.tasks.items() if task.stateful}


def most_caught_up(instance: TasksInstance) -> dict[str, Best]:
    """Per stateful task, the clients whose lag rank is the least (:func:`least_lag_ranks`)."""
    acceptable = instance.config.acceptable_recovery_lag
    low = least_lag_ranks(instance)
    listed: dict[str, list[str]] = {}
    for cid, client in instance.clients.items():
        for t, lag in client.lags.items():
            if (0 if lag <= acceptable else lag) == low[t]:
                listed.setdefault(t, []).append(cid)
    reporters = Counter(chain.from_iterable(c.lags for c in instance.clients.values()))
    everyone = len(instance.clients)
    out = {}
    for t, task in instance.tasks.items():
        if task.stateful:
            silent = 0 if task.end_offset <= acceptable else task.end_offset
            out[t] = Best(frozenset(listed.get(t, ())), reporters[t] < everyone and silent == low[t])
    return out
