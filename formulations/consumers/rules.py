"""KIP-881 rules for consumer groups: ``range`` and ``balanced``.

Both are recomputed from an assignment alone. Notation: ``M`` members, ``T``
topics, ``S(m)`` the topics member ``m`` subscribes to, ``N_t`` the
subscribers of topic ``t``, ``P_t`` its partition count, ``x_m`` the number
of partitions given to ``m`` and ``x_{m,t}`` those of topic ``t``.

Cross-rack (both rules, as :mod:`kipopt.evaluation.consumers` counts it): a
partition given to a member *with* a rack whose replica racks (non-empty)
exclude that rack. A rack-less member or a partition with no known replica
rack is never cross-rack (the evaluator counts those in ``rack_unknown``).

``range``
    Hard: every partition of a subscribed topic goes to exactly one
    subscriber (the evaluator's ``unsubscribed`` / ``unassigned_partition`` /
    ``duplicate_partition``), and per topic every subscriber holds
    ``floor(P_t/|N_t|)`` or ``ceil(P_t/|N_t|)`` of its partitions
    (``range_quota``); with the partition count fixed, exactly
    ``P_t mod |N_t|`` subscribers hold the ceiling. Kafka's ``RangeAssignor``
    gives the extra partitions to the first members in sorted order: one
    feasible choice among many. Objective: cross-rack partitions.
``balanced``
    Hard: validity as above, and the balance the sticky assignor promises
    (``AbstractStickyAssignor``'s ``isBalanced``, ``balance``): no member
    holds two or more partitions fewer than a member holding a partition of
    a topic it subscribes to::

        for every topic t:  max{x_o : o holds a partition of t} <= min{x_m : m in N_t} + 1

    With uniform subscriptions this is exactly "every member holds
    ``floor(P/M)`` or ``ceil(P/M)``". Kafka's general sticky builder stops
    only when it holds (each sweep moves any partition that has such a
    subscriber; every move strictly lowers its balance score), and the
    server-side uniform assignor's per-topic balancing targets it too.
    It is deliberately *not* the lexicographically most balanced count
    vector: a faithful port can end pairwise balanced but not most balanced
    (members A{t1}, B{t1,t2}, C{t2} keeping owned counts 1, 2, 3, where
    2, 2, 2 is reachable through B), and a port must never break its rule.
    Objective, lexicographic: cross-rack partitions, then owned partitions
    revoked, scalarised as ``cross * (O + 1) + revoked`` with ``O`` the
    number of owned partitions (so one cross-rack partition outweighs every
    revocation); :func:`balanced_parts` reports both and the weight, and
    :func:`balanced_criteria` the two criteria the façade prints under
    ``metrics.criteria`` (``check --tolerance cross_rack=0,revoked=2``
    bounds each of them; ``range``'s only criterion is ``cross_rack``).

Ownership (``owners``): a partition of a subscribed topic is owned by the
member that claims it (``owned``) with the strictly highest generation; when
two or more claimants share the highest generation nobody owns it (Kafka's
"multiple previous owners": its cooperative assignor hands it over anew).
This is Kafka's resolution in ``AbstractStickyAssignor.allSubscriptionsEqual``
except for one HashMap-order-dependent corner (two equal claims *followed*
in map order by a higher one: Kafka then still withholds it from the
higher claimant in the constrained builder). Revoked: owned partitions that
their owner does not get. This is the only meaning of ``revoked`` in
kipopt; the evaluator's count of every claim dropped (one per claimant, as
if each claimant owned it) is ``metrics.claims_revoked``.

>>> from kipopt.instance import from_dict
>>> x = from_dict({"format": 1, "family": "consumers",
...     "topics": {"t": {"racks": [["a"], ["b"], ["a"]]}},
...     "members": [{"id": "c1", "rack": "a", "topics": ["t"], "owned": ["t-1"], "generation": 2},
...                 {"id": "c2", "rack": "b", "topics": ["t"], "owned": ["t-1"], "generation": 1}]})
>>> owners(x)
{'t-1': 'c1'}
>>> a = {"c1": ("t-0", "t-2"), "c2": ("t-1",)}
>>> cross_rack(x, a), revoked(x, a), balanced_objective(x, a), range_violations(x, a)
(0, 1, 1.0, [])
>>> balanced_violations(x, {"c1": ("t-0", "t-1", "t-2"), "c2": ()})[0].rule
'balance'
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from typing import Mapping

from kipopt.evaluation.consumers import cross_and_unknown, group_index
from kipopt.evaluation.cooperative import claim_owners
from kipopt.instance import ConsumersInstance
from kipopt.methods import Rule, Violation

Assignment = Mapping[str, tuple[str, ...]]

_EXAMPLES = 5


def topic_of(partition: str) -> str:
    return partition.rpartition("-")[0]


def is_cross_rack(rack: str | None, replica_racks: frozenset[str]) -> bool:
    """Cross-rack only when both sides have racks and the member's rack holds no replica."""
    return rack is not None and bool(replica_racks) and rack not in replica_racks


def cross_rack(instance: ConsumersInstance, assignment: Assignment) -> int:
    index = group_index(instance)
    return sum(cross_and_unknown(index, m.rack, assignment.get(m.id, ()))[0] for m in instance.members)


_OWNERS: OrderedDict[int, tuple[ConsumersInstance, dict[str, str]]] = OrderedDict()
_OWNERS_SIZE = 256  # as many as the batch oracle keeps instances: a batch cycling through groups keeps hitting


def owners(instance: ConsumersInstance) -> dict[str, str]:
    """Partition -> owning member: the unique highest-generation claimant (see the module doc).

    Cached for the most recently used instances (the façade, the models and every check of a batch
    ask again); do not mutate.
    """
    hit = _OWNERS.get(id(instance))
    if hit is not None and hit[0] is instance:
        _OWNERS.move_to_end(id(instance))
        return hit[1]
    found = _owners(instance)
    _OWNERS[id(instance)] = (instance, found)
    if len(_OWNERS) > _OWNERS_SIZE:
        _OWNERS.popitem(last=False)
    return found


def _owners(instance: ConsumersInstance) -> dict[str, str]:
    """The claims resolved as Kafka resolves them (:func:`~kipopt.evaluation.cooperative.claim_owners`), for
    the partitions of topics some member subscribes to."""
    subscribed = {t for m in instance.members for t in m.topics}
    return {p: owner for p, owner in claim_owners(instance).items() if topic_of(p) in subscribed}


def revoked(instance: ConsumersInstance, assignment: Assignment) -> int:
    return sum(len(parts) - len(parts.intersection(assignment.get(m, ())))
               for m, parts in _owned_by(instance).items())


def _owned_by(instance: ConsumersInstance) -> dict[str, frozenset[str]]:
    """Member -> the partitions it owns (:func:`owners` inverted), cached beside it."""
    found = owners(instance)
    hit = _OWNED_BY.get(id(found))
    if hit is not None and hit[0] is found:
        return hit[1]
    by: dict[str, set[str]] = defaultdict(set)
    for p, m in found.items():
        by[m].add(p)
    inverted = {m: frozenset(ps) for m, ps in by.items()}
    _OWNED_BY[id(found)] = (found, inverted)
    if len(_OWNED_BY) > _OWNERS_SIZE:
        _OWNED_BY.popitem(last=False)
    return inverted


_OWNED_BY: OrderedDict[int, tuple[dict, dict[str, frozenset[str]]]] = OrderedDict()


def balanced_parts(instance: ConsumersInstance, assignment: Assignment) -> dict[str, int]:
    """The two criteria of ``balanced``, and the weight of the first in the scalar objective."""
    return {"cross_rack": cross_rack(instance, assignment), "revoked": revoked(instance, assignment),
            "weight": len(owners(instance)) + 1}


def balanced_criteria(instance: ConsumersInstance, assignment: Assignment) -> dict[str, int]:
    """``balanced``'s criteria in priority order: cross-rack partitions, then owned partitions revoked."""
    parts = balanced_parts(instance, assignment)
    return {"cross_rack": parts["cross_rack"], "revoked": parts["revoked"]}


def range_criteria(instance: ConsumersInstance, assignment: Assignment) -> dict[str, int]:
    """``range``'s one criterion (its objective), named so that tolerances and reports read alike."""
    return {"cross_rack": cross_rack(instance, assignment)}


def balanced_objective(instance: ConsumersInstance, assignment: Assignment) -> float:
    parts = balanced_parts(instance, assignment)
    return float(parts["cross_rack"] * parts["weight"] + parts["revoked"])


def range_objective(instance: ConsumersInstance, assignment: Assignment) -> float:
    return float(cross_rack(instance, assignment))


def _violation(rule: str, examples: list[str]) -> list[Violation]:
    return [Violation(rule, len(examples), tuple(examples[:_EXAMPLES]))] if examples else []


def range_violations(instance: ConsumersInstance, assignment: Assignment) -> list[Violation]:
    per_topic: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for member, parts in assignment.items():
        for p in parts:
            per_topic[topic_of(p)][member] += 1
    bad = []
    for t, subscribers in group_index(instance).subscribers.items():
        n, size = len(subscribers), instance.topics[t].partitions
        low, high = size // n, -(-size // n)
        for m in subscribers:
            got = per_topic[t].get(m, 0)
            if not low <= got <= high:
                bad.append(f"{m} holds {got} partitions of {t}; range allows {low}..{high} "
                           f"({size} partitions, {n} subscribers)")
    return _violation("range_quota", bad)


def balanced_violations(instance: ConsumersInstance, assignment: Assignment) -> list[Violation]:
    index = group_index(instance)
    count = {m.id: len(assignment.get(m.id, ())) for m in instance.members}
    heaviest: dict[str, tuple[int, str]] = {}
    for member, parts in assignment.items():
        x = count.get(member, len(parts))
        for t in dict.fromkeys(map(index.topic_of.__getitem__, parts)):
            if t not in heaviest or x > heaviest[t][0]:
                heaviest[t] = (x, member)
    bad = []
    for t, subscribers in index.subscribers.items():
        if t not in heaviest:
            continue
        lightest = min(subscribers, key=lambda m: count[m])
        (high, holder), low = heaviest[t], count[lightest]
        if high >= low + 2:
            bad.append(f"{holder} holds {high} partitions, one of them of {t}, while {lightest} "
                       f"(subscribed to {t}) holds {low}")
    return _violation("balance", bad)


RULES = [
    Rule("range", "consumers", "exact.range", range_objective, range_violations,
         "every subscribed partition to one subscriber, per topic floor/ceil(P/N) each "
         "(P mod N subscribers at the ceiling); minimise cross-rack partitions", criteria=range_criteria),
    Rule("balanced", "consumers", "exact.balanced", balanced_objective, balanced_violations,
         "every subscribed partition to one subscriber, the sticky assignor's balance (no subscriber "
         "of a topic holds 2+ fewer than a member holding one of its partitions); minimise "
         "cross-rack, then owned partitions revoked: cross * (owned + 1) + revoked", criteria=balanced_criteria),
]
