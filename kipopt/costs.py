"""KIP-925 placement costs, exactly as ``instance-format.md`` ("Costs") defines them.

The cost of placing task ``t`` on client ``c`` in a role is
``traffic_cost x (cost partitions of t with no replica in rack(c))`` plus
``non_overlap_cost`` if ``c`` did not hold ``t`` in that role at the start.
Cost partitions are the inputs for an active (inputs and changelogs with
``rack_aware_assignment_cost_partitions: "all"``) and the changelogs for a
standby. Cross-rack traffic counts only when both sides have racks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from .instance import TasksInstance
from .solution import TaskRoles

ROLES = ("active", "standby")


def cross_rack_partitions(instance: TasksInstance, task: str, rack: str | None, role: str) -> int:
    """Cost partitions of ``task`` in ``role`` that have racks but none equal to ``rack``.

    >>> from kipopt.instance import from_dict
    >>> x = from_dict({"format": 1, "family": "tasks",
    ...     "topics": {"in": {"racks": [["r1", "r2"]]}, "cl": {"racks": [["r3"]]}},
    ...     "tasks": {"0_0": {"inputs": ["in-0"], "changelogs": ["cl-0"]}},
    ...     "clients": {"a": {"rack": "r1"}}})
    >>> [cross_rack_partitions(x, "0_0", "r1", role) for role in ROLES]
    [0, 1]
    >>> cross_rack_partitions(x, "0_0", None, "standby")
    0
    """
    if rack is None:
        return 0
    racks = instance.partition_racks
    return sum(1 for p in instance.cost_partitions(task, role) if racks[p] and rack not in racks[p])


@dataclass(frozen=True)
class Cost:
    """Traffic and non-overlap parts of a KIP-925 cost."""

    traffic: int
    non_overlap: int

    @property
    def total(self) -> int:
        return self.traffic + self.non_overlap


def role_cost(instance: TasksInstance, assignment: Mapping[str, TaskRoles], role: str,
              traffic_cost: int | None = None, non_overlap_cost: int | None = None) -> Cost:
    """Cost of every ``role`` placement of ``assignment`` against the instance's starting lists.

    Costs default to the instance's configured ones (Kafka's 10 and 1 when unset).
    Warm-ups are not standbys here (KIP-441 counts them apart).
    """
    traffic_cost = instance.config.traffic_cost if traffic_cost is None else traffic_cost
    non_overlap_cost = instance.config.non_overlap_cost if non_overlap_cost is None else non_overlap_cost
    traffic = moved = 0
    for cid, roles in assignment.items():
        client = instance.clients[cid]
        before = set(getattr(client, role))
        for task in getattr(roles, role):
            traffic += cross_rack_partitions(instance, task, client.rack, role)
            moved += task not in before
    return Cost(traffic * traffic_cost, moved * non_overlap_cost)
