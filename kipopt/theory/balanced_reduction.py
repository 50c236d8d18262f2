"""Satisfiability reduces to the consumer rule ``balanced``: both of its criteria are strongly NP-hard.

The rule (:mod:`kipopt.formulations.consumers.rules`): every partition of a
subscribed topic goes to one subscriber, and for every topic t the heaviest
member holding a partition of t holds at most one partition more than the
lightest subscriber of t. Its criteria are cross-rack partitions, then
revoked owned partitions.

Source problem: CNF satisfiability where every literal occurs at most twice
(clauses of any length). It is NP-complete: Tovey (1984) shows 3-SAT stays
NP-complete when every variable occurs at most three times, and
:func:`split_occurrences` is his transformation (a variable occurring k
times becomes k fresh variables chained by the implications
``y_1 -> y_2 -> ... -> y_k -> y_1``; each literal then occurs at most twice).

Construction (:func:`reduce_cnf`), every topic with one partition:

* variable i: four *nodes* ``P_i^1, N_i^1, P_i^2, N_i^2`` on a ring, each with a
  private topic (one partition: every node holds at least 1) and one topic
  per ring edge, subscribed by the edge's two ends;
* the k-th occurrence of literal ``x_i`` (of ``¬x_i``) is node ``P_i^k`` (``N_i^k``);
* clause j: a topic ``c_j`` subscribed by its occurrences' nodes and a
  witness ``W_j``; ``W_j`` also subscribes to a topic ``q_j`` that a member
  ``Z_j`` subscribes to alone besides it. The *pin*: ``q_j``'s partition
  should go to ``W_j``. Mode ``"racks"``: its replicas are on rack ``w``
  (``W_j``'s), every other member is on rack ``z`` and every other partition
  has no known replica rack, so the cross-rack count is the number of pins
  broken. Mode ``"owned"``: no racks, ``W_j`` owns ``q_j``'s partition, so the
  revoked count is the number of pins broken.

Claim: the formula is satisfiable iff the reduced instance has a valid
assignment of criterion 0 (cross-rack in mode ``"racks"``, revoked in
``"owned"``). With every pin kept, ``Z_j`` holds 0, so ``W_j`` holds exactly
its pin (1) and not ``c_j``; the node holding ``c_j`` then holds at most 2,
that is its private partition and ``c_j`` and no ring partition. Every ring
partition goes to one of its two nodes, so the nodes holding no ring
partition are independent on the 4-cycle: all P's or all N's of their
variable, a consistent truth value (:func:`truth_from_assignment`).
Conversely a satisfying truth assignment gives every clause a distinct true
occurrence node, and :func:`assignment_from_truth` places the ring
partitions so that every node holds 2 or 3 and every topic is balanced. The
instance has 4 n + 2 m members, 8 n + 2 m partitions and 2 racks (mode
``"racks"``), numbers in unary: NP-hardness in the strong sense, and since
the optimum is 0 exactly when the answer is yes, no polynomial algorithm
approximates either criterion within any factor unless P = NP.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import product
from typing import Mapping, Sequence

from kipopt.instance import ConsumersInstance, from_dict

Clause = tuple[int, ...]   # DIMACS literals: +i is x_i, -i is ¬x_i, i >= 1
CNF = tuple[Clause, ...]
Assignment = Mapping[str, Sequence[str]]

MODES = ("racks", "owned")
CRITERION = {"racks": "cross_rack", "owned": "revoked"}


@dataclass(frozen=True)
class Reduction:
    """A reduced instance and what maps its assignments back to truth values."""

    cnf: CNF
    variables: int
    mode: str
    instance: ConsumersInstance
    node: dict[tuple[int, int], str]        # (literal, occurrence 1 or 2) -> member id
    clause_topics: tuple[str, ...]          # clause j -> its topic

    @property
    def criterion(self) -> str:
        """The criterion that is 0 exactly when the formula is satisfiable."""
        return CRITERION[self.mode]


def _occurrences(cnf: CNF) -> list[list[tuple[int, int]]]:
    """Per clause, (literal, its occurrence number) in order; a literal occurring thrice is refused."""
    seen: Counter[int] = Counter()
    out = []
    for clause in cnf:
        row = []
        for lit in clause:
            seen[lit] += 1
            if seen[lit] > 2:
                raise ValueError(f"literal {lit} occurs more than twice (see split_occurrences)")
            row.append((lit, seen[lit]))
        out.append(row)
    return out


def _ring(i: int) -> list[str]:
    return [f"pos{i}_1", f"neg{i}_1", f"pos{i}_2", f"neg{i}_2"]


def _node_id(lit: int, k: int) -> str:
    return f"{'pos' if lit > 0 else 'neg'}{abs(lit)}_{k}"


def reduce_cnf(cnf: Sequence[Sequence[int]], variables: int, mode: str = "racks") -> Reduction:
    """The consumers instance of the module docstring for ``cnf`` over ``x_1 .. x_variables``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    cnf = tuple(tuple(c) for c in cnf)
    if any(not c or any(lit == 0 or abs(lit) > variables for lit in c) for c in cnf):
        raise ValueError("clauses must be non-empty and use literals ±1 .. ±variables")
    racks = mode == "racks"
    none: list[str] = []
    topics: dict[str, dict] = {}
    subscriptions: dict[str, list[str]] = {}
    for i in range(1, variables + 1):
        ring = _ring(i)
        for k, v in enumerate(ring):
            topics[f"base_{v}"] = {"racks": [none]}
            topics[f"ring{i}_{k}"] = {"racks": [none]}
            subscriptions[v] = [f"base_{v}", f"ring{i}_{k}", f"ring{i}_{(k - 1) % 4}"]
    node = {(lit, k): _node_id(lit, k) for i in range(1, variables + 1) for lit in (i, -i) for k in (1, 2)}
    members = []
    for j, row in enumerate(_occurrences(cnf)):
        topics[f"clause{j}"] = {"racks": [none]}
        topics[f"pin{j}"] = {"racks": [["w"] if racks else none]}
        for lit, k in row:
            subscriptions[node[lit, k]].append(f"clause{j}")
        witness = {"id": f"w{j}", "topics": [f"clause{j}", f"pin{j}"], "rack": "w" if racks else None}
        if not racks:
            witness.update(owned=[f"pin{j}-0"], generation=1)
        members += [witness, {"id": f"z{j}", "topics": [f"pin{j}"], "rack": "z" if racks else None}]
    members += [{"id": v, "topics": sorted(set(ts)), "rack": "z" if racks else None}
                for v, ts in subscriptions.items()]
    instance = from_dict({"format": 1, "family": "consumers", "topics": topics, "members": members})
    return Reduction(cnf, variables, mode, instance, node, tuple(f"clause{j}" for j in range(len(cnf))))


def assignment_from_truth(red: Reduction, truth: Mapping[int, bool]) -> dict[str, tuple[str, ...]]:
    """A valid assignment keeping every pin, from a truth assignment satisfying ``red.cnf``."""
    held: dict[str, list[str]] = {m.id: [] for m in red.instance.members}
    serving: set[str] = set()
    for j, row in enumerate(_occurrences(red.cnf)):
        chosen = next((red.node[lit, k] for lit, k in row if truth[abs(lit)] == (lit > 0)), None)
        if chosen is None:
            raise ValueError(f"clause {j} {red.cnf[j]} is false under the given truth assignment")
        held[chosen].append(f"clause{j}-0")
        serving.add(chosen)
        held[f"w{j}"].append(f"pin{j}-0")
    for i in range(1, red.variables + 1):
        ring = _ring(i)
        true_side = set(ring[0::2] if truth[i] else ring[1::2])
        for k, v in enumerate(ring):
            held[v].append(f"base_{v}-0")
            ends = (v, ring[(k + 1) % 4])
            held[_ring_holder(ends, serving, true_side)].append(f"ring{i}_{k}-0")
    return {m: tuple(ps) for m, ps in held.items()}


def _ring_holder(ends: tuple[str, str], serving: set[str], true_side: set[str]) -> str:
    """No serving node takes a ring partition; with no server on the ring, each node takes its own edge
    (all hold 2); otherwise an edge away from the servers goes to its true-side end."""
    a, b = ends
    if not serving & set(ends):
        if not serving & true_side:
            return a
        return a if a in true_side else b
    return b if a in serving else a


def truth_from_assignment(red: Reduction, assignment: Assignment) -> dict[int, bool]:
    """The certificate: ``x_i`` is true iff a positive node of ``x_i`` holds a clause partition."""
    holder = {p: m for m, ps in assignment.items() for p in ps}
    truth = {i: False for i in range(1, red.variables + 1)}
    for topic in red.clause_topics:
        member = holder[f"{topic}-0"]
        if member.startswith("pos"):
            truth[int(member[3:].split("_")[0])] = True
    return truth


def satisfies(cnf: Sequence[Sequence[int]], truth: Mapping[int, bool]) -> bool:
    return all(any(truth[abs(lit)] == (lit > 0) for lit in clause) for clause in cnf)


def satisfying(cnf: Sequence[Sequence[int]], variables: int) -> dict[int, bool] | None:
    """A satisfying truth assignment by enumeration (small formulas only), or None."""
    for values in product((False, True), repeat=variables):
        truth = dict(enumerate(values, start=1))
        if satisfies(cnf, truth):
            return truth
    return None


def split_occurrences(cnf: Sequence[Sequence[int]], variables: int) -> tuple[CNF, int]:
    """Tovey's transformation: an equisatisfiable CNF in which every literal occurs at most twice.

    Each occurrence gets a fresh variable (numbered in reading order); the copies ``y_1 .. y_k`` of a
    variable occurring k >= 2 times are forced equal by the cycle ``(¬y_1 ∨ y_2), ..., (¬y_k ∨ y_1)``.
    Each copy then occurs once in its original clause and once of each sign in the cycle. Linear size.
    """
    fresh: dict[int, list[int]] = {i: [] for i in range(1, variables + 1)}
    count = 0
    clauses = []
    for clause in cnf:
        row = []
        for lit in clause:
            count += 1
            fresh[abs(lit)].append(count)
            row.append(count if lit > 0 else -count)
        clauses.append(tuple(row))
    for copies in fresh.values():
        if len(copies) >= 2:
            clauses += [(-a, b) for a, b in zip(copies, copies[1:] + copies[:1])]
    return tuple(clauses), count
