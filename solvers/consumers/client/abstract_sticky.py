"""Port of ``org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor`` (Kafka ``1eb7644``).

The driver of the sticky assignor, over the inputs of :mod:`.sticky_inputs`:

* :func:`resolve_ownership` is ``allSubscriptionsEqual``: the generation
  conflicts that decide who still owns what, walked in hash-map order;
* :func:`sticky_assign` is ``assignPartitions``: the constrained builder
  (:mod:`.constrained_builder`) when all subscriptions are equal, the
  general builder (:mod:`.general_builder`) otherwise. It returns the full
  target and, for the constrained path, the partitions transferring ownership
  (``None`` on the general path, as in Kafka). The cooperative stripping lives
  in :mod:`.cooperative_sticky`.

Partitions are ``(topic, partition)`` tuples throughout.
"""

from __future__ import annotations

from dataclasses import dataclass

from kipopt.solvers.consumers.client.constrained_builder import ConstrainedAssignmentBuilder
from kipopt.solvers.consumers.client.general_builder import GeneralAssignmentBuilder
from kipopt.solvers.consumers.client.sticky_inputs import (  # noqa: F401  (re-exported: the driver's inputs)
    DEFAULT_GENERATION, TP, RackInfo, StickyAssignorError, StickyInputs, sticky_inputs)

# --------------------------------------------------------------------------- ownership (allSubscriptionsEqual)


@dataclass
class Ownership:
    """Outcome of ``allSubscriptionsEqual``: who keeps which owned partition after generation conflicts."""

    all_equal: bool
    owned: dict[str, list[TP]]  # consumerToOwnedPartitions, keyed in member order
    multiple_owners: set[TP]  # partitionsWithMultiplePreviousOwners
    max_generation: int


def resolve_ownership(inputs: StickyInputs) -> Ownership:
    """Walk the members in hash-map order; same-generation double claims invalidate the partition.

    A later claimant with a higher generation takes the partition over, a lower
    one is ignored, an equal one removes it from the recorded owner and becomes
    the recorded owner itself (without getting it).
    """
    all_equal = True
    first_topics: set[str] = set()
    owner_of: dict[TP, str] = {}
    owned: dict[str, list[TP]] = {}
    multiple: set[TP] = set()
    max_generation = DEFAULT_GENERATION
    for member in inputs.members:
        topics = inputs.topics[member]
        if not first_topics:
            first_topics.update(topics)
        elif all_equal and not (len(topics) == len(first_topics) and first_topics.issuperset(topics)):
            all_equal = False
        generation = inputs.generation[member]
        max_generation = max(max_generation, generation)
        mine: list[TP] = []
        owned[member] = mine
        for tp in inputs.owned[member]:
            if tp[0] not in inputs.partition_counts:
                continue
            other = owner_of.get(tp)
            if other is None:
                mine.append(tp)
                owner_of[tp] = member
            elif generation == inputs.generation[other]:
                multiple.add(tp)
                _remove(owned[other], tp)
                owner_of[tp] = member
            elif generation > inputs.generation[other]:
                mine.append(tp)
                _remove(owned[other], tp)
                owner_of[tp] = member
    return Ownership(all_equal, owned, multiple, max_generation)


def _remove(items: list, item: object) -> None:
    """``List.remove(Object)``: drop the first occurrence, if any."""
    try:
        items.remove(item)
    except ValueError:
        pass


# --------------------------------------------------------------------------- assignPartitions


@dataclass
class StickyOutcome:
    """The target of ``AbstractStickyAssignor.assignPartitions`` and its ``partitionsTransferringOwnership``.

    ``transferring`` is ``None`` on the general path (the cooperative assignor
    then computes it from the raw owned partitions).
    """

    assignment: dict[str, list[TP]]
    transferring: dict[TP, str] | None
    constrained: bool
    rack_aware: bool


def sticky_assign(inputs: StickyInputs) -> StickyOutcome:
    """``AbstractStickyAssignor.assignPartitions``: the constrained builder if all subscriptions are equal."""
    rack_info = RackInfo(inputs)
    ownership = resolve_ownership(inputs)
    if ownership.all_equal:
        builder = ConstrainedAssignmentBuilder(inputs, rack_info, ownership.owned, ownership.multiple_owners)
        assignment = builder.build()
        return StickyOutcome(assignment, builder.transferring, True, rack_info.rack_aware)
    general = GeneralAssignmentBuilder(inputs, rack_info, ownership.owned, ownership.max_generation)
    return StickyOutcome(general.build(), None, False, rack_info.rack_aware)
