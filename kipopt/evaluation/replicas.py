"""The replicas evaluator (KIP-36): rack spread, replica and leader balance, moves.

Racks: a broker without a rack counts as one more rack, the "no rack" rack,
as KRaft's ``StripedReplicaPlacer`` treats it; in a cluster where *no* broker
has a rack the rack rule does not apply. A partition must span
``min(replication_factor, #racks)`` distinct racks: one replica per rack
while racks are plentiful, every rack otherwise (KIP-36).

Replica counts use the distinct brokers of each partition (a duplicated
broker holds one replica); the preferred leader is the first broker listed.
Moves, counted only when the instance has ``current``, are replicas on a
broker that did not hold the partition before (every replica of a partition
absent from ``current`` is a move). ``current`` may name brokers that are no
longer in ``brokers`` (being decommissioned): no assignment can use them, so
every replica they held moves. With ``sizes``, ``bytes_moved`` weighs each
move by its partition's size. A new preferred leader alone (the same brokers
reordered) moves no data: it is not a move, only ``leaders_changed`` counts it.

A partition the assignment leaves out is a ``missing_partition`` violation
and, holding no replica, an ``unassigned_partition`` too: as a member or
client left out is ``missing_member``/``missing_client`` and what it would
hold is unassigned.

>>> from kipopt.instance import from_dict
>>> inst = from_dict({"format": 1, "family": "replicas", "partitions": 2, "replication_factor": 2,
...                   "brokers": [{"id": 0, "rack": "a"}, {"id": 1, "rack": "a"}, {"id": 2, "rack": "b"}]})
>>> e = evaluate_replicas(inst, {0: (0, 2), 1: (1, 0)})
>>> e.metrics["replica_imbalance"], e.metrics["leader_imbalance"], [v.rule for v in e.violations]
(1, 1, ['rack_spread'])
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from operator import is_
from typing import Any, Mapping, Sequence

import numpy as np

from ..instance import ReplicasInstance
from ..solution import left_out
from . import Evaluation, ViolationLog


def required_racks(instance: ReplicasInstance) -> int | None:
    """``min(RF, #racks)``, or None in a rack-less cluster (the rule does not apply).

    >>> from kipopt.instance import from_dict
    >>> required_racks(from_dict({"format": 1, "family": "replicas", "partitions": 1, "replication_factor": 3,
    ...     "brokers": [{"id": 0, "rack": "a"}, {"id": 1}, {"id": 2, "rack": "b"}]}))
    3
    """
    racks = {b.rack for b in instance.brokers}
    if racks == {None}:
        return None
    return min(instance.replication_factor, len(racks))


@dataclass(frozen=True)
class _Flat:
    """An assignment as arrays, rows in partition-id order (row = pid - start_partition_id).

    ``row``/``broker`` list every replica entry (broker as an index into the sorted broker ids);
    ``length`` is the list length per row and ``leader`` the first broker (-1 for an empty row).
    """

    row: np.ndarray
    broker: np.ndarray
    length: np.ndarray
    leader: np.ndarray


def _flatten(instance: ReplicasInstance, assignment: Mapping[int, Sequence[int]],
             broker_ids: Sequence[int] | None = None) -> _Flat:
    P, start = instance.partitions, instance.start_partition_id
    ids = np.asarray(instance.broker_ids if broker_ids is None else broker_ids, dtype=np.int64)
    rows = np.fromiter(assignment.keys(), dtype=np.int64, count=len(assignment)) - start
    lens = np.fromiter(map(len, assignment.values()), dtype=np.int64, count=len(assignment))
    flat = np.fromiter(chain.from_iterable(assignment.values()), dtype=np.int64, count=int(lens.sum()))
    inside = (rows >= 0) & (rows < P)
    entry_inside = np.repeat(inside, lens)
    broker = np.searchsorted(ids, flat[entry_inside])
    row = np.repeat(rows, lens)[entry_inside]
    rows, lens = rows[inside], lens[inside]
    length = np.zeros(P, dtype=np.int64)
    length[rows] = lens
    leader = np.full(P, -1, dtype=np.int64)
    firsts = np.concatenate(([0], np.cumsum(lens)[:-1]))
    some = lens > 0
    leader[rows[some]] = broker[firsts[some]]
    return _Flat(row, broker, length, leader)


def _distinct(row: np.ndarray, value: np.ndarray, width: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (row, value) pairs (sorted keys ``row·width + value``), and the number per row.

    A plain sort, not ``np.unique`` (whose hash path was measured 50 times slower on these keys).
    """
    keys = np.sort(row * width + value)
    if len(keys):
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    return keys, np.bincount(keys // width, minlength=rows)


def _moves(instance: ReplicasInstance, assignment: Mapping[int, Sequence[int]], f: _Flat, pairs: np.ndarray,
           n: int) -> dict:
    """Moves against ``current``: distinct (partition, broker) pairs not held before."""
    current = instance.current or {}
    if instance.departing:  # index brokers being decommissioned too (after the others: no pair can use them)
        ids = sorted(instance.broker_ids + instance.departing)
        n = len(ids)
        f = _flatten(instance, assignment, ids)
        pairs, _ = _distinct(f.row, f.broker, n, instance.partitions)
        before = _flatten(instance, current, ids)
    else:
        before = _flatten(instance, current)
    held, _ = _distinct(before.row, before.broker, n, instance.partitions)
    at = np.minimum(np.searchsorted(held, pairs), max(len(held) - 1, 0))
    new = ~(held[at] == pairs) if len(held) else np.ones(len(pairs), dtype=bool)
    moved_rows = np.count_nonzero(np.bincount(pairs[new] // n, minlength=instance.partitions))
    changed = (f.length > 0) & (f.leader != before.leader)
    out = {"moves": int(new.sum()), "partitions_moved": int(moved_rows), "leaders_changed": int(changed.sum())}
    if instance.sizes is not None:
        size = np.zeros(instance.partitions, dtype=np.int64)
        keys = np.fromiter(instance.sizes.keys(), dtype=np.int64, count=len(instance.sizes))
        size[keys - instance.start_partition_id] = np.fromiter(instance.sizes.values(), dtype=np.int64,
                                                               count=len(instance.sizes))
        out["bytes_moved"] = int(size[pairs[new] // n].sum())
    return out


class _Last:
    """The last evaluation, given again for the same, unchanged assignment: ``exact.spread`` checks its
    answer, ``kipopt.solve`` evaluates it, the rule's objective and criteria read it (a second each at a
    million partitions). Unchanged means the same instance and mapping objects holding the same keys and
    the same tuple objects (tuples of ints cannot change); anything else is evaluated afresh."""

    instance: Any = None
    assignment: Any = None
    keys: list = []
    rows: list = []
    evaluation: Evaluation | None = None

    @classmethod
    def get(cls, instance: ReplicasInstance, assignment: Mapping) -> Evaluation | None:
        if cls.evaluation is None or cls.instance is not instance or cls.assignment is not assignment \
                or len(cls.keys) != len(assignment) or cls.keys != list(assignment) \
                or not all(map(is_, cls.rows, assignment.values())):
            return None
        e = cls.evaluation
        return Evaluation(e.family, dict(e.metrics), list(e.violations))

    @classmethod
    def put(cls, instance: ReplicasInstance, assignment: Mapping, evaluation: Evaluation) -> None:
        rows = list(assignment.values()) if isinstance(assignment, dict) else []
        if not rows or set(map(type, rows)) != {tuple}:
            cls.evaluation = None
            return
        cls.instance, cls.assignment, cls.keys, cls.rows = instance, assignment, list(assignment), rows
        cls.evaluation = Evaluation(evaluation.family, dict(evaluation.metrics), list(evaluation.violations))


def evaluate_replicas(instance: ReplicasInstance, assignment: Mapping[int, Sequence[int]]) -> Evaluation:
    """Metrics and broken hard rules of a replica assignment (partition id -> brokers, leader first).

    Vectorised: linear in the number of replicas (plus a sort), about a second per million partitions;
    asked again about the assignment it just evaluated, unchanged, it answers from :class:`_Last`.
    """
    again = _Last.get(instance, assignment)
    if again is not None:
        return again
    evaluation = _evaluate(instance, assignment)
    _Last.put(instance, assignment, evaluation)
    return evaluation


def _evaluate(instance: ReplicasInstance, assignment: Mapping[int, Sequence[int]]) -> Evaluation:
    P, start, rf = instance.partitions, instance.start_partition_id, instance.replication_factor
    ids = instance.broker_ids
    n = len(ids)
    need = required_racks(instance)
    f = _flatten(instance, assignment)
    pairs, distinct = _distinct(f.row, f.broker, n, P)
    codes: dict = {}
    rack = np.array([codes.setdefault(instance.rack_of[b], len(codes)) for b in ids], dtype=np.int64)
    _, spanned = _distinct(f.row, rack[f.broker], max(len(codes), 1), P)
    assigned = f.length > 0
    duplicate = f.length - distinct
    wrong = assigned & (f.length != rf)
    short = assigned & (spanned < need) if need is not None else np.zeros(P, dtype=bool)
    log = ViolationLog()
    log.add_all("missing_partition", left_out(instance, assignment), lambda p: f"partition {p} is not in the assignment")
    checks = (("unassigned_partition", ~assigned, lambda i: f"partition {start + i} has no replica"),
              ("duplicate_broker", duplicate > 0,
               lambda i: f"partition {start + i}: {list(assignment[start + i])} lists a broker twice"),
              ("wrong_replica_count", wrong,
               lambda i: f"partition {start + i} has {f.length[i]} replicas, not {rf}"),
              ("rack_spread", short, lambda i: f"partition {start + i} spans {spanned[i]} racks, needs {need}"))
    found = [(int(np.argmax(mask)), k, name, mask, example) for k, (name, mask, example) in enumerate(checks)
             if mask.any()]
    for _, _, name, mask, example in sorted(found, key=lambda x: x[:2]):  # first-seen order, as a loop would
        where = np.flatnonzero(mask)
        log.counts[name] = len(where)
        log.examples[name] = [example(int(i)) for i in where[:log.keep]]
    replicas = np.bincount(pairs % n, minlength=n)
    leaders = np.bincount(f.leader[assigned], minlength=n)
    metrics = {
        "racks_required": need,
        "racks_spanned_min": int(spanned[assigned].min()) if assigned.any() else 0,
        "rack_shortfall": int((need - spanned[short]).sum()) if need is not None else 0,
        "partitions_short_of_racks": int(short.sum()),
        "replica_imbalance": int(replicas.max() - replicas.min()),
        "replicas_min": int(replicas.min()),
        "replicas_max": int(replicas.max()),
        "leader_imbalance": int(leaders.max() - leaders.min()),
        "leaders_min": int(leaders.min()),
        "leaders_max": int(leaders.max()),
        "replicas_per_broker": dict(zip(ids, replicas.tolist())),
        "leaders_per_broker": dict(zip(ids, leaders.tolist())),
        "duplicate_replicas": int(duplicate.sum()),
        "wrong_replica_count": int(wrong.sum()),
    }
    if instance.current is not None:
        metrics.update(_moves(instance, assignment, f, pairs, n))
    return Evaluation("replicas", metrics, log.violations())
