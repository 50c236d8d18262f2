"""Port of ``AbstractStickyAssignor.ConstrainedAssignmentBuilder`` (Kafka ``1eb7644``): all subscriptions equal.

With ``P`` partitions and ``N`` members, every member ends with
``minQuota = ⌊P/N⌋`` or ``maxQuota = ⌈P/N⌉`` partitions, exactly ``P mod N``
of them with ``maxQuota`` (reference §3.3):

1. owned partitions are kept, members visited in hash-map order, each
   member's rack-matching owned partitions ordered by (partition number,
   topic) and cut at ``minQuota`` or, while over-min slots remain, ``maxQuota``;
2. the rest, sorted by topic then partition (stably re-sorted by rack
   scarcity when some consumer has a rack), go round-robin within racks,
3. then plain round-robin over the members in id order.

``transferring`` collects ``partitionsTransferringOwnership``: partitions
newly given to a member while another member was revoking them, and every
partition that several members claimed in the same generation.
"""

from __future__ import annotations

from typing import Mapping

from kipopt.instance import java_string_key
from kipopt.solvers.consumers.client.sticky_inputs import TP, RackInfo, StickyAssignorError, StickyInputs, java_sorted
from kipopt.solvers.java_util import hashmap_order


class ConstrainedAssignmentBuilder:
    """``ConstrainedAssignmentBuilder``: quota-bounded keep, rack round-robin, plain round-robin."""

    def __init__(self, inputs: StickyInputs, rack_info: RackInfo, owned: Mapping[str, list[TP]],
                 multiple_owners: set[TP]):
        self.inputs = inputs
        self.rack_info = rack_info
        self.owned = owned  # consumerToOwnedPartitions, iterated in member hash-map order
        self.multiple_owners = multiple_owners
        self.maybe_revoked: dict[TP, str] = {}
        self.under_min: list[str] = []
        self.exactly_min: list[str] = []
        total = sum(inputs.partition_counts.values())
        n = len(owned)
        self.min_quota = total // n
        self.max_quota = -(-total // n)
        self.expected_over_min = total % n
        self.over_min = 0
        self.assignment: dict[str, list[TP]] = {m: [] for m in owned}
        self.assigned: list[TP] = []
        self.transferring: dict[TP, str] = {}

    def build(self) -> dict[str, list[TP]]:
        self._assign_owned_partitions()
        unassigned = self._unassigned_partitions()
        self.under_min = java_sorted(self.under_min)
        self.exactly_min = java_sorted(self.exactly_min)
        unassigned = self.rack_info.sort_partitions_by_rack_consumers(unassigned)
        unassigned = self._assign_rack_aware_round_robin(unassigned)
        self._assign_round_robin(unassigned)
        self._verify_unfilled_members()
        return self.assignment

    # ------------------------------------------------------------------ step 1

    def _assign_owned_partitions(self) -> None:
        # consumerToOwnedPartitions is a second HashMap, filled by put in the subscriptions map's order: where
        # member ids collide into a tree bin its order is not the subscriptions map's
        for consumer in hashmap_order(self.owned):
            owned = self.owned[consumer]
            kept = []
            for tp in owned:
                if self.rack_info.racks_mismatch(consumer, tp):
                    self.maybe_revoked[tp] = consumer
                else:
                    kept.append(tp)
            kept.sort(key=lambda tp: (tp[1], java_string_key(tp[0])))
            kept = [tp for tp in kept if tp not in self.multiple_owners]
            mine = self.assignment[consumer]
            if len(kept) < self.min_quota:
                mine.extend(kept)
                self.assigned.extend(kept)
                self.under_min.append(consumer)
            elif len(kept) >= self.max_quota and self.over_min < self.expected_over_min:
                self.over_min += 1
                if self.over_min == self.expected_over_min:
                    self.exactly_min.clear()
                self._keep(consumer, kept, self.max_quota)
            else:
                self._keep(consumer, kept, self.min_quota)
                if self.over_min < self.expected_over_min:
                    self.exactly_min.append(consumer)

    def _keep(self, consumer: str, kept: list[TP], quota: int) -> None:
        self.assignment[consumer].extend(kept[:quota])
        self.assigned.extend(kept[:quota])
        for tp in kept[quota:]:
            self.maybe_revoked[tp] = consumer

    def _unassigned_partitions(self) -> list[TP]:
        """All partitions, topics by name and partitions ascending, minus the kept ones."""
        assigned = set(self.assigned)
        counts = self.inputs.partition_counts
        return [(t, p) for t in java_sorted(counts) for p in range(counts[t]) if (t, p) not in assigned]

    # ------------------------------------------------------------------ steps 2 and 3

    def _assign_rack_aware_round_robin(self, unassigned: list[TP]) -> list[TP]:
        """Give partitions to rack-matching unfilled members; return those left for plain round-robin."""
        if not self.rack_info.consumer_racks:
            return unassigned
        next_index = 0
        left = []
        for tp in unassigned:
            consumer = None
            index = self.rack_info.next_rack_consumer(tp, self.under_min, next_index)
            if index >= 0:
                consumer = self.under_min[index]
                count = len(self.assignment[consumer]) + 1
                if count >= self.min_quota:
                    self.under_min.remove(consumer)
                    if count < self.max_quota and self.over_min < self.expected_over_min:
                        self.exactly_min.append(consumer)
                else:
                    index += 1
                next_index = index % len(self.under_min) if self.under_min else 0
            elif self.exactly_min:
                first = self.rack_info.next_rack_consumer(tp, self.exactly_min, 0)
                if first >= 0:
                    consumer = self.exactly_min[first]
                    if len(self.assignment[consumer]) + 1 == self.max_quota:
                        del self.exactly_min[first]
                        self._bump_over_min()
            if consumer is None:
                left.append(tp)
            else:
                self._assign_new_partition(tp, consumer)
        return left

    def _assign_round_robin(self, unassigned: list[TP]) -> None:
        cursor = 0  # a LinkedList iterator over under_min: index of the next element
        for tp in unassigned:
            if cursor < len(self.under_min):
                consumer = self.under_min[cursor]
                cursor += 1
            elif not self.under_min and not self.exactly_min:
                raise StickyAssignorError("No more unfilled consumers to be assigned.")
            elif not self.under_min:
                consumer = self.exactly_min.pop(0)
            else:
                consumer = self.under_min[0]
                cursor = 1
            count = self._assign_new_partition(tp, consumer)
            if count == self.min_quota:
                cursor -= 1
                del self.under_min[cursor]
                self.exactly_min.append(consumer)
            elif count == self.max_quota:
                self.over_min += 1

    def _bump_over_min(self) -> None:
        self.over_min += 1
        if self.over_min == self.expected_over_min:
            self.exactly_min.clear()

    def _assign_new_partition(self, tp: TP, consumer: str) -> int:
        mine = self.assignment[consumer]
        mine.append(tp)
        previous = self.maybe_revoked.get(tp)
        if (previous is not None and previous != consumer) or tp in self.multiple_owners:
            self.transferring[tp] = consumer
        return len(mine)

    def _verify_unfilled_members(self) -> None:
        if not self.under_min:
            return
        if self.over_min != self.expected_over_min:
            raise StickyAssignorError("We haven't reached the expected number of members with more than the "
                                      "minQuota partitions, but no more partitions to be assigned")
        for member in self.under_min:
            if len(self.assignment[member]) != self.min_quota:
                raise StickyAssignorError(f"Consumer: [{member}] doesn't reach minQuota partitions, "
                                          "and no more partitions to be assigned")
