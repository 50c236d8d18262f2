"""Port of ``org.apache.kafka.clients.consumer.CooperativeStickyAssignor`` (Kafka ``1eb7644``), method ``kafka.cooperative_sticky``.

``memberData`` is (``ownedPartitions``, ``generationId``) of the v3 consumer
protocol subscription (reference §7: generation ``-1`` means none). The full
target is ``AbstractStickyAssignor.assignPartitions``
(:func:`~kipopt.solvers.consumers.client.abstract_sticky.sticky_assign`); Kafka then
withholds every partition that transfers ownership (``adjustAssignment``):

* constrained path: the builder's ``partitionsTransferringOwnership``;
* general path: partitions a member gets without having listed them as owned
  *and* that some member listed as owned but does not get back, from the raw
  ``ownedPartitions`` (generations ignored).

The solution's ``assignment`` is that partial assignment; ``target`` the full one.
Like every sticky assignor it orders members by member id alone and does not
read ``group.instance.id`` (``Subscription.groupInstanceId``): static members
change nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass

from kipopt.instance import ConsumersInstance
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solution import Status
from kipopt.solvers.consumers.client.abstract_sticky import TP, StickyAssignorError, StickyInputs, sticky_assign, sticky_inputs

KAFKA_CLASS = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"


@dataclass
class CooperativeResult:
    """Kafka's return value (``partial``), the target it converges to, and what was withheld."""

    partial: dict[str, list[TP]]
    target: dict[str, list[TP]]
    withheld: dict[TP, str]
    constrained: bool
    rack_aware: bool


def cooperative_sticky_assign(inputs: StickyInputs) -> CooperativeResult:
    """``CooperativeStickyAssignor.assignPartitions``."""
    outcome = sticky_assign(inputs)
    target = outcome.assignment
    transferring = outcome.transferring
    if transferring is None:
        transferring = partitions_transferring_ownership(inputs, target)
    partial = {m: list(tps) for m, tps in target.items()}
    for tp, member in transferring.items():
        partial[member].remove(tp)
    return CooperativeResult(partial, target, transferring, outcome.constrained, outcome.rack_aware)


def partitions_transferring_ownership(inputs: StickyInputs, assignment: dict[str, list[TP]]) -> dict[TP, str]:
    """``computePartitionsTransferringOwnership``: added to one member while revoked from another."""
    added: dict[TP, str] = {}
    revoked: set[TP] = set()
    for member, assigned in assignment.items():
        owned = inputs.owned[member]
        owned_set = set(owned)
        for tp in assigned:
            if tp not in owned_set:
                added[tp] = member
        assigned_set = set(assigned)
        revoked.update(tp for tp in owned if tp not in assigned_set)
    return {tp: m for tp, m in added.items() if tp in revoked}


def _as_strings(instance: ConsumersInstance, assignment: dict[str, list[TP]]) -> dict[str, tuple[str, ...]]:
    return {m.id: tuple(f"{t}-{p}" for t, p in assignment.get(m.id, ())) for m in instance.members}


def run_cooperative_sticky(instance: ConsumersInstance, options: SolveOptions) -> MethodResult:
    try:
        result = cooperative_sticky_assign(sticky_inputs(instance))
    except (StickyAssignorError, NotImplementedError) as exc:
        return MethodResult({}, Status.INFEASIBLE, message=f"Kafka's CooperativeStickyAssignor gives no result: {exc}")
    info = {"sticky_builder": "constrained" if result.constrained else "general",
            "rack_aware": result.rack_aware}
    return MethodResult(_as_strings(instance, result.partial), target=_as_strings(instance, result.target), info=info)


METHODS = [
    Method("kafka.cooperative_sticky", "consumers", "balanced", run_cooperative_sticky,
           "client CooperativeStickyAssignor (AbstractStickyAssignor, KIP-881 racks); assignment withholds "
           "partitions still being revoked, target is the full assignment", kafka_class=KAFKA_CLASS, partial=True),
]
RULES: list = []
