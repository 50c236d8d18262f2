"""``exact.balanced``: the most balanced assignments at minimum cross-rack, then revocations.

The dec-min stages below (their models, read-back and pricing) live in
:mod:`~kipopt.formulations.consumers.decmin` and are re-exported here; this
module drives the exact stages that follow them.

Notation as in :mod:`kipopt.formulations.consumers.rules`; ``c(m)`` is member
m's subscription class (its set of topics with partitions), ``n_c`` the size
of class c, ``W = O + 1`` with ``O`` the number of owned partitions.

Stage 1, most balanced counts. The dec-min ("lexicographically most
balanced") count vectors are the minimisers of ``Σ_m x_m²`` over all valid
assignments (Frank & Murota, decreasing minimisation on M-convex sets). By
class (members of one class are interchangeable, and ``n_c`` members
holding ``X`` in total cost at least ``f_c(X)``, the cost of the even split,
convex piecewise linear with slope ``2q + 1`` on ``[q n_c, (q+1) n_c]``)::

    min  Σ_{c, q} (2q + 1) s_{c,q}
    s.t. Σ_{c ∋ t} f_{t,c} = P_t                           every topic t
         Σ_t f_{t,c} - Σ_q s_{c,q} = n_c L_c                every class c
         0 <= s_{c,q} <= n_c  (L_c <= q < U_c),  f >= 0

``L_c = max_t ceil(P_t/|N_t|) - 1`` and ``U_c = 1 + max_t floor(A_t/|N_t|)``
(``A_t``: partitions of every topic a subscriber of t subscribes to) bound
every dec-min member value of the class: some member holds
``ceil(P_t/|N_t|)`` of t, and no subscriber of t may hold two less
(a transfer would lower ``Σ x²``); a member holding a partition of t holds
at most one more than t's least-loaded subscriber, who holds at most the
average. Narrower still, a dec-min vector is also inc-max (Frank & Murota), so it
maximizes the least member count and minimizes the greatest: the segments run
only over ``[L*, U*]``, those two values of any valid assignment, one small LP
each, or two maximum flows where everyone can hold ``⌊P/M⌋`` or one more
(:func:`~kipopt.formulations.consumers.decmin.extreme_counts`; at
1,000,000 x 10,000, 164,000 columns and 11 s become 5,120 and 0.5 s). The matrix
is a network matrix (negate the topic rows), so the
simplex vertex and its duals are integral. *Every* optimal solution
satisfies complementary slackness with *any* optimal dual, so with reduced
costs ``d``: class c may take topic t only where ``d(f_{t,c}) = 0``, a
segment with ``d < 0`` is full and one with ``d > 0`` empty, and (slopes
differ by 2) at most one segment is free. Hence the dec-min assignments are
exactly the valid assignments with arcs ``(t, c)`` restricted as above and
every member of class c holding between ``l_c`` and ``u_c <= l_c + 1``
(``l_c`` = ``L_c`` + full segments; ``u_c`` adds the free one).

Stage 2, cross-rack then revocations on that face. Partitions grouped by
(topic, replica-rack set) ``g`` (``s_g`` of them), members by (rack, class)
``h`` (``n'_h`` of them own nothing), plus one node per member that owns
something (``k_{g,m}`` owned partitions of g it may keep), and one relay node
per (topic, rack) ``(t, r)``: a member on rack r cannot tell apart two groups of
one topic that cost it the same, so a group reaches the member groups of rack r
through its topic's relay, the cross-rack cost paid on the way in::

    min  Σ W cross(g,r) x_{g,r} + Σ (W cross(g,m) - 1) z_{g,m}   (+ O: revoked = O - Σ z)
    s.t. Σ_r x_{g,r} + Σ_m z_{g,m} = s_g                          every g
         Σ_{g of t} x_{g,r} = Σ_{h on r} y_{(t,r),h}                every relay (t, r)
         n'_h l_c <= Σ_t y_{(t,r),h} - Σ_{m ∈ h} w_{h,m} <= n'_h u_c   every h
         l_c <= Σ_g z_{g,m} + w_{h(m),m} <= u_c                   every owner m
         0 <= z_{g,m} <= k_{g,m},  x, y, w >= 0,  y_{(t,r),h} = z_{g,m} = 0 off the face

Again a network matrix (negate the g rows): totally unimodular, so the
simplex vertex is integral (checked; ILP fallback). Its size depends on
topics, rack sets, racks, classes and ownership, never on the number of
partitions; members appear only through what they own. The relays make the
member groups' columns one per topic instead of one per partition group (on a
500,000 x 5,000 group over 100 topics, three rack sets each: 454,784 columns
instead of 952,840, interior point 18.5 s instead of 48.9; at 100,000 x 5,000
about 58,000 instead of 88,000, 1.2 s instead of 2.0). Read-back: a member
keeps its first ``z`` owned partitions of each g; the rest pool with g's
unowned partitions; each relay takes ``x`` of each of its groups' pools in
order and passes them on; member groups take ``y`` of each relay in order and
deal them to owners (``w`` each) and then to the others in Java order, ``l_c``
each and one more to the first ones while the flow lasts.

Exactness for the rule ``balanced``. Every dec-min assignment is pairwise
balanced, so the answer always meets the rule. For uniform subscriptions
the two sets coincide (``floor``/``ceil`` of ``P/M``) and the answer is
optimal. Otherwise the rule also admits pairwise balanced but less balanced
assignments, over which no transportation model exists (the rule is a
disjunction: per topic, its holders exceed its least-loaded subscriber by at
most one). The level tree of :mod:`~kipopt.formulations.consumers.level_tree`
settles the rule exactly: a branch and bound over boxes of topic levels
(closed-form bounds valid for every vector of a box, with the count
coupling ``P - Σ μ``, and on groups of moderate size the leaves' LP written for a
whole box, :func:`~kipopt.formulations.consumers.level_warm.relax_box`, after a descent over
level vectors from the dec-min answer's least loads,
:mod:`~kipopt.formulations.consumers.level_local`), then per level vector the LP relaxation of one small
MILP (a network matrix, one row per member node with topics one level down
and each owner's two-mode keep hull, which makes the relaxation tight;
warm-started from vector to vector and stopped at the best answer's cutoff;
its high counts rounded give answers early), then that MILP; a box narrowed to
one or two levels per topic over many topics is settled whole by one MILP with
member counts explicit (:mod:`~kipopt.formulations.consumers.level_box`); best
first, stopping when the next bound reaches the best answer; its bound stays
valid when the time limit cuts it. (The flat enumeration of
:mod:`~kipopt.formulations.consumers.level_search`, which it replaces,
stays as a cross-check.) If it ends unproven, up to :data:`MILP_MAX_COLUMNS`
(member, partition group) pairs the rule's own MILP over those pairs
(:mod:`~kipopt.formulations.consumers.member_milp`; it never grows with the
partitions) runs in the time left: its answer replaces the dec-min one when
cheaper and its dual bound, with the balance-free relaxation's (each
partition to its cheapest subscriber), is the reported bound. Both only
seek answers below the best one in hand (a HiGHS cutoff: a level vector or
MILP with nothing below it is settled without branching on, and "nothing
below" is itself the proof). ``optimal`` means the answer meets that bound. The class-level model of
:mod:`~kipopt.formulations.consumers.levels` and the level-indexed one of
:mod:`~kipopt.formulations.consumers.level_index` are exact too, but
measured slower (their relaxations are no stronger); they are kept as
cross-checks. Under a long time limit (:data:`~kipopt.formulations.consumers.level_prove.CERTIFY_LEAST_SECONDS`)
a large mixed group whose optimum the count coupling decides gets a certificate between two turns of
the tree (:mod:`~kipopt.formulations.consumers.level_prove`): a bound over every level vector that the
tree's relaxations cannot reach. The rule is strongly
NP-hard in each criterion (stated there; :mod:`kipopt.theory.balanced_reduction`). All of this runs per
independent part of the group (the member-topic graph's components, packed: :mod:`~kipopt.formulations.consumers.parts`),
the parts' bounds joined exactly.

>>> from kipopt.instance import from_dict
>>> x = from_dict({"format": 1, "family": "consumers",
...     "topics": {"t": {"racks": [["a"], ["b"], ["a"], ["b"]]}},
...     "members": [{"id": "c1", "rack": "a", "topics": ["t"], "owned": ["t-1", "t-2"], "generation": 1},
...                 {"id": "c2", "rack": "b", "topics": ["t"], "owned": [], "generation": 1}]})
>>> r = run_balanced(x, SolveOptions())
>>> r.status.value, r.objective, r.assignment
('optimal', 1.0, {'c1': ('t-2', 't-0'), 'c2': ('t-1', 't-3')})
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from typing import Callable

from kipopt.instance import ConsumersInstance
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solution import Status

from kipopt.formulations.consumers.decmin import (balance_face, free_bound,  # noqa: F401 (balance_face re-exported)
                                                  layout_cross, layout_objective, solve_balanced, _uniform)
from kipopt.formulations.consumers.groups import Layout, cheapest, layout, least_cross  # noqa: F401 (re-exported)
from kipopt.formulations.consumers.greedy import greedy_balanced  # noqa: F401  (re-exported: the fallback)
from kipopt.formulations.consumers import level_prove
from kipopt.formulations.consumers.level_bounds import Tree
from kipopt.formulations.consumers.level_start import StartWhile, start_beside, start_while
from kipopt.formulations.consumers.level_tree import search_tree
from kipopt.formulations.consumers.member_milp import solve_members
from kipopt.formulations.consumers.parts import parts, solve_parts
from kipopt.formulations.consumers.rules import balanced_objective, balanced_violations, owners
from kipopt.formulations.highs import Deadline, call_highs_before


MILP_MAX_COLUMNS = 400_000
"""Above this many (member, partition group) pairs the rule's MILP is not built (its build alone
would eat the time): the dec-min answer stands with the balance-free bound."""

MILP_BUILD_SECONDS_PER_PAIR = 1.5e-4
"""Measured cost of building the MILP, per (member, partition group) pair (9 CPU s for 75,000 pairs
at 100,000 x 5,000)."""

MILP_FIT_BUILDS = 4
"""Under a time limit the MILP runs only when this many times its build fits in its turn: at 100,000 x
5,000 a turn of 27 s (about 2.4 builds) ended killed at the deadline with nothing, time the level tree
then lacked."""

FALLBACK_SECONDS_PER_PARTITION = 1.5e-5
"""Under a time limit, the dec-min stages leave this much per partition for the greedy fallback, the
balance-free bound and pricing the answer (about 7 s at 500,000 partitions, profiled on the loaded
shared machine; a third of it unloaded)."""

STAGES_LEAST_SECONDS = 0.05
"""Under a time limit, the dec-min stages are not started with less than this left for them (their
level bounds and LPs would be cut anyway, and the time is the fallback's)."""

TREE_BUILD_SECONDS_PER_PARTITION = 3e-6
"""The level tree is not started unless this much per owned partition is left (building its owner
index reads every owned partition: about a second at 500,000, measured under load)."""

TREE_FIRST_TOPICS = 12
"""Up to this many topics, and with at least two partitions per member, the level tree runs before the
member MILP (it proves groups of many members and few topics); otherwise box bounds stay flat for long
(the hardness reductions: up to 24 topics of one partition over 16 members) and the member MILP, small
there, goes first."""

TREE_ONLY_MEMBERS = 50
"""From this many members, a group with more than :data:`TREE_FIRST_TOPICS` topics gets the level tree
alone: its narrow boxes end in one MILP each (:mod:`~kipopt.formulations.consumers.level_box`), while the
member MILP's big-M rows relax too far to move the bound. Measured on 10,000-partition groups of 100
members and 20 topics (production grid, 60 s limit): the tree alone proves 4 of 40 optimal, 2 before;
on one of the new ones, after the member MILP's half, it ended 1,010 against 986."""

MILP_PROBE_PAIRS = 200
"""Up to this many (member, partition group) pairs, when the level tree goes first, it gets only a short
probe (:data:`TREE_PROBE_SECONDS`) before the member MILP, and the rest after it: a few members with many
partitions each have level boxes of 10^12 to 10^21 vectors, which the tree does not close in a minute,
while their MILP of 37 to 134 pairs proves them in 0.3 to 3.7 s (measured on 1,000 partitions over ten
members, ten topics; the tree then took 8 to 26 s)."""

TREE_PROBE_SECONDS = 1.0
"""The level tree's first turn before a small member MILP (:data:`MILP_PROBE_PAIRS`): enough for the
groups it proves at once (most proved groups of the oracle benchmark take under 0.5 s)."""

MILP_MARGIN = 0.1
"""The member MILP's HiGHS stops this share of its turn (at least 0.2 s) before the turn's end, so that its
answer and bound come back from the child before the deadline kills it (HiGHS stops at its own limit only
between nodes: on 10,000 partitions over 100 members it was killed with both lost)."""

MILP_DEFAULT_SECONDS = 60.0
"""The whole method's time when the caller sets no limit (the level tree and the MILP share what the
dec-min stage leaves of it; the dec-min answer is already in hand)."""


def milp_pairs(lay: Layout) -> int:
    """Columns of the rule's MILP, roughly: (member, partition group) pairs."""
    per_topic = {t: len(gs) for t, gs in lay.groups_of_topic.items()}
    return sum(per_topic[t] for ts in lay.member_topics for t in ts)


@dataclass
class Best:
    """The best answer in hand, its value, the best bound, and what the stages said."""

    assignment: dict[str, tuple[str, ...]]
    objective: float
    bound: float
    info: dict

    @property
    def proven(self) -> bool:
        return self.objective <= self.bound

    def offer(self, instance: ConsumersInstance, answer, bound: float | None, by: str) -> None:
        if bound is not None:
            self.bound = max(self.bound, bound)
        if answer is not None and not balanced_violations(instance, answer):
            value = balanced_objective(instance, answer)
            if value < self.objective:
                self.assignment, self.objective = answer, value
                self.info["answer"] = f"{by} (less balanced than dec-min, cheaper)"


def _tree_stage(instance, lay, best: Best, deadline: float, threads, least, size: int,
                start: StartWhile | None = None) -> None:
    """The level tree (:mod:`~kipopt.formulations.consumers.level_tree`) until ``deadline``, from ``start``
    when one was made beside the dec-min stages and fits."""
    if deadline - time.perf_counter() <= STAGES_LEAST_SECONDS + TREE_BUILD_SECONDS_PER_PARTITION * len(owners(instance)):
        return
    # a leaf LP in flight may pass the deadline by its last crossover: stop the search a little early
    margin = 0.05 * (deadline - time.perf_counter())
    made = None if start is None else start.take(least)
    if start is not None and start.error is not None:
        best.info["level_start"] = f"failed beside the dec-min stages ({start.error}): built again"
    found = search_tree(instance, lay, best.objective, deadline - margin, threads, best=least, answer=best.assignment,
                        start=made)
    if found is not None:
        best.info.update(found.info)
        best.offer(instance, found.assignment, found.bound, "the level tree")


def _milp_needs(size: int) -> float:
    """The turn the member MILP of ``size`` pairs needs before it is worth running (:data:`MILP_FIT_BUILDS`)."""
    return MILP_FIT_BUILDS * MILP_BUILD_SECONDS_PER_PAIR * size


def _milp_stage(instance, lay, best: Best, deadline: float, threads, least, size: int) -> None:
    """The rule's MILP over (member, partition group) flows until ``deadline``, when its build fits."""
    left = deadline - time.perf_counter()
    if left <= max(0.05, _milp_needs(size)):
        return
    # in a child the deadline kills: HiGHS' MIP overran its own limit by 9 s at 100,000 x 5,000 (measured)
    budget = max(0.01, left - max(0.2, MILP_MARGIN * left))
    done = call_highs_before(Deadline(deadline), lambda: solve_members(instance, lay, budget, threads, least,
                                                                      below=best.objective))
    if done is None:
        best.info["milp_status"] = "stopped at the deadline"
        return
    better, _, milp_bound, milp_info = done
    best.info.update(milp_info)
    best.offer(instance, better, milp_bound, "the rule's MILP")


def _certificate_stage(instance, lay, best: Best, deadline: float, threads, least, size: int, *, tr: Tree) -> None:
    """The certificate over every level vector (:mod:`~kipopt.formulations.consumers.level_prove`) until
    ``deadline``: a bound, which settles the group where it meets the answer in hand."""
    bound, info = level_prove.certified_bound(instance, tr, deadline)
    best.info.update(info)
    if bound is not None and bound > best.objective:  # a valid answer below a proven floor: never report it
        best.info["certificate"] = f"contradicted: floor {bound} above the answer in hand ({best.objective:g}), not used"
        return
    best.offer(instance, None, bound, "the certificate")


def _with_certificate(instance, lay: Layout, order: list, left: float, least) -> list:
    """``order`` with the certificate's stage between two turns of the tree, where it is planned and reads
    the group (:func:`~kipopt.formulations.consumers.level_prove.applies`); else ``order``."""
    if least is None or [stage for stage, _ in order] != [_tree_stage] or not level_prove.planned(lay, left):
        return order
    tr = level_prove.applies(instance, lay)
    if tr is None:
        return order
    rest = order[0][1]
    return [(_tree_stage, lambda left: min(level_prove.TREE_FIRST_SECONDS, left / 4)),
            (partial(_certificate_stage, tr=tr), rest), (_tree_stage, rest)]


def _stage_order(lay: Layout, total: int, size: int) -> list[tuple[Callable, Callable[[float], float]]]:
    """The exact stages in turn, each with its share of the time left: the level tree first up to
    :data:`TREE_FIRST_TOPICS` topics with two partitions per member (after a short probe only when the
    member MILP is small, :data:`MILP_PROBE_PAIRS`), the member MILP first otherwise; a first of two
    stages gets half the time left, the last stage all of it; from :data:`TREE_ONLY_MEMBERS` members and
    more than :data:`TREE_FIRST_TOPICS` topics the tree alone."""
    half, rest = (lambda left: left / 2), (lambda left: left)
    if size > MILP_MAX_COLUMNS:  # the MILP's build alone would eat the time
        return [(_tree_stage, rest)]
    if len(lay.topics) > TREE_FIRST_TOPICS and len(lay.members) >= TREE_ONLY_MEMBERS:
        return [(_tree_stage, rest)]
    if len(lay.topics) > TREE_FIRST_TOPICS or total < 2 * len(lay.members):
        return [(_milp_stage, half), (_tree_stage, rest)]
    if size <= MILP_PROBE_PAIRS:
        return [(_tree_stage, lambda left: min(TREE_PROBE_SECONDS, left / 4)), (_milp_stage, half), (_tree_stage, rest)]
    # the tree keeps the whole time when the MILP would not get its turn in the other half (_milp_stage's test)
    return [(_tree_stage, lambda left: left / 2 if left / 2 > _milp_needs(size) else left), (_milp_stage, rest)]


def run_balanced(instance: ConsumersInstance, options: SolveOptions) -> MethodResult:
    """``exact.balanced``: the dec-min answer (two network LPs), then, unless that is already proven
    (uniform subscriptions, or the balance-free bound met), the level tree
    (:mod:`~kipopt.formulations.consumers.level_tree`: branch and bound over topic levels),
    then the rule's own MILP over (member, partition group) flows
    (:mod:`~kipopt.formulations.consumers.member_milp`); each settles optimality or raises the bound,
    and its answer replaces the dec-min one when cheaper. The dec-min and fallback answers are priced
    by :func:`layout_objective` (linear, no evaluator index: the façade re-evaluates every answer
    after the method and reports a mismatch as an error). With mixed subscriptions and a second core
    allowed, the level tree's start is made in a thread beside the dec-min stages
    (:mod:`~kipopt.formulations.consumers.level_start`), and joined before the method returns. A group of
    independent parts (no topic shared between them) is solved part by part
    (:mod:`~kipopt.formulations.consumers.parts`).
    """
    found = parts(instance)
    if len(found) > 1:
        return solve_parts(instance, found, options, _run_whole, MILP_DEFAULT_SECONDS)
    return _run_whole(instance, options)


def _run_whole(instance: ConsumersInstance, options: SolveOptions) -> MethodResult:
    """:func:`run_balanced` on the group as one part."""
    t0 = time.perf_counter()
    lay = layout(instance)
    if not any(g.size for g in lay.groups):  # no subscribed topic has a partition: one assignment, the empty one
        empty = {member: () for member in lay.members}
        value = layout_objective(instance, lay, empty)
        return MethodResult(empty, Status.OPTIMAL, value, value, info={"stages": "none: nothing to assign"})
    limit = MILP_DEFAULT_SECONDS if options.time_limit is None else options.time_limit
    deadline = options.deadline_at if options.deadline_at is not None else t0 + limit
    early = None if _uniform(lay) or _no_stages(_stage_seconds(options, t0, lay)) else \
        (start_beside(instance, lay, options.threads, deadline) or start_while(instance, lay, options.threads, deadline))
    try:
        return _run_balanced(instance, options, t0, lay, deadline, early)
    finally:
        if early is not None:  # stopped and joined on every way out: no solve outlives the method
            early.drop()


def _stage_seconds(options: SolveOptions, t0: float, lay: Layout) -> float | None:
    """What the time limit leaves the dec-min stages once the time for the fallback, its bound and its price
    is kept (``None``: no limit)."""
    if options.time_limit is None:
        return None
    total = sum(g.size for g in lay.groups)
    return max(0.01, options.time_limit - (time.perf_counter() - t0) - FALLBACK_SECONDS_PER_PARTITION * total)


def _no_stages(stages: float | None) -> bool:
    """Whether the dec-min stages (and so the level tree's start beside them) are skipped for the fallback."""
    return stages is not None and stages <= STAGES_LEAST_SECONDS


def _run_balanced(instance: ConsumersInstance, options: SolveOptions, t0: float, lay: Layout, deadline: float,
                  early: StartWhile | None) -> MethodResult:
    """:func:`run_balanced` from its layout on (the level tree's start being made beside)."""
    total = sum(g.size for g in lay.groups)
    stages = _stage_seconds(options, t0, lay)
    if _no_stages(stages):  # no time for the LPs: the fallback answers
        assignment, status, info = None, "time_limit", {"stages": "skipped: the time limit leaves them nothing"}
    else:
        assignment, status, info = solve_balanced(instance, stages, options.threads, lay,
                                                  None if early is None else early.during_stage2)
    bound = free_bound(instance, lay)
    if assignment is None and "memory" in str(status):  # memory, as every method reports it (exit 2)
        raise MemoryError(f"HiGHS ended with {status}")
    if assignment is None:
        fallback = greedy_balanced(instance, lay)
        return MethodResult(fallback, Status.FEASIBLE, layout_objective(instance, lay, fallback), bound, info=info,
                            message=f"HiGHS ended with {status}: returning a greedy balanced assignment "
                                    "(owners and racks kept where that costs no balance)")
    cross = layout_cross(lay, assignment)
    objective = layout_objective(instance, lay, assignment, cross)
    proven = status == "optimal" and (_uniform(lay) or objective <= bound)
    # the dec-min answer at the balance-free least cross-rack: every better answer gives each partition
    # to a subscriber at its group's least cost, so only those pairs enter the search and the MILP
    least = cheapest(lay) if not proven and cross == least_cross(lay) else None
    best = Best(assignment, objective, objective if proven else bound, info)
    size = milp_pairs(lay)
    order = _stage_order(lay, total, size)
    if not best.proven:
        order = _with_certificate(instance, lay, order, deadline - time.perf_counter(), least)
    while order and not best.proven:  # each stage let go once run (the certificate's holds a tree index)
        stage, turn = order.pop(0)
        left = deadline - time.perf_counter()
        run = partial(_tree_stage, start=early) if stage is _tree_stage else stage
        run(instance, lay, best, time.perf_counter() + turn(left), options.threads, least, size)
        del stage, run
    assignment, objective, bound, info, proven = best.assignment, best.objective, best.bound, best.info, best.proven
    if not proven:
        info["note"] = ("the best of the most balanced assignments, the level tree's and the MILP's; the rule "
                        "also admits less balanced pairwise-balanced ones: bound from the level tree, the MILP, "
                        "the certificate or the balance-free relaxation")
    return MethodResult(assignment, Status.OPTIMAL if proven else Status.FEASIBLE, objective,
                        objective if proven else bound, info=info)


METHODS = [
    Method("exact.balanced", "consumers", "balanced", run_balanced,
           "pairwise balance (the sticky assignor's), minimum cross-rack, then fewest revocations: the most "
           "balanced (dec-min) answer by two network LPs over (topic, rack set) x (rack, subscription) groups, "
           "then a branch and bound over topic-level boxes (one small MILP per level vector, pruned by bounds), "
           "then the rule's MILP over (member, partition group) flows, to prove or improve it"),
]
