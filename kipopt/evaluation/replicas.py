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
absent from ``current`` is a move).

>>> from kipopt.instance import from_dict
>>> inst = from_dict({"format": 1, "family": "replicas", "partitions": 2, "replication_factor": 2,
...                   "brokers": [{"id": 0, "rack": "a"}, {"id": 1, "rack": "a"}, {"id": 2, "rack": "b"}]})
>>> e = evaluate_replicas(inst, {0: (0, 2), 1: (1, 0)})
>>> e.metrics["replica_imbalance"], e.metrics["leader_imbalance"], [v.rule for v in e.violations]
(1, 1, ['rack_spread'])
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

from ..instance import ReplicasInstance
from . import Evaluation, ViolationLog, spread


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


def _loads(instance: ReplicasInstance, assignment: Mapping[int, Sequence[int]]) -> tuple[Counter, Counter]:
    replicas: Counter = Counter({b: 0 for b in instance.broker_ids})
    leaders: Counter = Counter({b: 0 for b in instance.broker_ids})
    for brokers in assignment.values():
        if brokers:
            leaders[brokers[0]] += 1
            replicas.update(set(brokers))
    return replicas, leaders


def _moves(instance: ReplicasInstance, assignment: Mapping[int, Sequence[int]]) -> dict:
    current = instance.current or {}
    moves = moved = leaders_changed = 0
    for pid, brokers in assignment.items():
        before = current.get(pid, ())
        new = len(set(brokers) - set(before))
        moves += new
        moved += new > 0
        leaders_changed += bool(brokers) and (not before or before[0] != brokers[0])
    return {"moves": moves, "partitions_moved": moved, "leaders_changed": leaders_changed}


def evaluate_replicas(instance: ReplicasInstance, assignment: Mapping[int, Sequence[int]]) -> Evaluation:
    """Metrics and broken hard rules of a replica assignment (partition id -> brokers, leader first)."""
    log = ViolationLog()
    rack_of = instance.rack_of
    need = required_racks(instance)
    rf = instance.replication_factor
    shortfall = short = duplicates = wrong = 0
    spanned: list[int] = []
    for pid in instance.partition_ids:
        brokers = assignment.get(pid, ())
        if not brokers:
            log.add("unassigned_partition", f"partition {pid} has no replica")
            continue
        distinct = set(brokers)
        if len(distinct) < len(brokers):
            duplicates += len(brokers) - len(distinct)
            log.add("duplicate_broker", f"partition {pid}: {list(brokers)} lists a broker twice")
        if len(brokers) != rf:
            wrong += 1
            log.add("wrong_replica_count", f"partition {pid} has {len(brokers)} replicas, not {rf}")
        racks = len({rack_of[b] for b in distinct})
        spanned.append(racks)
        if need is not None and racks < need:
            shortfall += need - racks
            short += 1
            log.add("rack_spread", f"partition {pid} spans {racks} racks, needs {need}")
    replicas, leaders = _loads(instance, assignment)
    metrics = {
        "racks_required": need,
        "racks_spanned_min": min(spanned, default=0),
        "rack_shortfall": shortfall,
        "partitions_short_of_racks": short,
        "replica_imbalance": spread(replicas.values()),
        "replicas_min": min(replicas.values()),
        "replicas_max": max(replicas.values()),
        "leader_imbalance": spread(leaders.values()),
        "leaders_min": min(leaders.values()),
        "leaders_max": max(leaders.values()),
        "replicas_per_broker": dict(sorted(replicas.items())),
        "leaders_per_broker": dict(sorted(leaders.items())),
        "duplicate_replicas": duplicates,
        "wrong_replica_count": wrong,
    }
    if instance.current is not None:
        metrics.update(_moves(instance, assignment))
    return Evaluation("replicas", metrics, log.violations())
