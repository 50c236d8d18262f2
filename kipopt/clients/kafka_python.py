"""kafka-python's client-side assignors (``kafka.coordinator.assignors``) on kipopt consumer instances.

A member's ``topics`` become its subscription, its ``group_instance_id``
(when the instance has one) its static id, and its ``owned`` partitions and
``generation`` go where each assignor reads them, as a real client sends
them: the eager sticky assignor in its ``StickyAssignorUserData``, the
cooperative one in the subscription's ``owned_partitions`` and
``generation_id``; range and round-robin read no history. Member racks are
sent as ``rack_id`` (kafka-python's assignors ignore them). The cooperative
assignor's first-round answer withholds moving partitions; its final
placement (the sticky executor's, which that answer is filtered from) is
returned as ``target``, as ``kipopt solve`` writes Kafka's.

``ASSIGNORS`` pairs each assignor with the kipopt rule it is checked on and
the Java Kafka port it should equal; a port not registered in this kipopt
(``kafka.round_robin``, ``kafka.eager_sticky`` while they are being written)
is simply not compared (:func:`port_available`).

The library is imported on first use, so this module imports without it.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable

from ..errors import KipoptError
from ..instance import ConsumersInstance, from_dict

LIBRARY = "kafka-python"
_ASSIGNORS = "kafka.coordinator.assignors"


def require_library() -> None:
    """Import the library's assignors, or raise :class:`~kipopt.errors.KipoptError` saying how to install
    it: a missing library is not one of its crashes (the notebook counted it as 50 crashes per assignor)."""
    try:
        importlib.import_module(_ASSIGNORS)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "kafka":
            raise
        raise KipoptError(f"{LIBRARY} is not installed: pip install 'kipopt[clients]'") from None


@dataclass(frozen=True)
class Assignor:
    """One kafka-python assignor: its class (``module:Class``), the kipopt rule it is checked on, the Java
    port it mirrors."""

    cls: str
    rule: str
    port: str

    def load(self) -> type:
        module, _, name = self.cls.partition(":")
        return getattr(importlib.import_module(module), name)


ASSIGNORS = {
    "range": Assignor(f"{_ASSIGNORS}.range:RangePartitionAssignor", "range", "kafka.range"),
    "roundrobin": Assignor(f"{_ASSIGNORS}.roundrobin:RoundRobinPartitionAssignor", "balanced", "kafka.round_robin"),
    "sticky": Assignor(f"{_ASSIGNORS}.sticky.sticky_assignor:StickyPartitionAssignor", "balanced",
                       "kafka.eager_sticky"),
    "cooperative-sticky": Assignor(f"{_ASSIGNORS}.cooperative_sticky:CooperativeStickyAssignor", "balanced",
                                   "kafka.cooperative_sticky"),
}
"""kafka-python's assignor name -> what kipopt checks it against (a new pair is one line here)."""


def port_available(name: str) -> bool:
    """Whether the Java port ``ASSIGNORS[name]`` mirrors is registered in this kipopt."""
    from ..methods import methods
    return ASSIGNORS[name].port in methods()


class _Cluster:
    """The two ``ClusterMetadata`` calls the assignors make."""

    def __init__(self, instance: ConsumersInstance):
        self._partitions = {t: set(range(topic.partitions)) for t, topic in instance.topics.items()}

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self._partitions.get(topic)

    def topics(self, exclude_internal_topics: bool = True) -> set[str]:
        return set(self._partitions)


@dataclass(frozen=True)
class _Member:
    """A ``JoinGroupResponseMember`` as the assignors read it."""

    member_id: str
    group_instance_id: str | None
    metadata: Any


def _by_topic(partitions: Iterable[str]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = defaultdict(list)
    for p in partitions:
        topic, _, number = p.rpartition("-")
        grouped[topic].append(int(number))
    return {t: sorted(ps) for t, ps in grouped.items()}


def _subscription(member: Any, name: str) -> Any:
    from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription
    owned = _by_topic(member.owned)
    user_data: Any = b""
    owned_partitions: list = []
    if name == "sticky" and member.owned:
        user_data = StickyAssignorUserData(previous_assignment=list(owned.items()), generation=member.generation)
    elif name == "cooperative-sticky":
        owned_partitions = [ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=ps)
                            for t, ps in owned.items()]
    generation = member.generation if member.owned else -1
    return ConsumerProtocolSubscription(version=3, topics=sorted(member.topics), user_data=user_data,
                                        owned_partitions=owned_partitions, generation_id=generation,
                                        rack_id=member.rack)


def members(instance: ConsumersInstance, name: str) -> list[_Member]:
    """The group as kafka-python's leader sees it, in the instance's member order."""
    return [_Member(m.id, getattr(m, "group_instance_id", None), _subscription(m, name)) for m in instance.members]


def assign(instance: ConsumersInstance | dict, name: str) -> dict:
    """kafka-python's ``name`` assignor on ``instance``: a solution object (with ``target`` for the
    cooperative assignor). Exceptions of the library propagate; without the library,
    :func:`require_library`'s error."""
    inst = instance if isinstance(instance, ConsumersInstance) else from_dict(instance)
    require_library()
    cls = ASSIGNORS[name].load()
    cluster, group = _Cluster(inst), members(inst, name)
    result = cls().assign(cluster, group)
    solution = {"family": "consumers", "assignment": {m: _names(a.assigned_partitions) for m, a in result.items()}}
    if name == "cooperative-sticky":
        from kafka.coordinator.assignors.sticky.sticky_assignor import StickyAssignmentExecutor
        executor = StickyAssignmentExecutor(cluster, {m.member_id: cls.parse_member_metadata(m.metadata)
                                                      for m in group})
        executor.perform_initial_assignment()
        executor.balance()
        solution["target"] = {m.member_id: _names(executor.get_final_assignment(m.member_id)) for m in group}
    return solution


def _names(assigned: Iterable) -> list[str]:
    return [f"{topic}-{p}" for topic, partitions in assigned for p in partitions]


def main(argv: list[str] | None = None) -> int:
    """``python -m kipopt.clients.kafka_python NAME``: instances as JSON lines on stdin, one line out each:
    the solution object, or ``{"error": "TypeError: ..."}`` where the assignor raised. Run under two
    ``PYTHONHASHSEED`` values to see whether the library's answer depends on the hash seed."""
    name = (argv if argv is not None else sys.argv[1:])[0]
    try:
        require_library()
    except KipoptError as exc:
        print(f"kipopt: error: {exc}", file=sys.stderr)
        return 2
    for raw in sys.stdin:
        if not raw.strip():
            continue
        try:
            out = assign(from_dict(json.loads(raw)), name)
        except Exception as exc:  # noqa: BLE001 - the library's crash is the finding
            out = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["ASSIGNORS", "Assignor", "assign", "members", "port_available", "require_library"]
