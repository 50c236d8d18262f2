"""The rule ``balanced`` by branch and bound over boxes of topic levels.

The level lemma of :mod:`~kipopt.formulations.consumers.level_search` makes
the rule's optimum the least, over topic-level vectors ``λ``, of a small MILP
with ``λ`` fixed. That module enumerates the whole box of
:func:`~kipopt.formulations.consumers.groups.topic_levels`, which grows as
(levels per topic) ^ topics: 6 · 10^11 vectors for ten topics at 10,000
partitions. Here the box is split instead, one topic's range at a time, and a
sub-box is dropped as soon as a bound valid for *every* vector in it reaches
the best answer in hand.

Bounds of a box, its shaving and its halving: :mod:`~kipopt.formulations.consumers.level_bounds`
(closed form, with the count coupling); the box relaxation:
:func:`~kipopt.formulations.consumers.level_warm.relax_box`.

Search: best first on the bound. A box to be split is first shaved, then halved
(:func:`~kipopt.formulations.consumers.level_bounds.children`). A
single vector is first bounded by the LP relaxation of its MILP
(:func:`~kipopt.formulations.consumers.level_search.fixed_model`), warm-started from the vector
before and stopped as soon as its dual objective shows that the vector cannot beat the best answer
in hand (a cutoff whose dual bound is re-checked here by weak duality,
:func:`~kipopt.formulations.highs.dual_bound`); before any solve, the row duals of the last leaf LP
solved to optimality are tried, which by weak duality bound every vector's LP and settle most leaves
(:class:`~kipopt.formulations.highs.WarmLP`). Otherwise the relaxation's high counts are rounded and
fixed and the LP solved again from the relaxation's basis
(:func:`~kipopt.formulations.consumers.level_warm.relax_rounded`; for a large leaf LP both in one child,
which at 100,000 x 5,000 gives the first leaf its answer within a 10 s limit: 23,877 where the dec-min
one, 24,154, stood before; where the rounding falls short of an integral LP value, a dive on the LP's
optimal face, :func:`~kipopt.formulations.highs_face.dive_on_face`, looks for an integral point at that
value): an integral answer, checked against the rule, becomes the best in hand
early, so that later relaxations stop at the cutoff, and settles the vector when it meets its
relaxation. An unsettled vector is put back and solved as a MILP (seeking only answers below the best
in hand) when it comes up again. The least bound of the open boxes is a valid bound on the rule's
optimum whenever the time limit stops the search.

Box relaxations. A box taken from the queue is first bounded by the leaves' own LP written for the
whole box (:func:`~kipopt.formulations.consumers.level_warm.relax_box`: per member node its count range
and, where the box fixes its base level, its high members' rows and its owner's keep hull; per
partition group its size; arcs open only where some vector of the box lets the node hold the topic):
when that bound reaches the best answer the box is dropped, when it only rises the box goes back in
line with it. The closed form pools what every member could keep; the LP also asks whether those
partitions and all the others find holders, and, once a node's base level is fixed, whether its high
members can hold their extra partition. It shares the leaves' HiGHS model and duals (one pattern), so a
box is often settled by the last optimum's duals and otherwise re-solved from the basis its parent's LP
ended at (measured: :func:`~kipopt.formulations.consumers.level_warm.relax_box`). Above
``level_policy.BOX_LP_MAX_COLUMNS`` columns only the closed form runs.
A box back with its relaxation is shaved by that relaxation's row duals before it is split, and its
children start with the bounds those duals give them (:mod:`~kipopt.formulations.consumers.level_duals`,
``level_policy.DUAL_SHAVE``).

Boxes bounded by the leaves' duals. Above ``level_policy.BOX_LP_MAX_COLUMNS``, where no box gets a relaxation of
its own, a box is bounded with no solve by the duals the leaves' solves left behind (the last optima's
and the last cutoff's, :attr:`WarmLP.carried <kipopt.formulations.highs.WarmLP.carried>`, and those its
parent was bounded with): weak duality on the box's relaxation holds for any duals of the pattern. The
box is dropped when the best of them reaches the best answer, goes back in line when it rises, and is
otherwise shaved by them (``level_policy.CARRIED_BOX_BOUNDS``): a few leaf optima's duals price whole boxes near
them. While large leaf LPs solve in children the parent does this for the boxes first in line
(``level_policy.BOXES_BESIDE``).

Leaves and boxes priced by supply. Above ``level_policy.PRICED_MIN_COLUMNS`` the carried duals also
price the partition groups' supply rows for the Lagrangian bound of
:mod:`~kipopt.formulations.consumers.level_lagrange`, where every node's own part is solved afresh (each
member at its base level or one above, the cheapest partitions greedily): a leaf that bound puts above
the best answer is settled with no LP (:func:`~kipopt.formulations.consumers.level_lagrange.priced_out`,
stat ``level_priced``), and a box takes the better of it and weak duality.

Two leaves at a time. A large leaf LP (interior point, in a child: above
:attr:`WarmLP.WARM_COLUMNS <kipopt.formulations.highs.WarmLP.WARM_COLUMNS>`) keeps one core busy while
the other waits. With ``level_policy.LEAF_WORKERS`` (and as many threads allowed) the sweep solves its first
guess with its lower neighbour at once and then two steps ahead at a time, and a leaf popped is solved
beside the leaf of least bound in line, wherever it stands among the boxes (neither settled by the
carried duals), each in a child of its own
(:func:`~kipopt.formulations.consumers.level_warm.relax_rounded_each`); with no other leaf in line,
beside the vector nearest it in the box of least bound (``level_policy.SPECULATIVE_PARTNERS``); the line's
item kinds and these two scans: :mod:`~kipopt.formulations.consumers.level_line`.

A start made beside. Where a second core is allowed, the tree's index, arcs and first leaf LP (the
sweep's first vector when the dec-min members hold ``⌊P / M⌋`` or one more) are made in a thread during
the dec-min stages (:mod:`~kipopt.formulations.consumers.level_start`; ``start``).

Early answers. Given the dec-min answer, the search runs the sweep of
:mod:`~kipopt.formulations.consumers.level_local` once the root box is shaved, or on groups with large
leaf LPs once cheap closed-form boxes have raised the bound (when, and for how long: the constants at
the end of that module): the vectors that lower the least loads of every topic outside the ``r``
largest by one, each bounded by its leaf LP and rounded to an answer. After the sweep, the topic set
the count coupling proposes (:mod:`~kipopt.formulations.consumers.level_coupling`: the members that go
down need every topic low, the owners that go up their partitions in the high set) is scored the same
way when the sweep did not try it; once the search has run 10 s without ending, where one topic is
overloaded, so is the set a local search under the hot topic's bound proposes
(:mod:`~kipopt.formulations.consumers.level_hot`). Then, on small groups, the descent of that module
improves the answer in hand from its least loads: best first on flat bounds reaches single vectors in
no useful order, and every bound prunes more below a better answer.

Narrow boxes in one MILP. Where the leaves pile up (from ``level_policy.CUBE_AFTER_LEAVES`` leaf LPs on), a box
at most :data:`~kipopt.formulations.consumers.level_box.CUBE_WIDTH` wide per topic, with at least
:data:`~kipopt.formulations.consumers.level_box.CUBE_TOPICS` topics undecided and a small enough model,
is settled by one MILP over all its vectors (:mod:`~kipopt.formulations.consumers.level_box`, member
counts explicit; exact over the box): nothing below the best answer ends it, a better optimum sends
its vector straight to the leaf MILP (an answer at once), and a MILP stopped by its share of the time
leaves the box split as any other, with its bound, and its parts searched by leaves only until a
better answer turns up (:data:`~kipopt.formulations.consumers.level_box.CUBE_TIME_SHARE`).

Small boxes enumerated. Once ``level_policy.ENUM_AFTER_BOXES`` boxes have been popped, a box of at most
``level_policy.ENUM_MAX_VECTORS`` vectors goes back in line as its vectors
(:mod:`~kipopt.formulations.consumers.level_enum`), each bounded by the Lagrangian at the supply duals in
hand and again, whenever the item comes up, at those the leaves left since; its least vector goes in line
as a leaf. Where the proof ends in a box full of vectors that no box bound separates but every vector's
own bound at a few leaves' prices does, this replaces hundreds of splits.

What each of these parts gained, measured when it landed: ``benchmarks/history/exact_balanced.md``
(section "The level tree's parts").
"""

from __future__ import annotations

import heapq
import math
import time
from itertools import count as counter

import numpy as np

from kipopt.deadline import Deadline
from kipopt.instance import ConsumersInstance

from kipopt.formulations.consumers.groups import Layout
from kipopt.formulations.consumers.level_bounds import box_bounds, tree
from kipopt.formulations.consumers.level_box import (CUBE_HIGHS_OPTIONS, CUBE_TIME_SHARE, box_levels, box_model,
                                                     worth_a_milp)
from kipopt.formulations.consumers.level_answers import better, box_value, least_loads_of, rule_units
from kipopt.formulations.consumers.level_duals import carried_bound, split
from kipopt.formulations.consumers.level_enum import MAX_UNIT_STATES, Enumerated, vector_count
from kipopt.formulations.consumers import level_local as local, level_policy as policy
from kipopt.formulations.consumers.level_coupling import coupled_vector
from kipopt.formulations.consumers.level_hot_local import hot_vector
from kipopt.formulations.consumers.level_local import descend, first_guess, lowered, sweep
from kipopt.formulations.consumers.level_search import SearchResult, arcs, fixed_model
from kipopt.formulations.consumers.level_start import Start
from kipopt.formulations.consumers.level_line import (BOX, ENUMERATED, LEAF, RELAXED, SPLIT, nearest_inside,
                                                      take_leaves)
from kipopt.formulations.consumers.level_lagrange import (PRICED, rounded_or_priced, rounded_or_priced_each,
                                                          settled_or_priced, vector_floor)
from kipopt.formulations.consumers.level_warm import leaf_columns, leaf_lp, relax, relax_box
from kipopt.formulations.highs import WarmLP, WarmStart, call_highs_before, in_guarded_child, solve_lp


def search_tree(instance: ConsumersInstance, lay: Layout, incumbent: float | None = None,
                deadline: float | None = None, threads: int | None = None,
                best: np.ndarray | None = None, answer: dict[str, tuple[str, ...]] | None = None,
                start: Start | None = None) -> SearchResult | None:
    """Best assignment over every topic-level vector, by branch and bound (module docstring); arguments
    and result as :func:`~kipopt.formulations.consumers.level_search.search_levels`, with no box limit;
    ``answer`` (the incumbent's assignment) starts the descent of
    :mod:`~kipopt.formulations.consumers.level_local` from its least loads; ``start`` (made for arcs at
    ``best``, :mod:`~kipopt.formulations.consumers.level_start`) replaces building its own."""
    t0 = time.perf_counter()
    if not lay.topics:
        return None
    if start is not None and incumbent is not None:
        tr, net, warm = start.tr, start.net, start.leaf
    else:
        tr = tree(instance, lay, restrict=best is not None)
        net, warm = arcs(tr.space, best if incumbent is not None else None), None
    sp = tr.space
    best_value = math.inf if incumbent is None else float(incumbent)
    found = None
    seq = counter()
    heap: list = []
    stats = {"level_boxes": 0, "level_relaxed": 0, "level_infeasible": 0, "level_cutoff": 0, "level_rounded": 0,
             "level_milps": 0, "level_cubes": 0, "level_box_lps": 0, "level_dual_cut": 0, "level_dual_raised": 0,
             "level_known": 0, "level_paired": 0, "level_inside": 0, "level_beside": 0, "level_priced": 0,
             "coupling_scored": 0, "hot_scored": 0, "level_enumerated": 0, "sweep_floored": 0}

    def kind_of(lo: np.ndarray, hi: np.ndarray) -> int:
        return LEAF if (lo == hi).all() else BOX

    def push(bound: float, kind: int, lo: np.ndarray, hi: np.ndarray, relaxed: bool = False, start=None) -> None:
        # ties go to the narrower box (depth first among equals): with flat bounds a breadth-first
        # order would never reach a single vector. ``start``: the basis the box's relaxation (or its
        # parent's) ended at, which its own starts from (measured: 42 % fewer simplex iterations on a
        # 100-member, 20-topic group than from the last basis, which best first order leaves far away)
        if bound < best_value:
            heapq.heappush(heap, (bound, int((hi - lo).sum()), next(seq), kind, lo, hi, relaxed, start))

    push(float(box_bounds(tr, tr.lo, tr.hi)[0]), kind_of(tr.lo, tr.hi), tr.lo, tr.hi)
    open_bound = math.inf
    columns = leaf_columns(net)
    box_lps, eager = columns <= policy.BOX_LP_MAX_COLUMNS, columns <= policy.BOX_LP_EAGER_COLUMNS
    lps_at = math.inf if deadline is None else \
        t0 + max(policy.BOX_LP_LATE_SECONDS, policy.BOX_LP_LATE_SHARE * (deadline - t0))
    failed_at = math.inf   # the best answer when a box's MILP last ran out of its turn
    floored = columns > policy.SWEEP_FLOOR_MIN_COLUMNS   # the sweep skips what the Lagrangian rules out
    large_leaves = columns > WarmLP.WARM_COLUMNS and deadline is not None and not in_guarded_child()
    workers = policy.leaf_workers(threads) if large_leaves else 1   # leaf LPs at once, each in a child of its own
    known: dict[tuple[int, ...], float] = {}   # vectors whose leaf LP the sweep or the descent solved
    live_units = 0                              # held by the enumerated boxes in line (level_enum)

    def remember(vector: np.ndarray, value: float | None) -> None:
        if value is not None:
            known[tuple(vector.tolist())] = value

    def time_left() -> float | None:
        return None if deadline is None else deadline - time.perf_counter()

    def cutoff() -> float | None:
        # in model units (without O): an objective above best - O - 1 rounds up to the best, cannot beat it
        return None if not math.isfinite(best_value) else best_value - sp.owned_total - 0.5

    def proven(result, cut: float | None) -> float | None:
        """HiGHS' bound in rule units; it holds only up to the cutoff HiGHS ran with."""
        if result.bound is None:
            return None
        return min(float(result.bound), math.inf if cut is None else cut) + sp.owned_total

    def leaf_milp(vector: np.ndarray, bound: float) -> float | None:
        """The vector's MILP, seeking only answers below the best: ``None`` when that settles it, else
        (time ran out) the bound it leaves."""
        nonlocal found, best_value
        model = fixed_model(sp, vector, net)
        cut = cutoff()
        left = time_left()

        def run():
            return solve_lp(model.lp, integer=True, time_limit=left, threads=threads, cutoff=cut)
        # a large MILP in a child the deadline kills: HiGHS checks its own limit only between nodes
        in_child = deadline is not None and model.lp.num_col > policy.LEAF_MILP_CHILD_COLUMNS
        result = call_highs_before(Deadline(deadline), run) if in_child else run()
        stats["level_milps"] += 1
        if result is None:
            return bound
        if result.status == "infeasible":
            return None
        found, best_value = better(instance, sp, model, result, found, best_value)
        if result.status == "optimal":
            return None
        held = proven(result, cut)
        return bound if held is None else max(bound, held)

    def share_of_time_left(share: float) -> float:
        """When ``share`` of the time left from now ends (``inf`` without a deadline)."""
        left = time_left()
        return math.inf if left is None else time.perf_counter() + share * left

    def answer_levels() -> np.ndarray:
        """``answer``'s least loads within the root box: where the sweep and the descent start."""
        return np.clip(least_loads_of(lay, answer), tr.lo, tr.hi)

    def improve() -> None:
        """The descent from ``answer``'s least loads (:mod:`~kipopt.formulations.consumers.level_local`)."""
        nonlocal warm
        warm = warm or leaf_lp(sp, net, threads)

        def screen(vector: np.ndarray) -> float:
            lp = relax(warm, vector, time_left(), cutoff())
            remember(vector, box_value(sp, lp))
            return math.inf if lp.status != "optimal" else rule_units(sp, lp.objective)

        def solve(vector: np.ndarray) -> None:
            if leaf_milp(vector, -math.inf) is None:  # settled: nothing below the best answer there
                remember(vector, math.inf)

        stats.update(descend(answer_levels(), tr.lo, tr.hi, screen, solve, lambda: best_value,
                             share_of_time_left(local.LOCAL_TIME_SHARE)))

    def lower_small_topics() -> None:
        """The sweep of :mod:`~kipopt.formulations.consumers.level_local` from ``answer``'s least loads: each
        vector's relaxation, its rounded answer kept when better."""
        start = answer_levels()
        until = share_of_time_left(local.SWEEP_TIME_SHARE)
        stats.update(sweep(lambda rs, beat: scored([lowered(start, sp.sizes, r, tr.lo, tr.hi) for r in rs], beat),
                           len(start), until, first_guess(sp.sizes), workers))
        # then the set the count coupling proposes, where it is not one the sweep tried (level_coupling)
        if time.perf_counter() < until:
            score_proposed(coupled_vector, min(time.perf_counter() + local.COUPLING_SECONDS,
                                               share_of_time_left(local.COUPLING_SHARE)), until, "coupling_scored")

    def scored(vectors: list[np.ndarray], beat: float = math.inf) -> list[float]:
        """Each vector's leaf LP and its rounded answer (kept when better), by rule units (``inf``: cut off).
        A vector whose every assignment costs at least ``beat`` or the best answer in hand, by its Lagrangian
        bound at the carried duals (:func:`~kipopt.formulations.consumers.level_lagrange.vector_floor`), is
        scored by that bound with no solve (``sweep_floored``): its rounding could not beat the answer in hand,
        and the sweep does not walk there (above ``level_policy.SWEEP_FLOOR_MIN_COLUMNS``)."""
        nonlocal warm
        warm = warm or leaf_lp(sp, net, threads)
        enough = min(beat, best_value)
        floors = [vector_floor(warm, v, enough) if floored and math.isfinite(enough) else -math.inf for v in vectors]
        solve = [v for v, floor in zip(vectors, floors) if floor < enough]
        stats["sweep_floored"] += len(vectors) - len(solve)
        done = rounded_or_priced_each(warm, solve, time_left(), cutoff(), beside)
        take_rounded(rounded for _, rounded in done)
        solved = iter(box_value(sp, lp) for lp, _ in done)  # cut off above the best: its bound steers the walk
        values = [floor if floor >= enough else next(solved) for floor in floors]
        for vector, floor, value in zip(vectors, floors, values):
            if floor < enough:
                remember(vector, value)
        return [math.inf if value is None else value for value in values]

    def score_proposed(propose, search_until: float, until: float, stat: str) -> None:
        """The level vector ``propose`` finds from ``answer``'s least loads by ``search_until``, scored before
        ``until`` where not tried yet."""
        vector = propose(tr, answer_levels(), search_until)
        if vector is not None and tuple(vector.tolist()) not in known and time.perf_counter() < until:
            scored([vector])
            stats[stat] = 1

    def score_hot_set() -> None:
        """The set the hot topic's bound proposes (level_hot), where its share of the time left is enough."""
        search_until = min(time.perf_counter() + local.HOT_SECONDS, share_of_time_left(local.HOT_SHARE))
        if search_until - time.perf_counter() >= local.HOT_LEAST_SECONDS:
            score_proposed(hot_vector, search_until, math.inf, "hot_scored")

    def take_rounded(answers) -> None:
        """The best of rounded leaf answers, when it beats the one in hand (checked cheapest first: a
        check reads the answer back and runs the rule, seconds at 1,000,000 partitions)."""
        nonlocal found, best_value
        for rounded in sorted(filter(None, answers), key=lambda a: a[1].objective):
            before = best_value
            found, best_value = better(instance, sp, *rounded, found, best_value)
            if best_value < before:
                stats["level_rounded"] += 1
                return

    def relaxed_leaf(vector: np.ndarray, bound: float, lp) -> bool:
        """A leaf after its relaxation (and its rounded answer, taken already): dropped, or back in line with
        its bound (its MILP runs when it comes up again); ``False`` when the solve did not finish."""
        if lp.status in ("infeasible", "cutoff"):
            stats["level_infeasible" if lp.status == "infeasible" else "level_cutoff"] += 1
            stats["level_priced"] += lp.message == PRICED
            return True
        if lp.status != "optimal" or lp.objective is None:
            return False
        push(max(bound, rule_units(sp, lp.objective)), RELAXED, vector, vector)  # dropped at the best
        return True

    def partners(popped: np.ndarray) -> list[tuple[np.ndarray, float]]:
        """Up to ``workers - 1`` vectors to solve beside the leaf popped (:mod:`~kipopt.formulations.consumers.level_line`):
        the leaves of least bound in line, each of which must be solved unless a later solve's duals settle it
        (the core would wait otherwise; those the carried duals settle already are dropped on the way); else
        the vector nearest ``popped`` in a box of least bound, marked ``inf`` (its value only remembered, the
        box left in line)."""
        def settle(vector: np.ndarray):
            return settled_or_priced(warm, vector, cutoff())

        more, dropped, taken = take_leaves(heap, best_value, known, workers - 1, settle)
        stats["level_boxes"] += taken
        stats["level_relaxed"] += len(dropped)
        for vector, bound, settled in dropped:
            relaxed_leaf(vector, bound, settled)
        if policy.SPECULATIVE_PARTNERS:
            near, met = nearest_inside(heap, popped, workers - 1 - len(more), best_value, known, settle,
                                       policy.INSIDE_TRIES)
            for vector, settled in met:
                remember(vector, box_value(sp, settled))
            more += [(vector, math.inf) for vector in near]
        return more

    def carried(bound: float, kind: int, lo: np.ndarray, hi: np.ndarray, start) -> tuple[bool, bool, object]:
        """A box bounded by the duals the leaves' solves left (above ``level_policy.BOX_LP_MAX_COLUMNS``): ``(settled,
        relaxed, start)``, settled when dropped or back in line; else shaved by the best of them below."""
        if not policy.CARRIED_BOX_BOUNDS or warm is None or not warm.warm.carried:
            return False, False, start
        value, dual = carried_bound(warm, lo, hi, None if start is None else start.row_dual, best_value)
        if value >= best_value:
            stats["level_dual_cut"] += 1
            return True, True, start
        if value > bound:  # back in line
            stats["level_dual_raised"] += 1
            push(value, kind, lo, hi, True, WarmStart(None, dual))
            return True, True, start
        return False, True, WarmStart(None, dual)

    def split_box(bound: float, kind: int, lo: np.ndarray, hi: np.ndarray, relaxed: bool, start) -> None:
        """The box's children in line (below a box its MILP did not settle, leaves only until a better answer)."""
        duals = start.row_dual if relaxed and start is not None and policy.DUAL_SHAVE else None
        for l2, h2, b2 in split(tr, warm, lo, hi, best_value, duals, deadline):
            push(max(b2, bound), SPLIT if kind == SPLIT and (l2 != h2).any() else kind_of(l2, h2), l2, h2, start=start)

    def boxes_beside() -> None:
        """While large leaf LPs solve in children: the boxes first in line (never a leaf, nor a box its MILP
        would settle) bounded by the carried duals and split, until a leaf tops the line, nothing left can
        beat the best answer, or time is up; the parent would wait otherwise (``level_policy.BOXES_BESIDE``)."""
        while heap and heap[0][3] in (BOX, SPLIT) and heap[0][0] < best_value and (time_left() or 0) > 0.01:
            if heap[0][3] == BOX and stats["level_relaxed"] >= policy.CUBE_AFTER_LEAVES and \
                    worth_a_milp(sp, net, heap[0][4], heap[0][5]):
                return
            bound, _, _, kind, lo, hi, relaxed, start = heapq.heappop(heap)
            stats["level_boxes"] += 1
            stats["level_beside"] += 1
            if not relaxed:
                settled, relaxed, start = carried(bound, kind, lo, hi, start)
                if settled:
                    continue
            split_box(bound, BOX if kind == SPLIT and best_value < failed_at else kind, lo, hi, relaxed, start)

    def enumerated(bound: float, lo: np.ndarray, hi: np.ndarray, start) -> bool:
        """A small box in line as its vectors (:mod:`~kipopt.formulations.consumers.level_enum`), priced at
        the duals in hand; ``False`` where it is too large for that."""
        nonlocal warm, live_units
        warm = warm or leaf_lp(sp, net, threads)
        items = Enumerated.of(warm, lo, hi, bound, min(MAX_UNIT_STATES, policy.ENUM_MAX_LIVE_UNITS - live_units))
        if items is None:
            return False
        stats["level_enumerated"] += 1
        live_units += items.size
        items.reprice(warm, [None if start is None else start.row_dual], best_value)
        push(items.floor, ENUMERATED, lo, hi, start=items)
        return True

    def next_of(item: Enumerated, lo: np.ndarray, hi: np.ndarray) -> None:
        """An enumerated box come up: priced at the duals the leaves left since, its least vector in line
        as a leaf, the rest back in line."""
        nonlocal live_units
        item.reprice(warm, warm.warm.carried, best_value)
        if len(item.vectors):
            vector, bound = item.least()
            push(bound, LEAF, vector, vector)
        if len(item.vectors):
            push(item.floor, ENUMERATED, lo, hi, start=item)
        else:
            live_units -= item.size

    beside = boxes_beside if policy.BOXES_BESIDE and workers > 1 and not box_lps else None
    sweeping = answer is not None
    sweep_at = math.inf if deadline is None else t0 + local.SWEEP_AFTER_SHARE * (deadline - t0)
    descent = answer is not None and len(net.arc_node) <= local.LOCAL_MAX_ARCS
    hot_set = answer is not None
    while heap and heap[0][0] < best_value:
        if deadline is not None and time_left() <= 0.01:
            open_bound = heap[0][0]
            break
        if sweeping and stats["level_boxes"] and (box_lps or stats["level_boxes"] >= local.SWEEP_AFTER_BOXES
                                                 or heap[0][3] != BOX or time.perf_counter() >= sweep_at):
            sweeping = False
            lower_small_topics()
            continue
        if hot_set and not sweeping and time.perf_counter() - t0 >= local.HOT_AFTER_SECONDS:
            hot_set = False
            score_hot_set()
            continue
        if descent and stats["level_boxes"] >= local.LOCAL_AFTER_BOXES:
            descent = False
            improve()
            continue
        bound, _, _, kind, lo, hi, relaxed, start = heapq.heappop(heap)
        stats["level_boxes"] += 1
        if kind == ENUMERATED:
            next_of(start, lo, hi)
            continue
        if kind in (BOX, SPLIT) and stats["level_boxes"] > policy.ENUM_AFTER_BOXES and \
                vector_count(lo, hi) <= policy.ENUM_MAX_VECTORS and enumerated(bound, lo, hi, start):
            continue
        left = time_left()
        late = stats["level_boxes"] > policy.BOX_LP_LATE_BOXES or time.perf_counter() >= lps_at
        if kind in (BOX, SPLIT) and not relaxed and box_lps and (eager or late):  # back in line if it rises
            warm = warm or leaf_lp(sp, net, threads)
            value = box_value(sp, relax_box(warm, lo, hi, left, cutoff(), start))
            stats["level_box_lps"] += 1
            if value is not None and value >= best_value:
                continue
            if value is not None and value > bound:
                push(value, kind, lo, hi, True, warm.warm.start)
                continue
        if kind in (BOX, SPLIT) and not relaxed and not box_lps:
            settled, relaxed, start = carried(bound, kind, lo, hi, start)
            if settled:
                continue
        if kind == BOX and stats["level_relaxed"] >= policy.CUBE_AFTER_LEAVES and worth_a_milp(sp, net, lo, hi):
            model = box_model(sp, net, lo, hi)
            cut = cutoff()
            turn = None if left is None else CUBE_TIME_SHARE * left
            result = solve_lp(model.lp, time_limit=turn, threads=threads, cutoff=cut, options=CUBE_HIGHS_OPTIONS)
            stats["level_cubes"] += 1
            if result.status == "infeasible":
                continue
            if result.status == "optimal" and result.x is not None:
                value = rule_units(sp, result.objective)
                stuck = leaf_milp(box_levels(model, lo, result.x), max(bound, value)) if value < best_value else None
                if stuck is not None:
                    open_bound = stuck
                    break
                continue
            held = proven(result, cut)  # not settled in its turn: split it, what HiGHS proved still holds
            bound = bound if held is None else max(bound, held)
            kind, failed_at = SPLIT, best_value
        if kind == SPLIT and best_value < failed_at:
            kind = BOX
        if kind in (BOX, SPLIT):
            split_box(bound, kind, lo, hi, relaxed, start)
            continue
        seen = known.get(tuple(lo.tolist())) if kind == LEAF else None
        if seen is not None:  # its LP was solved before (the sweep, the descent)
            bound = max(bound, seen)
            stats["level_known"] += 1
            if bound < best_value:
                push(float(bound), RELAXED, lo, hi)  # its MILP runs when it comes up again
            continue
        if kind == LEAF:
            warm = warm or leaf_lp(sp, net, threads)
            settled = settled_or_priced(warm, lo, cutoff()) if workers > 1 else None  # then no partner needed
            batch = [(lo, bound)] + (partners(lo) if workers > 1 and settled is None else [])
            if settled is not None:
                done = [(settled, None)]
            elif len(batch) == 1:
                done = [rounded_or_priced(warm, lo, left, cutoff(), start, beside)]
            else:
                done = rounded_or_priced_each(warm, [v for v, _ in batch], left, cutoff(), beside)
            stats["level_relaxed"] += len(batch)
            stats["level_paired"] += len(batch) - 1
            stats["level_inside"] += sum(1 for _, b in batch if math.isinf(b))
            take_rounded(rounded for _, rounded in done)  # an early answer: later relaxations stop at its cutoff
            for (v, b), (lp, _) in zip(batch, done):
                if math.isinf(b):  # a vector inside a box in line: its value for when its leaf comes up
                    remember(v, box_value(sp, lp))
            unfinished = [b for (v, b), (lp, _) in zip(batch, done) if not math.isinf(b) and not relaxed_leaf(v, b, lp)]
            if unfinished:
                open_bound = min(unfinished)
                break
            continue
        stuck = leaf_milp(lo, bound)
        if stuck is not None:
            open_bound = stuck
            break
    if heap:
        open_bound = min(open_bound, heap[0][0])
    info = dict(stats, level_seconds=round(time.perf_counter() - t0, 6), level_search="tree")
    return SearchResult(found, None if found is None else best_value, float(min(best_value, open_bound)), info)
