"""Evaluator of consumer-group partition assignments (KIP-881).

Metrics, all recomputed from the assignment:

* ``cross_rack``: partitions given to a member whose rack holds no replica of
  them (both sides must have racks; a rack-less side is counted apart in
  ``rack_unknown``);
* ``imbalance``: max - min partitions per member over the whole group;
  ``topic_imbalance``: per topic, max - min among its subscribers (and the worst);
* ``revoked``: owned partitions (``owned`` of the instance) that their member
  does not keep: what stickiness minimises; ``kept`` the rest.

Hard rules broken (violations): ``unsubscribed`` (a partition given to a
member not subscribed to its topic), ``unassigned_partition`` (a partition of
a subscribed topic that nobody gets), ``duplicate_partition`` (a partition
given twice), ``missing_member`` (a member the assignment leaves out: it
counts as getting nothing).
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping

from ..instance import ConsumersInstance
from ..solution import left_out
from . import Evaluation, ViolationLog, spread


def evaluate_consumers(instance: ConsumersInstance, assignment: Mapping[str, tuple[str, ...]]) -> Evaluation:
    log = ViolationLog()
    log.add_all("missing_member", left_out(instance, assignment), lambda m: f"{m} is not in the assignment")
    racks = instance.partition_racks
    given: Counter = Counter()
    cross = unknown = 0
    per_topic: dict[str, Counter] = {t: Counter() for t in instance.topics}
    for member in instance.members:
        parts = assignment.get(member.id, ())
        subscribed = set(member.topics)
        for p in parts:
            given[p] += 1
            topic = p.rpartition("-")[0]
            per_topic[topic][member.id] += 1
            if topic not in subscribed:
                log.add("unsubscribed", f"{p} given to {member.id}, which does not subscribe to {topic}")
            if member.rack is None or not racks[p]:
                unknown += 1
            elif member.rack not in racks[p]:
                cross += 1
    for p, n in given.items():
        if n > 1:
            log.add("duplicate_partition", f"{p} is given {n} times")
    for p in instance.subscribed_partitions:
        if p not in given:
            log.add("unassigned_partition", f"{p} is given to nobody")
    topic_spread = {t: spread(c.get(m.id, 0) for m in instance.members if t in m.topics)
                    for t, c in per_topic.items() if any(t in m.topics for m in instance.members)}
    kept = sum(1 for m in instance.members for p in set(m.owned) & set(assignment.get(m.id, ())))
    owned = sum(len(m.owned) for m in instance.members)
    counts = {m.id: len(assignment.get(m.id, ())) for m in instance.members}
    metrics = {
        "cross_rack": cross, "rack_unknown": unknown, "assigned": sum(given.values()),
        "partitions_per_member": counts, "imbalance": spread(counts.values()),
        "topic_imbalance": topic_spread, "worst_topic_imbalance": max(topic_spread.values(), default=0),
        "kept": kept, "revoked": owned - kept,
    }
    return Evaluation("consumers", metrics, log.violations())
