"""KAFKA-19048 (open pull request apache/kafka#19858, KIP-1151): the minimal-movement replica balancer.

Port of ``org.apache.kafka.metadata.MinimalMovementReplicaBalancer`` as the pull request proposes it (the
index holds the file and its test, not the commit: the author's fork snapshot ends in February 2024),
registered as ``proposal.minimal_movement``. Constructed with the current assignment (partition ids
0..P-1), the target brokers and the usable brokers with their racks, ``assignReplicasToBrokers``:

* gives every broker an ideal replica count: with RF = racks, each rack ``P`` replicas; otherwise a
  rack whose broker-weighted share reaches ``P`` gets ``P`` and the rest share what is left; within a
  rack the average, the remainder to the brokers furthest above it (non-target brokers: 0);
* walks the brokers (rack conflicts first, then those above their ideal), moving replicas off a broker
  while it holds two replicas of a partition in one rack or more than its ideal: the replacement is
  the first broker (Java hash order) not below its ideal on a rack the partition does not use when the
  rack is over its ideal or in conflict, else the least loaded broker of the same rack;
* then reorders replicas: a leader per partition by the largest deficit to an ideal leader count (ties
  to the broker with the smaller remaining quota), then followers by the least-used adjacency
  ``a -> b`` (RF 2: swaps by leader deficit, then adjacency).

Java's hash orders are reproduced with :mod:`kipopt.solvers.java_util` (``HashMap``/``HashSet`` of
``Integer`` and rack names, a broker's partition map with removals). Racks: a broker without one (or
a broker of ``current`` missing from the instance, being decommissioned) is its own rack, as the Java
gives it a random UUID rack; only where such a rack's name would order a Java ``HashMap`` (a target
broker without a rack) can Java's own output vary from run to run. Where the Java would loop forever
(a broker above its ideal with no replica it can move) the port refuses. Rack conflicts are kept per
broker incrementally (the Java recomputes them over every partition after each move, with the same
result: each broker's conflicting partitions ascending). The pull request's twelve unit tests are
ported (``tests/solvers/replicas/test_proposal_minimal_movement.py``), and the port answers exactly as the
pull request's class compiled with javac 17 on 1,700 random racked clusters (scale in and out, brokers
unknown to the usable list): 969 identical replica lists, the other 731 refused by both (the Java threw
``InvalidReplicationFactorException`` or looped forever); 60 are kept as test vectors.

>>> minimal_movement({0: [1, 2], 1: [1, 2], 2: [1, 2]}, [1, 2, 3], [(1, "a"), (2, "b"), (3, "c")])
{0: [3, 2], 1: [1, 3], 2: [2, 1]}
"""

from __future__ import annotations

import bisect
from typing import Mapping, Sequence

from kipopt.errors import MethodError
from kipopt.instance import ReplicasInstance
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solution import Status
from kipopt.solvers.java_util import (JavaHashMapOrder, JavaHashSet, hashmap_order, integer_hash, java_string_hash,
                                     small_hashmap_order)
from kipopt.solvers.replicas.proposals.sticky_partition_reassignor import requires_current as moves_current_replicas

INT_MAX = 2**31 - 1


class BalancerRefusal(Exception):
    """What the Java throws (bad input) or where it would never return."""


def _ceil_div(a: int, b: int) -> int:
    return a // b if a % b == 0 else a // b + 1


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


def _hashset_of_list(ids: Sequence[int]) -> list[int]:
    """Iteration order of ``new HashSet<>(list)`` (capacity ``max(size/.75 + 1, 16)``)."""
    return hashmap_order(ids, integer_hash, max(int(len(ids) / 0.75) + 1, 16))


class MinimalMovementReplicaBalancer:
    """The pull request's class; :meth:`assign_replicas_to_brokers` is ``assignReplicasToBrokers``."""

    def __init__(self, assignment: Mapping[int, Sequence[int]], target_broker_ids: Sequence[int],
                 usable_brokers: Sequence[tuple[int, str | None]], rack_aware: bool = True):
        if not assignment:
            raise BalancerRefusal("assignment is empty.")
        ids = [b for b, _ in usable_brokers]
        if len(set(ids)) < len(ids):
            raise BalancerRefusal("Duplicate broker ID found.")
        self.P = len(assignment)
        if 0 not in assignment or set(assignment) != set(range(self.P)):
            raise BalancerRefusal("partition ids must be 0..P-1 (the Java reads partition 0's replication factor)")
        self.a: dict[int, list[int]] = {p: list(assignment[p]) for p in range(self.P)}  # HashMap: ascending
        self.rf = len(self.a[0])
        self.targets = set(target_broker_ids)
        self.target_order = _hashset_of_list(list(target_broker_ids))
        self.total = self.P * self.rf
        involved = list(dict.fromkeys(b for p in range(self.P) for b in self.a[p]))
        involved += [b for b in self.target_order if b not in set(involved)]
        self.involved = involved
        self._racks(usable_brokers, rack_aware)
        self._counts()
        self.average: dict[int, int] = {}
        self.remainder_rack: dict[int, str] = {}
        self.rack_remainder: dict[str, int] = {}
        self._average_distribution()
        self.conflicts: dict[int, list[int]] = {}
        for p in range(self.P):
            self._add_conflicts(p)
        self.ideal: dict[int, int] = {}
        self._ideal_distribution()
        self.rack_ideal: dict[str, int] = {}
        for b, v in self.ideal.items():
            self.rack_ideal[self.rack_of[b]] = self.rack_ideal.get(self.rack_of[b], 0) + v
        self._prioritize()
        self._broker_partitions()
        self._verify()

    # ------------------------------------------------------------------ set-up (the constructor's steps)

    def _racks(self, usable: Sequence[tuple[int, str | None]], rack_aware: bool) -> None:
        known = {b: r for b, r in usable}
        own = 0
        rack_of: dict[int, str] = {}
        for b in self.involved:  # a broker without a rack (or unknown) is its own rack: the Java's random UUID
            r = known.get(b) if rack_aware else None
            if r is None:
                r, own = f"\0own-rack-{b}", own + 1
            rack_of[b] = r
        self.rack_of = rack_of
        broker_order = hashmap_order([b for b, _ in usable if b in rack_of]
                                     + [b for b in self.involved if b not in known], integer_hash)
        members: dict[str, list[int]] = {}
        calls = []  # groupingBy: one computeIfAbsent per broker
        for b in broker_order:  # groupingBy: a HashMap of racks, each a HashSet of brokers filled in that order
            if b in self.targets:
                calls.append(rack_of[b])
                members.setdefault(rack_of[b], []).append(b)
        self.rack_order = small_hashmap_order(calls, java_string_hash, head_insertion=True)
        self.rack_brokers = {r: hashmap_order(members[r], integer_hash) for r in self.rack_order}

    def _counts(self) -> None:
        self.count = {b: 0 for b in self.involved}
        for p in range(self.P):
            for b in self.a[p]:
                self.count[b] += 1
        self.rack_count: dict[str, int] = {}
        for b, k in self.count.items():
            self.rack_count[self.rack_of[b]] = self.rack_count.get(self.rack_of[b], 0) + k

    def _average_distribution(self) -> None:
        by_size = sorted(self.rack_order, key=lambda r: -len(self.rack_brokers[r]))  # stable: ties in hash order
        total, brokers = self.total, len(self.targets)
        for rack in by_size:
            members = self.rack_brokers[rack]
            if self.rf == len(self.rack_order):
                self._excess(members, rack, self.P, len(members))
            else:
                n = len(members)
                if _ceil_div(n * total, brokers) >= self.P:
                    total -= self.P
                    brokers -= n
                    self._excess(members, rack, self.P, len(members))
                else:
                    self._excess(members, "\0common-remainder", total, brokers)

    def _excess(self, members: list[int], rack: str, replicas: int, brokers: int) -> None:
        for b in members:
            self.average[b] = replicas // brokers
            self.remainder_rack[b] = rack
        self.rack_remainder[rack] = replicas % brokers

    def _ideal_distribution(self) -> None:
        self.involved.sort(key=lambda b: -(self.count[b] - self.average.get(b, INT_MAX)))
        for b in self.involved:
            if b not in self.targets:
                self.ideal[b] = 0
                continue
            rack = self.remainder_rack[b]
            if self.rack_remainder[rack] > 0:
                self.ideal[b] = self.average[b] + 1
                self.rack_remainder[rack] -= 1
            else:
                self.ideal[b] = self.average[b]

    def _prioritize(self) -> None:
        self.involved.sort(key=lambda b: (0 if self.conflicts.get(b) else 1,
                                          -_sign(self.count[b] - self.ideal.get(b, INT_MAX))))

    def _broker_partitions(self) -> None:
        self.outer = JavaHashMapOrder(integer_hash)
        self.held: dict[int, JavaHashSet] = {}
        for p in range(self.P):
            for b in self.a[p]:
                self._held_of(b).add(p)

    def _held_of(self, b: int) -> JavaHashSet:
        if b not in self.held:
            self.outer.compute_if_absent(b)
            self.held[b] = JavaHashSet(integer_hash)
        return self.held[b]

    def _verify(self) -> None:
        if self.P <= 0:
            raise BalancerRefusal("Number of partitions must be larger than 0.")
        if self.rf <= 0:
            raise BalancerRefusal("Replication factor must be larger than 0.")
        racks = len({self.rack_of[b] for b in self.involved if b in self.targets})
        if self.rf > racks:
            raise BalancerRefusal(f"Replication factor: {self.rf} larger than available brokers or rack num: "
                                  f"{racks}.")

    # ------------------------------------------------------------------ rack conflicts, kept per broker

    def _conflict_brokers(self, p: int) -> list[int]:
        by_rack: dict[str, list[int]] = {}
        for b in self.a[p]:
            if b in self.targets:
                by_rack.setdefault(self.rack_of[b], []).append(b)
        return [b for bs in by_rack.values() if len(bs) > 1 for b in bs]

    def _add_conflicts(self, p: int) -> None:
        for b in self._conflict_brokers(p):
            lst = self.conflicts.setdefault(b, [])
            at = bisect.bisect_left(lst, p)
            if at == len(lst) or lst[at] != p:
                lst.insert(at, p)

    def _drop_conflicts(self, p: int, brokers: Sequence[int]) -> None:
        for b in brokers:
            lst = self.conflicts.get(b)
            if lst:
                at = bisect.bisect_left(lst, p)
                if at < len(lst) and lst[at] == p:
                    del lst[at]

    # ------------------------------------------------------------------ moving replicas

    def assign_replicas_to_brokers(self) -> dict[int, list[int]]:
        active = list(self.involved)
        present = set(active)
        for b in active:
            while True:
                violates, excess = bool(self.conflicts.get(b)), self._excess_replicas(b)
                if not (violates or excess):
                    break
                moved = False
                if violates:
                    p = self.conflicts[b][0]
                    moved = self._move(b, p, True, present)
                else:
                    for p in list(self.held[b]):
                        if self._move(b, p, False, present):
                            moved = True
                            break
                if not moved:
                    raise BalancerRefusal(f"broker {b} cannot shed a replica (the Java loops here forever)")
            if self.ideal[b] == self.count[b]:
                present.discard(b)
        self._adjust_order()
        return self.a

    def _excess_replicas(self, b: int) -> bool:
        return self.count[b] > 0 and self.count[b] - self.ideal[b] > 0

    def _move(self, b: int, p: int, conflict: bool, present: set[int]) -> bool:
        replicas = self.a[p]
        index = replicas.index(b)
        replicas[:] = [x for x in replicas if x != b]
        used = {self.rack_of[x] for x in replicas if x in self.rack_of}
        candidates = [x for x in self.target_order if x not in replicas and self.rack_of[x] not in used]
        candidates = hashmap_order(candidates, integer_hash)  # Collectors.toSet(): a fresh HashSet
        to = self._replacement(b, candidates, conflict, replicas, present)
        if to is None:
            replicas.insert(index, b)
            return False
        replicas.insert(index, to)
        self._after_move(p, b, to, [x for x in replicas if x != to] + [b])
        return True

    def _replacement(self, b: int, candidates: list[int], conflict: bool, replicas: list[int],
                     present: set[int]) -> int | None:
        rack = self.rack_of[b]
        if conflict or self.rack_count[rack] > self.rack_ideal[rack]:
            pool = [x for x in candidates if x != b and x not in replicas and x in present]
        else:
            pool = [x for x in self.rack_brokers[rack] if x != b and x not in replicas]
            if not pool:
                return self._replacement(b, candidates, True, replicas, present)
        if not pool:
            return None
        return min(pool, key=lambda x: _sign(self.count.get(x, 0) - self.ideal.get(x, 0)))  # first minimal

    def _after_move(self, p: int, frm: int, to: int, before: list[int]) -> None:
        self.count[frm] -= 1
        self.count[to] = self.count.get(to, 0) + 1
        self.rack_count[self.rack_of[frm]] -= 1
        self.rack_count[self.rack_of[to]] = self.rack_count.get(self.rack_of[to], 0) + 1
        self.held[frm].remove(p)
        self._held_of(to).add(p)
        self._drop_conflicts(p, before)  # only p's conflicts change (the Java recomputes every partition's)
        self._add_conflicts(p)

    # ------------------------------------------------------------------ leaders and replica order

    def _adjust_order(self) -> None:
        self._ideal_leaders()
        self.quota = dict(self.count)
        if self.rf > 2:
            self._balance_leaders()
            self._isr_order()
        elif self.rf == 2:
            self._two_replicas_order()

    def _ideal_leaders(self) -> None:
        sizes = {b: len(self.held[b]) for b in self.outer.keys()}
        order = hashmap_order(list(sizes), integer_hash)  # Collectors.toMap: a fresh HashMap, then a stable sort
        remaining = self.P
        self.ideal_leaders: dict[int, int] = {}
        for b in sorted(order, key=lambda x: sizes[x]):
            avg = _ceil_div(remaining, len(self.targets))
            if sizes[b] < avg:
                self.ideal_leaders[b] = sizes[b]
                remaining -= sizes[b]
            else:
                self.ideal_leaders[b] = avg

    def _balance_leaders(self) -> None:
        leaders: dict[int, int] = {}
        for p in range(self.P):
            replicas = self.a[p]
            leader = replicas[0]
            deficit = self.ideal_leaders[leader] - leaders.get(leader, 0)
            for x in replicas[1:]:
                d = self.ideal_leaders[x] - leaders.get(x, 0)
                if d > deficit:
                    leader, deficit = x, d
                elif d == deficit and self.quota[x] < self.quota[leader]:
                    leader = x
            replicas.remove(leader)
            replicas.insert(0, leader)
            leaders[leader] = leaders.get(leader, 0) + 1
            for x in replicas:
                self.quota[x] -= 1

    def _isr_order(self) -> None:
        adjacency: dict[tuple[int, int], int] = {}
        for i in range(self.rf - 1):
            for p in range(self.P):
                replicas = self.a[p]
                pre = replicas[i]
                nxt = self._next_broker(i, adjacency, replicas)
                replicas[:] = [x for x in replicas if x != nxt]
                replicas.insert(i + 1, nxt)
                adjacency[(pre, nxt)] = adjacency.get((pre, nxt), 0) + 1
                if i == self.rf - 3:  # the penultimate replica fixes the last one
                    last = (nxt, replicas[i + 2])
                    adjacency[last] = adjacency.get(last, 0) + 1

    def _next_broker(self, i: int, adjacency: dict, replicas: list[int]) -> int:
        pre, best, nxt = replicas[i], INT_MAX, replicas[i + 1]
        for x in replicas[i + 1:self.rf]:
            k = adjacency.get((pre, x), 0)
            if k < best:
                best, nxt = k, x
        return nxt

    def _two_replicas_order(self) -> None:
        adjacency: dict[tuple[int, int], int] = {}
        leaders: dict[int, int] = {}
        for p in range(self.P):
            replicas = self.a[p]
            pre, nxt = replicas[0], replicas[1]
            pre_d = self.ideal_leaders[pre] - leaders.get(pre, 0)
            nxt_d = self.ideal_leaders[nxt] - leaders.get(nxt, 0)
            swap = nxt_d > pre_d or (nxt_d == pre_d and adjacency.get((nxt, pre), 0) < adjacency.get((pre, nxt), 0))
            if swap:
                replicas[0], replicas[1] = nxt, pre
            pre, nxt = replicas[0], replicas[1]
            adjacency[(pre, nxt)] = adjacency.get((pre, nxt), 0) + 1
            leaders[pre] = leaders.get(pre, 0) + 1


def minimal_movement(assignment: Mapping[int, Sequence[int]], targets: Sequence[int],
                     brokers: Sequence[tuple[int, str | None]], rack_aware: bool = True) -> dict[int, list[int]]:
    """``new MinimalMovementReplicaBalancer(assignment, targets, brokers, rackAware).assignReplicasToBrokers()``;
    ``brokers`` as (id, rack or None)."""
    return MinimalMovementReplicaBalancer(assignment, targets, brokers, rack_aware).assign_replicas_to_brokers()


# --------------------------------------------------------------------------- the method


def requires_current(instance: ReplicasInstance) -> str | None:
    """Why the balancer does not apply: it moves the current replicas of every partition, RF of each, distinct."""
    reason = moves_current_replicas(instance)
    if reason is not None:
        return reason
    return next((f"current.{pid}: a broker is listed twice; the proposal reads distinct replicas"
                 for pid in instance.partition_ids if len(set(instance.current[pid])) != instance.replication_factor),
                None)


def _run(instance: ReplicasInstance, options: SolveOptions) -> MethodResult:
    start = instance.start_partition_id
    current = {pid - start: list(instance.current[pid]) for pid in instance.partition_ids}
    brokers = [(b, instance.rack_of[b]) for b in instance.broker_ids]
    try:
        result = minimal_movement(current, list(instance.broker_ids), brokers)
    except BalancerRefusal as exc:
        return MethodResult({}, Status.INFEASIBLE, message=str(exc))
    except NotImplementedError as exc:  # a HashMap tree bin Java orders by identity hash (unreachable: Integer keys)
        raise MethodError(f"proposal.minimal_movement: {exc}") from exc
    return MethodResult({start + p: tuple(bs) for p, bs in result.items()})


METHODS = [
    Method("proposal.minimal_movement", "replicas", "spread", _run,
           "KAFKA-19048 (open PR apache/kafka#19858, KIP-1151): the minimal-movement replica balancer, moves off "
           "brokers above their ideal count or in a rack conflict, then leaders and ISR order, one topic",
           kafka_class="org.apache.kafka.metadata.MinimalMovementReplicaBalancer (apache/kafka#19858)",
           requires=requires_current),
]
RULES: list = []
