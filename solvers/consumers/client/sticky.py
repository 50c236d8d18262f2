"""Port of the eager ``org.apache.kafka.clients.consumer.StickyAssignor`` (Kafka ``1eb7644``), method ``kafka.eager_sticky``.

The eager assignor is ``AbstractStickyAssignor`` (:mod:`.abstract_sticky`: the
constrained and general builders, generations, KIP-881 racks from the
subscriptions' ``rackId``) with its own ``memberData``: the owned partitions
and generation always come from the subscription's *user data*, because an
eager client revokes everything before it joins and sends no owned partitions
of its own. kipopt's ``owned`` and ``generation`` stand for what that user data
carries, as a real client writes it (``serializeTopicPartitionAssignment``):

* a member with no generation (-1) and nothing owned sends no user data
  (it never had an assignment): no partitions, no generation;
* otherwise the partitions grouped by topic through a ``HashMap`` filled by
  ``computeIfAbsent`` (``CollectionUtils.groupPartitionsByTopic``), so the
  decoded list runs topic by topic in that map's order, each topic's
  partitions in the member's ``owned`` order. A generation of -1 with owned
  partitions is version-0 user data (no generation field), which Kafka treats
  like a missing generation.

The subscription's own generation (read in ownership conflicts) is the same
generation, as the eager client sends it. Unlike the cooperative assignor,
the eager one returns the full assignment: nothing is withheld. Like every
sticky assignor it does not read ``group.instance.id``. Its rule is
``balanced`` (the sticky balance, minimum cross-rack, then fewest revocations).
"""

from __future__ import annotations

import dataclasses

from kipopt.instance import ConsumersInstance
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solution import Status
from kipopt.solvers.consumers.client.abstract_sticky import (
    DEFAULT_GENERATION, TP, StickyAssignorError, StickyInputs, StickyOutcome, sticky_assign, sticky_inputs)
from kipopt.solvers.java_util import small_hashmap_order

KAFKA_CLASS = "org.apache.kafka.clients.consumer.StickyAssignor"


def user_data_partitions(owned: tuple[TP, ...], generation: int) -> tuple[TP, ...]:
    """The owned partitions as ``StickyAssignor.memberData`` decodes them from the member's user data.

    >>> user_data_partitions((("b", 1), ("a", 0), ("b", 0)), 3)
    (('a', 0), ('b', 1), ('b', 0))
    """
    if not owned and generation == DEFAULT_GENERATION:
        return ()
    by_topic: dict[str, list[TP]] = {}
    for tp in owned:
        by_topic.setdefault(tp[0], []).append(tp)
    calls = [tp[0] for tp in owned]  # one computeIfAbsent per partition
    return tuple(tp for topic in small_hashmap_order(calls, head_insertion=True) for tp in by_topic[topic])


def eager_inputs(instance: ConsumersInstance) -> StickyInputs:
    """The §7 inputs with each member's owned partitions in user-data order."""
    inputs = sticky_inputs(instance)
    owned = {m: user_data_partitions(tps, inputs.generation[m]) for m, tps in inputs.owned.items()}
    return dataclasses.replace(inputs, owned=owned)


def eager_sticky_assign(instance: ConsumersInstance) -> StickyOutcome:
    """``new StickyAssignor().assign(cluster, groupSubscription)``: the full sticky assignment."""
    return sticky_assign(eager_inputs(instance))


def _run(instance: ConsumersInstance, options: SolveOptions) -> MethodResult:
    try:
        outcome = eager_sticky_assign(instance)
    except StickyAssignorError as exc:
        return MethodResult({}, Status.INFEASIBLE, message=f"Kafka's StickyAssignor gives no result: {exc}")
    assignment = {m.id: tuple(f"{t}-{p}" for t, p in outcome.assignment.get(m.id, ())) for m in instance.members}
    info = {"sticky_builder": "constrained" if outcome.constrained else "general", "rack_aware": outcome.rack_aware}
    return MethodResult(assignment, info=info)


METHODS = [
    Method("kafka.eager_sticky", "consumers", "balanced", _run,
           "client eager StickyAssignor (AbstractStickyAssignor, KIP-881 racks): owned partitions and generation "
           "from the user data, the full assignment returned (no cooperative withholding)",
           kafka_class=KAFKA_CLASS),
]
RULES: list = []
