"""A cooperative answer's partial assignment (the first round of Kafka's cooperative protocol), checked on
its own beside its ``target``.

In the cooperative protocol a partition moves in two rounds: its owner first gives it up, and only in a
later round is it given to its new member. So a partial assignment must withhold every partition it moves
away from a member that owns it. Kafka's two paths decide "owns" differently
(``CooperativeStickyAssignor.adjustAssignment``: the general path from the raw ``ownedPartitions``, the
constrained path from each partition's claims resolved by generation), so the check is the part both
keep: a partition a member gets without having listed it, while its owner (the only claimant at the
highest generation it is claimed with, as both paths resolve claims) does not get it back, is moved in one
round (``partial_not_revoked``).
"""

from __future__ import annotations

from typing import Any

from ..methods import Violation
from . import Evaluation, ViolationLog


def partial_violations(instance: Any, partial: Evaluation, assignment: dict, target: dict) -> list[Violation]:
    """What the partial ``assignment`` breaks on its own, each rule named ``partial_*``: everything its
    evaluation ``partial`` finds but the partitions it leaves to nobody (those are what a cooperative round
    withholds); ``partial_not_in_target``: a partition it gives a member whose target does not (a member's
    partial assignment is part of its target); ``partial_not_revoked`` (module doc)."""
    found = [Violation(f"partial_{v.rule}", v.count, v.examples) for v in partial.violations
             if not v.rule.startswith("unassigned")]
    log = ViolationLog()
    for member, parts in assignment.items():
        for part in sorted(set(parts).difference(target.get(member, ())), key=str):
            log.add("partial_not_in_target", f"{part} is given to {member} by the partial assignment, not by "
                                             f"the target")
    owner = claim_owners(instance)
    owned = {m.id: set(m.owned) for m in instance.members}
    for member, parts in assignment.items():
        mine = owned.get(member, set())
        for part in parts:
            other = owner.get(part)
            if other is not None and other != member and part not in mine and part not in assignment.get(other, ()):
                log.add("partial_not_revoked", f"{part} is given to {member} while {other} still owns it: "
                                               f"{other} must give it up in an earlier round")
    return found + log.violations()


def claim_owners(instance: Any) -> dict[str, str]:
    """Partition -> its owner as Kafka's sticky assignors resolve claims (``allSubscriptionsEqual``): the
    only claimant at the highest generation any member claims it with (two at that generation: nobody)."""
    best: dict[str, tuple[int, str | None]] = {}
    for m in instance.members:
        for part in dict.fromkeys(m.owned):
            found = best.get(part)
            if found is None or m.generation > found[0]:
                best[part] = (m.generation, m.id)
            elif m.generation == found[0] and found[1] != m.id:
                best[part] = (found[0], None)
    return {p: m for p, (_, m) in best.items() if m is not None}
