"""Port of the KIP-848 server-side ``org.apache.kafka.coordinator.group.assignor.RangeAssignor``.

Follows Kafka at commit 1eb7644 (the KAFKA-16944 rewrite): members sorted as
``sortMemberIds`` does, static members (``group_instance_id``) first by
instance id, then the dynamic ones by member id; for every topic, its subscribers in that order each take the
next contiguous block of ``P div N`` partitions, plus one while the
``P mod N`` extras last. Homogeneous groups use every member as a subscriber
of every topic; heterogeneous ones count each topic's subscribers only, which
gives the same blocks. The current assignment and racks are ignored, so the
result depends on member and instance ids alone, and equals the client ``RangeAssignor``
whenever that one does not turn rack-aware (§9).

>>> from kipopt.instance import from_dict
>>> x = from_dict({"format": 1, "family": "consumers", "topics": {"t": {"racks": [[], [], []]}},
...     "members": [{"id": "b", "topics": ["t"]}, {"id": "a", "topics": ["t"]}]})
>>> server_range(group_spec(x))
{'a': ('t-0', 't-1'), 'b': ('t-2',)}
"""

from __future__ import annotations

from kipopt.instance import ConsumersInstance, java_string_key
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solvers.consumers.group.spec import GroupSpec, Uuid, group_spec, in_instance_order, single_owner, to_assignment


class PartitionAssignorException(Exception):
    """Kafka's ``PartitionAssignorException`` (a subscription to a topic the metadata does not know)."""


def sort_member_ids(spec: GroupSpec) -> list[str]:
    """``RangeAssignor.sortMemberIds``: static members by instance id first, then the rest by member id."""
    statics = sorted((m for m in spec.members if m.instance_id is not None), key=lambda m: java_string_key(m.instance_id))
    dynamics = sorted((m for m in spec.members if m.instance_id is None), key=lambda m: java_string_key(m.id))
    return [m.id for m in statics + dynamics]


def server_range(spec: GroupSpec) -> dict[str, tuple[str, ...]]:
    """``RangeAssignor.assign(groupSpec, describer)``, as member -> sorted partitions."""
    members = {m.id: m for m in spec.members}
    order = sort_member_ids(spec)
    subscribers: dict[Uuid, int] = {}
    for mid in order:
        for t in (members[order[0]].topics if spec.homogeneous else members[mid].topics):
            subscribers[t] = subscribers.get(t, 0) + 1
    for t in subscribers:
        if spec.num_partitions(t) == -1:
            raise PartitionAssignorException("Member is subscribed to a non-existent topic")
    quota = {t: divmod(spec.num_partitions(t), n) for t, n in subscribers.items()}
    next_range = dict.fromkeys(subscribers, 0)
    target: dict[str, dict[Uuid, range]] = {}
    for mid in order:
        assignment: dict[Uuid, range] = {}
        for t in (members[order[0]].topics if spec.homogeneous else members[mid].topics):
            floor, extra = quota[t]
            size = floor + (1 if extra > 0 else 0)
            quota[t] = (floor, extra - 1 if extra > 0 else extra)
            start = next_range[t]
            end = min(start + size, spec.num_partitions(t))
            next_range[t] = end
            if start < end:
                assignment[t] = range(start, end)
        target[mid] = assignment
    return to_assignment(spec, target)


def _run(instance: ConsumersInstance, options: SolveOptions) -> MethodResult:
    return MethodResult(in_instance_order(instance, server_range(group_spec(instance, current=False))))


METHODS = [
    Method("kafka.server_range", "consumers", "range", _run,
           "KIP-848 server-side RangeAssignor (no racks, ignores the current assignment)",
           kafka_class="org.apache.kafka.coordinator.group.assignor.RangeAssignor",
           requires=single_owner),
]
RULES: list = []
