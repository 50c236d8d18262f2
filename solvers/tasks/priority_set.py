"""Port of Kafka Streams' ``ConstrainedPrioritySet``.

``org.apache.kafka.streams.processor.internals.assignment.ConstrainedPrioritySet``
keeps client ids in a ``PriorityQueue`` ordered by (weight now, process id).
``poll(task, extra)`` pops clients in that order until one satisfies the
set's constraint and ``extra``, pushes the rejected ones back and returns the
winner, which leaves the set until it is offered again; ``offer`` (re)inserts
a client, refreshing its key.

Every caller re-offers a client whose weight changed before the next poll
(the digest, §0), so the heap always reflects current weights and a poll is
exactly the arg-min of (current weight, client order) over the members that
pass both predicates. This port computes that arg-min directly; it keeps the
membership (a polled client stays out until offered), which matters inside
``ClientTagAwareStandbyTaskAssignor``'s per-task loop.

>>> load = {"a": 2.0, "b": 1.0, "c": 1.0}
>>> s = ConstrainedPrioritySet(("a", "b", "c"), lambda c, t: c != "b", load.get)
>>> s.offer_all(("a", "b", "c"))
>>> s.poll("0_0"), s.poll("0_0"), s.poll("0_0")
('c', 'a', None)
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

Constraint = Callable[[str, str], bool]


class ConstrainedPrioritySet:
    """Least-weight client satisfying a (client, task) constraint; ties to the first client in order."""

    def __init__(self, order: Sequence[str], constraint: Constraint, weight: Callable[[str], float]) -> None:
        self._order = tuple(order)
        self._constraint = constraint
        self._weight = weight
        self._members: set[str] = set()

    def offer(self, client: str) -> None:
        self._members.add(client)

    def offer_all(self, clients: Iterable[str]) -> None:
        self._members.update(clients)

    def poll(self, task: str, extra: Callable[[str], bool] | None = None) -> str | None:
        """The least-loaded member that passes the constraint and ``extra``; it leaves the set."""
        best, best_weight = None, 0.0
        for client in self._order:  # ascending client order: a strict < keeps the first of equal weights
            if client not in self._members or not self._constraint(client, task):
                continue
            if extra is not None and not extra(client):
                continue
            w = self._weight(client)
            if best is None or w < best_weight:
                best, best_weight = client, w
        if best is not None:
            self._members.discard(best)
        return best
