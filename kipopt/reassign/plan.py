"""``kipopt reassign``: Kafka's current assignment and an operator scenario in, Kafka's files out.

One kipopt replicas instance per topic. KIP-36 states its rule per topic:
``AdminUtils.assignReplicasToBrokers`` (and ``--generate``, which calls it
topic by topic) spreads one topic's partitions evenly, so every topic's
traffic is spread over the brokers; a cluster whose topics are each balanced
within 1 is balanced within the number of topics, and that per-topic balance
is what spreads a hot topic's load, which a cluster total alone would not.
So each topic is solved exactly under the rule (``exact.spread``, or
``exact.spread_bytes`` with ``--minimize bytes``) on the scenario's brokers,
and the cluster summary adds the topics up.

Scenario (each one option): brokers added (``--add-brokers 7,8`` or
``7:rack-c,8:rack-c``), a rack added (``--add-rack rack-d=9,10,11``),
brokers decommissioned or left out of the placement (``--decommission``,
``--exclude-brokers``: every replica they hold moves, as brokers left out of
``--broker-list`` in Kafka's ``--generate``), the replication factor changed
(``--replication-factor``), partitions or whole topics pinned (``--pin
orders,payments:3``: left exactly as they are, and out of the balance).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kipopt._read import JAVA_INT_MAX
from kipopt.errors import InstanceError
from kipopt.reassign.kafka_files import PartitionReplicas, reassignment_json



@dataclass(frozen=True)
class Scenario:
    """What the operator asks for, besides the current assignment."""

    brokers: tuple[int, ...] | None = None          # the cluster (--brokers); None: brokers in the current assignment
    racks: dict[int, str | None] = field(default_factory=dict)
    add_brokers: dict[int, str | None] = field(default_factory=dict)
    decommission: tuple[int, ...] = ()
    exclude: tuple[int, ...] = ()
    replication_factor: int | None = None
    pin: tuple[str, ...] = ()                        # "topic" or "topic:partition"
    topics: tuple[str, ...] | None = None
    by_bytes: bool = False
    moves_first: bool = False
    time_limit: float | None = None
    threads: int | None = None
    rack_aware: bool = True                          # False: --disable-rack-aware, every rack ignored
    added_by: dict[int, str] = field(default_factory=dict)  # an added broker's option, for its errors


@dataclass
class Plan:
    reassignment: dict
    rollback: dict
    summary: dict


# --------------------------------------------------------------------------- option values


def name_list(text: str, option: str) -> tuple[str, ...]:
    """``a,b`` as names; an empty item (``a,,b``, ``,``) is refused, as Kafka's tools refuse it."""
    out = tuple(x.strip() for x in text.split(","))
    if "" in out:
        raise InstanceError(option, f"{text!r} has an empty item")
    return out


def int_list(text: str, option: str) -> tuple[int, ...]:
    """``1,2,3`` as broker ids."""
    out = []
    for item in name_list(text, option):
        if not item.isdigit() or int(item) > JAVA_INT_MAX:
            raise InstanceError(option, f"{item!r} is not a broker id")
        out.append(int(item))
    if len(set(out)) != len(out):
        raise InstanceError(option, "lists a broker twice")
    return tuple(out)


def brokers_with_racks(text: str, option: str) -> dict[int, str | None]:
    """``7,8`` or ``7:rack-c,8:rack-c``."""
    out: dict[int, str | None] = {}
    for item in name_list(text, option):
        bid, _, rack = item.partition(":")
        (b,) = int_list(bid, option)
        if b in out:
            raise InstanceError(option, f"broker {b} is listed twice")
        out[b] = rack or None
    return out


def rack_and_brokers(text: str, option: str) -> dict[int, str | None]:
    """``rack-d=9,10,11``: brokers of a new rack."""
    rack, eq, ids = text.partition("=")
    if not eq or not rack:
        raise InstanceError(option, f"{text!r} is not RACK=ID,ID,...")
    return {b: rack for b in int_list(ids, option)}


# --------------------------------------------------------------------------- the plan


def _cluster(current: list[PartitionReplicas], s: Scenario) -> tuple[list[int], dict[int, str | None]]:
    """The brokers after the scenario (sorted) and every broker's rack."""
    racks = dict(s.racks)
    for b, rack in s.add_brokers.items():
        if rack is not None:
            racks[b] = rack
    base = set(s.brokers) if s.brokers is not None else {b for p in current for b in p.replicas}
    for b in s.add_brokers:
        if b in base:
            raise InstanceError(s.added_by.get(b, "--add-brokers"), f"broker {b} is already in the cluster")
    gone = set(s.decommission) | set(s.exclude)
    for option, ids in (("--decommission", s.decommission), ("--exclude-brokers", s.exclude)):
        unknown = [b for b in ids if b not in base]
        if unknown:
            raise InstanceError(option, f"broker {unknown[0]} is not in the cluster")
    final = sorted((base | set(s.add_brokers)) - gone)
    if not final:
        named = " and ".join(o for o, ids in (("--decommission", s.decommission), ("--exclude-brokers", s.exclude))
                             if ids) or "--brokers"
        raise InstanceError(named, "no broker would be left")
    if not s.rack_aware:
        return final, {}
    rackless = [b for b in final if racks.get(b) is None]
    if rackless and len(rackless) < len(final):  # Kafka's rack-aware placement refuses this cluster too
        named = ", ".join(map(str, rackless[:5])) + (", ..." if len(rackless) > 5 else "")
        raise InstanceError("--racks", f"{len(rackless)} of the {len(final)} brokers have no rack ({named}); "
                                       f"Kafka refuses that (not all brokers have rack information): give every "
                                       f"broker a rack, or --disable-rack-aware to place without racks")
    return final, racks


def _pinned(current: list[PartitionReplicas], pins: tuple[str, ...]) -> set[tuple[str, int]]:
    topics = {p.topic for p in current}
    keys = {(p.topic, p.partition) for p in current}
    out = set()
    for pin in pins:
        topic, colon, number = pin.rpartition(":")
        if colon and number.isdigit() and (topic, int(number)) in keys:
            out.add((topic, int(number)))
        elif pin in topics:
            out |= {k for k in keys if k[0] == pin}
        else:
            raise InstanceError("--pin", f"{pin!r} names no topic or topic:partition of the current assignment")
    return out


def _instance(rows: list[PartitionReplicas], brokers: list[int], racks: dict[int, str | None], rf: int,
              sizes: dict[tuple[str, int], int] | None) -> dict:
    d: dict[str, Any] = {
        "format": 1, "family": "replicas", "partitions": len(rows), "replication_factor": rf,
        "brokers": [{"id": b, "rack": racks.get(b)} for b in brokers],
        "current": {str(i): list(p.replicas) for i, p in enumerate(rows)}}
    if sizes is not None:
        d["sizes"] = {str(i): sizes.get((p.topic, p.partition), 0) for i, p in enumerate(rows)}
    return d


def make_plan(current: list[PartitionReplicas], s: Scenario,
              sizes: dict[tuple[str, int], int] | None = None) -> Plan:
    """Solve every topic exactly and collect Kafka's two files and the summary."""
    from kipopt import solve
    from kipopt.instance import from_dict

    started = time.perf_counter()
    brokers, racks = _cluster(current, s)
    pinned = _pinned(current, s.pin)
    topics = sorted({p.topic for p in current})
    if s.topics is not None:
        missing = [t for t in s.topics if t not in topics]
        if missing:
            raise InstanceError("--topics", f"topic {missing[0]!r} is not in the current assignment")
        topics = [t for t in topics if t in set(s.topics)]
    gone = set(s.decommission) | set(s.exclude)
    for p in current:
        if (p.topic, p.partition) in pinned and gone & set(p.replicas):
            raise InstanceError("--pin", f"{p.topic}:{p.partition} is pinned to a broker that leaves")
    method = "exact.spread_bytes" if s.by_bytes else "exact.spread_moves_first" if s.moves_first else "exact.spread"
    proposed: dict[tuple[str, int], tuple[int, ...]] = {}
    per_topic = []
    for k, topic in enumerate(topics):
        rows = sorted((p for p in current if p.topic == topic and (p.topic, p.partition) not in pinned),
                      key=lambda p: p.partition)
        if not rows:
            continue
        factors = sorted({len(p.replicas) for p in rows})
        if s.replication_factor is None and len(factors) > 1:  # Kafka's --generate takes one partition's for all
            raise InstanceError("--replication-factor", f"topic {topic!r} has partitions of "
                                                       f"{' and '.join(map(str, factors))} replicas; name the one "
                                                       f"to plan for (every partition of the topic gets it)")
        rf = s.replication_factor or factors[0]
        if rf > len(brokers):  # named by the option that made it so
            option = "--replication-factor" if s.replication_factor else \
                "--decommission" if s.decommission else "--exclude-brokers" if s.exclude else "--brokers"
            raise InstanceError(option, f"topic {topic!r} needs {rf} brokers (its replication factor), the "
                                        f"cluster would have {len(brokers)}")
        inst = from_dict(_instance(rows, brokers, racks, rf, sizes))
        budget = None
        if s.time_limit is not None:
            budget = max(0.05, (s.time_limit - (time.perf_counter() - started)) / (len(topics) - k))
        sol = solve(inst, method, time_limit=budget, threads=s.threads)
        for i, p in enumerate(rows):
            proposed[(p.topic, p.partition)] = _as_before(tuple(sol.assignment[i]), p.replicas)
        m = sol.metrics
        per_topic.append({"topic": topic, "partitions": len(rows), "replication_factor": rf,
                          "status": sol.status.value, "moves": m.get("moves", 0),
                          **({"bytes_moved": m.get("bytes_moved", 0)} if sizes is not None else {}),
                          "leaders_changed": m.get("leaders_changed", 0),
                          "replica_imbalance": m["replica_imbalance"], "leader_imbalance": m["leader_imbalance"],
                          "objective": sol.objective, "bound": sol.bound, "model": m.get("model"),
                          "seconds": round(sol.seconds, 3) if getattr(sol, "seconds", None) is not None else None})
    return _collect(current, proposed, brokers, racks, sizes, per_topic, time.perf_counter() - started)


def _as_before(new: tuple[int, ...], old: tuple[int, ...]) -> tuple[int, ...]:
    """``old`` where ``new`` holds the same brokers with the same leader: the rule reads only the leader and
    the set, and a follower order changed for nothing would be a reassignment for nothing."""
    return old if new[:1] == old[:1] and len(new) == len(old) and set(new) == set(old) else new


def _collect(current: list[PartitionReplicas], proposed: dict, brokers: list[int], racks: dict,
             sizes: dict | None, per_topic: list[dict], seconds: float) -> Plan:
    before = {(p.topic, p.partition): p.replicas for p in current}
    changed = [k for k, v in proposed.items() if v != before[k]]
    new = [PartitionReplicas(t, n, proposed[(t, n)]) for t, n in changed]
    old = [PartitionReplicas(t, n, before[(t, n)]) for t, n in changed]
    after = {**before, **proposed}
    moves = {k: set(after[k]) - set(before[k]) for k in changed}
    summary = {
        "status": _worst([t["status"] for t in per_topic]),
        "topics": len(per_topic), "partitions": len(proposed), "partitions_changed": len(changed),
        "moves": sum(len(v) for v in moves.values()),
        "leaders_changed": sum(1 for k in changed if after[k][0] != before[k][0]),
        "seconds": round(seconds, 3),
        "brokers": _per_broker(before, after, brokers, racks),
        "per_topic": per_topic,
    }
    if sizes is not None:
        summary["bytes_moved"] = sum(sizes.get(k, 0) * len(v) for k, v in moves.items())
    return Plan(reassignment_json(new), reassignment_json(old), summary)


def _worst(statuses: list[str]) -> str:
    order = ["error", "infeasible", "time_limit", "feasible", "optimal"]
    return min(statuses, key=lambda x: order.index(x) if x in order else 0) if statuses else "optimal"


def _per_broker(before: dict, after: dict, brokers: list[int], racks: dict) -> dict:
    """Replicas and preferred leaders per broker before and after (departing brokers end at 0)."""
    counts = {name: Counter(b for reps in a.values() for b in reps) for name, a in (("before", before), ("after", after))}
    leads = {name: Counter(reps[0] for reps in a.values()) for name, a in (("before", before), ("after", after))}
    ids = sorted(set(brokers) | set(counts["before"]))
    return {str(b): {"rack": racks.get(b), "in_cluster": b in set(brokers),
                     "replicas_before": counts["before"][b], "replicas_after": counts["after"][b],
                     "leaders_before": leads["before"][b], "leaders_after": leads["after"][b]} for b in ids}
