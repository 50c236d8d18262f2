"""The scores of KIP-36's rules ``spread`` and ``spread_bytes``: the lexicographic objectives and bounds.

Shared by :mod:`.spread` (the rules and ``exact.spread``) and :mod:`.reassignment` (its reassignment path).
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from kipopt.evaluation.replicas import evaluate_replicas
from kipopt.instance import ReplicasInstance
from kipopt.solution import Status

from kipopt.formulations.replicas.model import Outcome


def evaluated(instance: ReplicasInstance, assignment: Mapping[int, Sequence[int]]):
    """The evaluation of the assignment ``exact.spread`` just returned: the rule's objective, criteria and
    violations are asked for right after, and :func:`evaluate_replicas` answers them from its last
    evaluation while the assignment is unchanged."""
    return evaluate_replicas(instance, assignment)


def weight(instance: ReplicasInstance) -> int:
    """``W = partitions·RF + 1``: larger than any leader imbalance or move count."""
    return instance.partitions * instance.replication_factor + 1


def lexicographic(instance: ReplicasInstance, replica_imbalance: float, leader_imbalance: float,
                  moves: float) -> float:
    """``D·W² + L·W + M``.

    >>> from kipopt.instance import from_dict
    >>> inst = from_dict({"format": 1, "family": "replicas", "partitions": 3, "replication_factor": 2,
    ...                   "brokers": [{"id": 0}, {"id": 1}]})
    >>> lexicographic(inst, 1, 2, 3)   # W = 7
    66.0
    """
    w = weight(instance)
    return float(replica_imbalance * w * w + leader_imbalance * w + moves)


def bytes_weight(instance: ReplicasInstance) -> int:
    """``W = RF·Σ sizes + 1`` (or ``partitions·RF + 1`` without sizes): more than any bytes moved."""
    if instance.sizes is None:
        return weight(instance)
    return instance.replication_factor * sum(instance.sizes.values()) + 1


def lexicographic_bytes(instance: ReplicasInstance, replica_imbalance: float, leader_imbalance: float,
                        bytes_moved: float) -> float:
    """``D·W² + L·W + B`` with ``W`` = :func:`bytes_weight` (exact in a float up to 2^53; the criteria always)."""
    w = bytes_weight(instance)
    return float(int(replica_imbalance) * w * w + int(leader_imbalance) * w + int(bytes_moved))


def staged_bound(instance: ReplicasInstance, stages: list[Outcome], by_bytes: bool = False
                 ) -> tuple[Status, float | None]:
    """The status and bound of the broker-level stages (replica imbalance, leader imbalance, moves), in the
    rule's own scale: with ``by_bytes`` the bytes rule's, where the moves stage bounds no bytes (a move of an
    empty partition weighs nothing), so only the imbalances count and nothing is proven past them when
    there is a ``current`` (the moves scale's bound, 374, stood beside an optimum of 4 with zero sizes)."""
    values = []
    for s in stages:
        if s.status == "optimal":
            values.append(round(s.objective))
        else:
            values.append(math.ceil(s.bound - 1e-6) if s.bound is not None else 0)
            break
    wanted = 3 if instance.current is not None else 2
    status = Status.OPTIMAL if len(stages) == wanted and stages[-1].status == "optimal" else Status.FEASIBLE
    values += [0] * (3 - len(values))
    if not by_bytes:
        return status, lexicographic(instance, *values)
    if instance.current is not None:
        status = Status.FEASIBLE
    return status, lexicographic_bytes(instance, values[0], values[1], 0)
