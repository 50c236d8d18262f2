"""The paper grid's five unproven consumer groups: the count coupling that keeps them open, in numbers.

The groups of 100,000 partitions over 1,000 members and 50 topics (mixed subscriptions, half the members
static, 5 % conflicting claims) are the only paper-grid instances ``exact.balanced`` does not prove in
60 s. Every partition has a replica on each of the three racks, so the objective is revocations alone,
and ``P = 100 M`` (``q = 100``): the dec-min answer gives everyone ``q``. An owner keeps one partition
more only at ``q + 1``, holding only topics at level ``q``; by the count coupling some member must then
go down to ``q - 1``, and every topic it subscribes to must be at level ``q - 1``. Over the two-level
vectors (``H``: the topics at ``q``) the revocations saved against everyone at ``q`` are at most
``min(G(H), S(H))``: ``G`` the owners with at least ``q + 1`` keepable partitions of topics in ``H``,
``S`` the members owning at most ``q - 1`` whose topics all lie outside ``H``. This script regenerates
the groups (the grid's seeds and parameters) and prints, per group:

* owned partitions beyond ``q`` and beyond ``q + 1`` (the revocations with everyone at ``q``, and with
  every owner free to hold ``q + 1``, flows aside);
* the level tree's two bounds of the box ``{q - 1, q}^T``: the closed form and the box LP
  (:func:`~kipopt.formulations.consumers.level_warm.relax_box`), which lose the coupling;
* the best ``min(G, S)`` the depth-first search over topic sets
  (:func:`~kipopt.formulations.consumers.level_coupling.best_split`) finds in ``--search-seconds``,
  whether it closed and in how many seconds, the size of its set ``H``, and that set's leaf LP and
  rounded answer (the rule checked on it): on one group an assignment better than the tree's answer.
  Once closed, ``beyond q`` less the max-min bounds every assignment whose least loads all lie in
  ``{q - 1, q}``.

* with ``--certify SECONDS``, once the search closed: whether
  :func:`~kipopt.formulations.consumers.level_certificate.certify` proves, over every level vector, that no
  assignment saves more than the max-min; the stage it ended at, its nodes, minimum cuts and seconds, and
  then the objective's lower bound it gives.

* with ``--hot SECONDS``: the overloaded topic (:mod:`~kipopt.formulations.consumers.level_hot`), its
  overload ``E`` and the base ``O - Σ min(k, q) + E`` (every least load at ``q``, that topic's flow
  counted), the two-level bound at the root, the bound of the set the local search ``exact.balanced`` runs
  after its sweep ends at (:func:`~kipopt.formulations.consumers.level_hot_local.best_set`), that set's rounded
  leaf answer and the search's seconds, and the search over the topic sets from the better of that answer
  and the one above (each complete set it cannot settle scored by its leaf LP's rounded answer): whether it proved or
  closed, its nodes, its sets left above the target, the best answer it met and, when proven, the floor
  over the two-level vectors; with ``--hot-sets N``, on how many of N random two-level sets (``h`` and 2 to
  9 of the 20 largest topics) the base less the bound is the leaf LP's value.

* with ``--hot-deep SETS`` (alone: nothing above runs): the hot bound at level vectors with topics below ``q - 1``
  (:mod:`~kipopt.formulations.consumers.level_hot_deep`) at the local search's set, the largest with one topic
  outside it put below ``q - 1``, and on ``SETS`` random sets the largest excess of one or two of the twelve
  smallest topics below ``q - 1`` over the set's own two-level bound, and how many of those bounds pass the
  local search's set's bound.

* with ``--every-vector SETS`` (alone): the bound over every level vector whose topics at ``q`` or above are
  one set (:func:`~kipopt.formulations.consumers.level_hot_deep.every_vector_bound`) at the local search's
  set, its multipliers, seconds and the floor it gives there, and on ``SETS`` random sets how many it puts
  above the set's two-level bound, and by how much at most.

Run: ``nice python benchmarks/bench_open_groups.py [--seeds 0,1,2,3,4] [--search-seconds 5]
[--certify SECONDS] [--hot SECONDS] [--hot-sets N] [--hot-answer VALUE] [--hot-deep SETS]
[--every-vector SETS]``. Exit status 0 (an analysis, no target).

Measured 2026-11-30, evening (``--hot-deep 30``, two runs side by side, under 2 minutes)::

    seed  hot set bound  |H| one below  sets worst gap above
       0    0       125    7      60.4    30       -43     0
       1    0        91   10      16.8    30       -37     0
       2    - (no topic is overloaded)
       3    0        99    8      10.5    30       -42     0
       4    0       101    8      28.0    30       -44     0

Putting topics below ``q - 1`` costs far more than the units their deep members free: at the sets whose
bound is each group's target, one topic below brings it down by 65 to 89; on random sets, the excess is
never positive. A search over the sets with this bound, and one for topics above ``q``, would complete the
certificate over every level vector with the hot topic's flow (not built).

Measured 2026-11-30, late evening (``--every-vector 30``, nice, 20 s)::

    seed two-level every vector     θ     ν  in s   floor  sets above most above
       0       125          125  1.00  1.00  0.13  12,471    30    12        634
       1        91           91  1.00  1.00  0.08  10,286    30    29        218
       2         - (no topic is overloaded)
       3        99           99  1.00  1.00  0.11  10,714    30    22        429
       4       101          101  1.00  1.00  0.07  11,146    30    14        502

At the local search's set nothing with those topics at 100 or above, whatever the other levels, revokes
fewer than the answer; on other sets the member-wise Lagrangian is looser than the two-level pairing.

Measured 2026-11-30 (2-core machine, nice, ``--search-seconds 300``, another one-core job beside it), the
search deciding forced topics at once::

    seed  beyond q beyond q+1 closed form  box LP max-min closed  in s  |H|  leaf LP  answer
       0    11,352     10,984      10,984  12,120      76    yes  90.2   11   12,520  12,520
       1    10,137      9,785       9,785   9,928      77    yes  41.7   13   10,300  10,300
       2    10,158      9,804       9,804   9,804      64    yes 108.2   13   10,094  10,094
       3    10,222      9,852       9,852  10,356      70    yes 100.9   15   10,743  10,743
       4    10,495     10,129      10,129  10,785      68    yes  57.2   12   11,179  11,179

The max-min closes on all five. On seed 2, ``10,158 - 64 = 10,094`` is the answer: no assignment with
every least load at 99 or 100 revokes fewer. The box LP of one topic below 99 and every other at 99 or
100 is 9,804 to 10,140 (one LP per topic, 0.6 to 0.9 s each), as weak as the two-level box's, since it
lets the coupling go the same way; the certificate settles those vectors instead (below). On the other
four, ``beyond q`` less the maximum (11,276, 10,060, 10,152, 10,427) is below the box LP on three and
above it on seed 1 (9,928), all below the answers: there the partitions' flow costs revocations the
max-min does not count. Within the tree's 1 s
(:data:`~kipopt.formulations.consumers.level_local.COUPLING_SECONDS`) the search reaches the maximum on
four of the five (69 of 70 on seed 3).

Measured 2026-11-30, ``--seeds 2 --search-seconds 300 --certify 1800`` (nice, one core)::

    seed  beyond q beyond q+1 closed form  box LP max-min closed  in s  |H|  leaf LP  answer
       2    10,158      9,804       9,804   9,804      64    yes 107.8   13   10,094  10,094

    seed proven         ended at      nodes     cuts    in s   floor
       2    yes             done  5,848,026  484,810   741.9  10,094

No assignment of seed 2 saves more than 64 against every member at 100, over every level vector: 10,094 is
optimal (``exact.balanced`` answers it in the grid's 60 s, with bound 9,920). On the other four groups the
certificate's floor, ``beyond q`` less the max-min, is 231 to 1,197 below the answer, so it was not run
there.

Measured 2026-11-30 (nice, two runs side by side on the two cores, ``--search-seconds 1 --hot 600``)::

    seed  hot overload    base  root proven closed    nodes   in s above  answer   floor
       0    0    1,244  12,596   476     no     no    7,798  604.5     0  12,481       -
       1    0      240  10,377   449     no     no    5,469  600.0     0  10,300       -
       2    - (no topic is overloaded)
       3    0      591  10,813   457     no     no    3,054  604.7     0  10,732       -
       4    0      752  11,247   462     no     no    8,377  603.7     0  11,161       -

Topic 0, the largest, is overloaded on the four groups the count bound leaves far below their answers:
every least load at ``q`` then revokes the base (the leaf LP of that vector says the same, 12,596 on seed
0), and the answers ``exact.balanced`` gives in 60 s (12,473, 10,291, 10,720, 11,149) save 86 to 123 on it.
The search closes none in 600 s and meets no better answer than those (an earlier version, without the
crowding bound, met 12,478, 10,295, 10,724 and 11,152 in 20,000 to 36,000 nodes, and on seed 0 a set
whose leaf LP rounds to 12,471, two fewer than the 60-s answer). With ``--hot-sets 8`` on seeds 0, 1, 3 and
4 the base less the bound is the leaf LP's value on 8 of 8 random sets each: over the two-level vectors the
relaxation loses nothing there, and what is missing is a search that closes.

Measured 2026-11-30, seed 0 from the saving of the set holding 12,471 (``--seeds 0 --hot 2700 --hot-answer
12471``, the search alone, nice, beside the test suite): proven, closed in 2,109 s after 40,191 nodes, no set
left above. No assignment of seed 0 whose least loads all lie in ``{99, 100}`` revokes fewer than
``12,596 - 125 = 12,471``, which that set's answer holds: optimal over the two-level box, two fewer than
``exact.balanced``'s 60-s answer. The other level vectors remain (the certificate's stages count only).

Measured 2026-11-30, later, with the faster search (a node's probes bounded in one pass, the multipliers
found in two passes, branching ties broken by the better move; nice, two runs side by side, ``--search-seconds
1 --hot SECONDS --hot-answer A`` with ``A`` the 60-s answer; seed 1 with the branching before its ties were
broken)::

    seed  hot overload    base  root proven closed    nodes   in s above  answer   floor
       1    0      240  10,377   449     no     no   61,105 1800.0     0  10,289       -
       3    0      591  10,813   457     no     no   38,128 1500.0     0  10,720       -
       4    0      752  11,247   462     no     no   37,517 1500.0     0  11,146       -

Seed 0 from the saving of 125 (the search alone, as ``--hot`` runs it, beside another job): proven, closed
in 415 s after 37,077 nodes (2,109 s and 40,191 nodes before). On seeds 1 and 4 the search meets answers 2
and 3 below the 60-s ones but does not close; over the two-level box they stand open. Seed 1 again from
10,289, alone with the current branching (``--hot 2100 --hot-answer 10289``): 187,470 nodes in 2,100 s, not
closed, no better answer.

Measured 2026-11-30, after the local search (:func:`~kipopt.formulations.consumers.level_hot_local.best_set`,
which ``exact.balanced`` runs once its tree has searched 10 s; first climb alone here, then with its kicks):
its sets bound 125, 91, 99 and 100 (0.7 to 1.1 s each, two runs side by side), rounded leaf answers 12,471,
10,286, 10,714 and 11,149; a kick lifts seed 4's to 101 (11,146, 1.5 s). From those answers (``--hot 2400
--hot-answer 10286`` and ``10714``, seeds 1 and 3 side by side, nice)::

    seed  hot overload    base  root proven closed    nodes   in s above  answer   floor
       1    0      240  10,377   449     no     no   70,472 2400.0     0  10,286       -
       3    0      591  10,813   457     no     no   68,264 2400.0     0  10,714       -

Neither closes in 40 minutes, nor meets a better answer: the node bound, not the target, keeps these open.
Seed 4 from the kicked set's 11,146 (``--seeds 4 --search-seconds 1 --hot 1500``, nice, beside the test
suite for part of it)::

    seed  hot overload    base  root local its answer  in s proven closed    nodes   in s above  answer   floor
       4    0      752  11,247   462   101     11,146   6.1    yes    yes   76,859 1370.6     0  11,146  11,146

Proven: no assignment of seed 4 whose least loads all lie in ``{99, 100}`` revokes fewer than 11,146, which
``exact.balanced`` now answers in 60 s. With seed 0 (12,471, 415 s) two of the four overloaded groups have
their two-level box settled; the other level vectors remain (the certificate's stages count only).
Seed 3 again, alone on a core (``--seeds 3 --search-seconds 1 --hot 2700``, nice): proven, closed in
2,589 s after 99,139 nodes, so no assignment of it with every least load at 99 or 100 revokes fewer than 10,714. Seed 1 beside it, from 10,286: 119,751 nodes in 2,700 s, not closed.

Measured 2026-11-30, evening, with the slots' node bound (:mod:`~kipopt.formulations.consumers.level_slots`:
with ``j`` undecided topics in ``H`` at most ``avail(j)`` members are left to go down, bounded by a count and,
where that still beats the target, decided by a breadth-first search over the topic sets; each owner's up
value at its own ``j`` best topics), the search alone (``--seeds 0 --search-seconds 1 --hot 1500
--hot-answer 12471``, nice, one core each, the same hour): proven, closed in 102 s after 2,879 nodes, where the
search without the slots took 917 s and 37,077 nodes (415 s on a faster day). The other three from the
local search's answers (nice, beside one another, the test suite and a clean-clone CI run for part of the
time)::

    seed  from    proven  closed    nodes    in s   (before: nodes, seconds)
       1  10,286     yes     yes   17,261  1632.2   (119,751 in 2,700 s, not closed); alone: 603.7 s
       3  10,714     yes     yes   11,203   300.2   (99,139, 2,589 s)
       4  11,146     yes     yes   12,131  1214.3   (76,859, 1,371 s); again beside CI only: 636.0 s

Every overloaded group's two-level box is now settled: no assignment whose least loads all lie in ``{99,
100}`` revokes fewer than 12,471, 10,286, 10,714 and 11,146 on seeds 0, 1, 3 and 4, the answers
``exact.balanced`` gives in 60 s. The other level vectors remain (the certificate's stages count only).

Measured 2026-11-29 with the search before it decided forced topics (largest topics first, pruned by each
side's best completion only); ``max-min`` is what it found in 5 s, closed on none::

    seed  beyond q beyond q+1 closed form  box LP max-min closed  |H|  leaf LP  answer
       0    11,352     10,984      10,984  12,120      76     no   11   12,520  12,520
       1    10,137      9,785       9,785   9,928      77     no   13   10,300  10,300
       2    10,158      9,804       9,804   9,804      64     no   12   10,094  10,094
       3    10,222      9,852       9,852  10,356      69     no   11   10,744  10,744
       4    10,495     10,129      10,129  10,785      68     no   12   11,179  11,179

``exact.balanced`` in the grid's 60 s (answer / bound): 12,473 / 11,703, 10,291 / 9,991, 10,094 / 9,920
(10,101 / 9,910 before it scored the coupling's set), 10,720 / 10,145 and 11,149 / 10,693 (before the
supply pricing of :mod:`~kipopt.formulations.consumers.level_lagrange`: the same answers, bounds 11,700,
9,979, 9,900, 10,117 and 10,529). On seed 2 the search's set gives 10,094 where the tree answered
10,101 (a 600-second run too, bound 10,024) before it scored the coupling's set after its sweep
(:mod:`~kipopt.formulations.consumers.level_coupling`, the search this script runs); there the box
LP over ``{q - 1, q}^T`` equals the closed form (flows cost nothing at ``q``). On the others the set is
worse than the tree's answer and the box LP is above the closed form (by 1,136, 504 and 656 on seeds 0,
3 and 4; 143 on seed 1): the partitions' flow forces
revocations the max-min does not count (seed 3: 10,813 with every least load at ``q``, against 10,222
owned beyond ``q``); there the two-level box alone is bounded above the tree's 60 s bound (seed 0:
12,120 against 11,703), whose gap comes from the boxes with lower levels. On seed 0 the box LP over
``[97, 100]^T`` is 12,075, over ``[90, 101]^T`` 11,555 and over the root box 0, each in under a second:
even the narrow boxes stay 3 % below the answer (12,473), the coupling's share.

Measured 2026-11-29, night (one thread, 60 s, the current code). Seed 2: the 28 boxes open at the limit
all lie within levels 97-100 with 43-47 topics undecided, bounds 9,920-9,961; seed 0: 19 boxes within
levels 93-102, 47-50 topics undecided, widths 190-330 summed over topics, bounds from 11,768. From each
answer's least loads, the 100 vectors one level away in one topic (leaf LP and rounded answer each,
:func:`~kipopt.formulations.consumers.level_warm.relax_rounded`; 4.5-7 s a pass, four to six LPs solved,
the rest settled by the carried duals): on seed 2 none is below 10,096 (the answer, 10,094, is a local
optimum); seeds 0 and 4 improve to 12,471 and 11,147; seeds 1 and 3 do not move. Seed 2 with
``--time-limit 1500`` (one thread): 10,094 / 10,030 after 1,283 s (1,650 boxes, 1,350 box LPs).

Measured 2026-11-30 (seed 2). ``--time-limit 3600`` (one thread): 10,094 / 10,037 after 3,076 s of search
(3,314 boxes, 3,014 box LPs). ``--search-seconds 300`` with the earlier search: the max-min stays at 64, not
closed. A bound from
pairwise conflicts (an owner of ``G`` and a member of ``S`` conflict when the owner cannot keep ``q + 1``
partitions outside the member's topics: 67.6 % of the 354 x 639 pairs), ``max min(|U|, |D|)`` over
conflict-free sets by one Lagrange multiplier and a minimum cut per value: at best 230 (the closed form's
354, the max-min's 64); dropping the owners and members compatible with at most 64 of the other side leaves
326 owners, 305 members and all 50 topics.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time

import numpy as np

from kipopt.datasets import generate
from kipopt.formulations.consumers.groups import cheapest, layout
from kipopt.formulations.consumers.level_answers import better, box_value
from kipopt.formulations.consumers.level_bounds import box_bounds, tree
from kipopt.formulations.consumers.level_certificate import certify
from kipopt.formulations.consumers.level_coupling import best_split, coupling
from kipopt.formulations.consumers.level_hot import hot_rows, hot_search
from kipopt.formulations.consumers.level_hot_deep import deep_bound, every_vector_bound
from kipopt.formulations.consumers.level_hot_local import best_set
from kipopt.formulations.consumers.level_prove import floor_at_q
from kipopt.formulations.consumers.level_search import arcs
from kipopt.formulations.consumers.level_warm import leaf_lp, relax_box, relax_rounded

PARAMS = {"partitions": 100_000, "members": 1_000, "topics": 50, "racks": 3, "replication_factor": 3,
          "static_members": 0.5, "conflicts": 0.05, "subscriptions": "mixed", "owner_draw": "direct"}
"""The paper grid's largest consumer cell (paper/grid.toml), seeds 0-4."""

LOCAL_SECONDS = 30.0
"""The most :func:`~kipopt.formulations.consumers.level_hot_local.best_set` (the local search ``exact.balanced``
runs after its sweep) gets here before the hot search."""


def analyse(seed: int, seconds: float, certify_seconds: float = 0.0, hot_seconds: float = 0.0,
            hot_sets: int = 0, hot_answer: float | None = None) -> dict:
    inst = generate("consumers", seed, **PARAMS)
    lay = layout(inst)
    tr = tree(inst, lay, restrict=True)
    sp = tr.space
    c = coupling(tr)
    q, T = c.q, len(sp.sizes)
    owned = np.asarray(tr.keep.sum(axis=1)).ravel()
    lo, hi = np.clip(np.full(T, q - 1), tr.lo, tr.hi), np.clip(np.full(T, q), tr.lo, tr.hi)
    leaf = leaf_lp(sp, arcs(sp, cheapest(lay)), 1)
    box_lp = box_value(sp, relax_box(leaf, lo, hi, 300.0))
    started = time.perf_counter()
    value, chosen, closed = best_split(c, started + seconds)
    searched = time.perf_counter() - started
    vector = np.clip(np.where(chosen > 0, q, q - 1), tr.lo, tr.hi)
    lp, rounded = relax_rounded(leaf, vector, 300.0)
    answer = None
    if rounded is not None:
        found, answer = better(inst, sp, *rounded, None, math.inf)
        answer = None if found is None else answer
    certificate = floor = None
    if certify_seconds and closed:
        certificate = certify(tr, int(value), time.perf_counter() + certify_seconds, max_min=value)
        floor = floor_at_q(inst, tr) - int(value)
    hot = None
    if hot_seconds or hot_sets:
        hot = _hot(inst, tr, leaf, answer if hot_answer is None else hot_answer, hot_seconds, hot_sets, seed)
    return {"seed": seed, "beyond_q": int(np.maximum(owned - q, 0).sum()), "certificate": certificate, "hot": hot,
            "floor": floor,
            "beyond_q1": int(np.maximum(owned - q - 1, 0).sum()),
            "closed_form": float(box_bounds(tr, lo, hi)[0]), "box_lp": box_lp, "max_min": value,
            "closed": closed, "searched": searched, "high": int(chosen.sum()), "leaf_lp": box_value(sp, lp),
            "answer": answer}


def _hot(inst, tr, leaf, answer, seconds: float, sets: int = 0, seed: int = 0) -> dict | None:
    """The hot topic's two-level search (:func:`~kipopt.formulations.consumers.level_hot.hot_search`) from the
    answer in hand, each complete set above it scored by its leaf LP's rounded answer; and, for ``sets``
    random sets (``h`` and 2 to 9 of the 20 largest topics), whether the base less the bound is the leaf LP."""
    hot = hot_rows(tr)
    if hot is None:
        return None
    sp, q = tr.space, hot.rows.q
    base = floor_at_q(inst, tr) + hot.overload
    best = {"answer": answer}

    def score(high: np.ndarray) -> int | None:
        vector = np.clip(np.where(high, q, q - 1), tr.lo, tr.hi)
        _, rounded = relax_rounded(leaf, vector, 300.0)
        if rounded is not None:
            found, value = better(inst, sp, *rounded, None, math.inf)
            if found is not None:
                best["answer"] = value if best["answer"] is None else min(best["answer"], value)
                return int(base - value)
        return None

    T = len(sp.sizes)
    rng, equal, largest = np.random.default_rng(seed), 0, np.argsort(-sp.sizes)[:20]
    for _ in range(sets):
        high = np.zeros(T, dtype=bool)
        high[hot.hot] = True
        high[rng.choice(largest, size=int(rng.integers(2, 10)), replace=False)] = True
        lp, _ = relax_rounded(leaf, np.clip(np.where(high, q, q - 1), tr.lo, tr.hi), 300.0)
        equal += base - hot.bound(high, high, np.linspace(0.0, 1.0, 1001))[0] == math.ceil(box_value(sp, lp) - 1e-6)
    root = hot.bound(np.zeros(T, dtype=bool), np.ones(T, dtype=bool))[0]
    started = time.perf_counter()
    local, high = best_set(hot, started + LOCAL_SECONDS)
    local_seconds = time.perf_counter() - started
    saved = score(high)
    local_answer = None if saved is None else base - saved
    start = best["answer"]
    found = hot_search(hot, 0 if start is None else int(base - start), time.perf_counter() + seconds, score)
    return {"topic": hot.hot, "overload": hot.overload, "base": base, "root": root, "search": found,
            "answer": best["answer"], "floor": base - found.target if found.proven else None,
            "sets": sets, "equal": equal, "local": local, "local_answer": local_answer,
            "local_seconds": local_seconds}


def _hot_group(seed: int):
    """``(instance, tree, Hot, local search's bound, its set)`` of seed's group, or ``None`` when no topic is
    overloaded."""
    inst = generate("consumers", seed, **PARAMS)
    tr = tree(inst, layout(inst), restrict=True)
    hot = hot_rows(tr)
    if hot is None:
        return None
    return (inst, tr, hot) + best_set(hot, time.perf_counter() + LOCAL_SECONDS)


def _random_sets(hot, seed: int, sets: int):
    """``sets`` random sets of seed's group: ``h`` and 1 to 19 other topics each."""
    T, rng = len(hot.rows.sizes), np.random.default_rng(seed)
    for _ in range(sets):
        chosen = np.arange(T) == hot.hot
        chosen[rng.choice(np.flatnonzero(~chosen), size=int(rng.integers(1, 20)), replace=False)] = True
        yield chosen


def hot_deep(seed: int, sets: int) -> dict | None:
    """The hot bound with topics below ``q - 1`` (:func:`~kipopt.formulations.consumers.level_hot_deep.deep_bound`)
    at the local search's set, each topic outside it put below ``q - 1`` alone, and on ``sets`` random sets
    (``h`` and 1 to 19 others) one or two of the twelve smallest topics outside the set: against the set's own
    two-level bound."""
    group = _hot_group(seed)
    if group is None:
        return None
    _, _, hot, value, high = group
    T = len(hot.rows.sizes)
    one = np.eye(T, dtype=bool)
    singles = [deep_bound(hot, high, one[t]) for t in np.flatnonzero(~high)]
    smallest, gaps, above = np.argsort(hot.rows.sizes)[:12], [], 0
    for chosen in _random_sets(hot, seed, sets):
        two = deep_bound(hot, chosen, np.zeros(T, dtype=bool))
        outside = [t for t in smallest if not chosen[t]]
        lows = [one[t] for t in outside] + [one[a] | one[b] for a, b in itertools.combinations(outside[:6], 2)]
        worst = max(deep_bound(hot, chosen, low) for low in lows)
        gaps.append(worst - two)
        above += worst > value
    return {"seed": seed, "topic": hot.hot, "value": value, "size": int(high.sum()), "single": max(singles),
            "sets": sets, "gap": max(gaps) if gaps else None, "above": above}


def every_vector(seed: int, sets: int) -> dict | None:
    """The bound over every level vector of a top set (:func:`~kipopt.formulations.consumers.level_hot_deep.every_vector_bound`:
    topics below ``q - 1`` and above ``q`` included) at the local search's set, and on ``sets`` random sets (``h``
    and 1 to 19 others) how many it puts above their two-level bound, and by how much at most."""
    group = _hot_group(seed)
    if group is None:
        return None
    inst, tr, hot, value, high = group
    started = time.perf_counter()
    every, theta, nu = every_vector_bound(hot, high)
    seconds = time.perf_counter() - started
    excess = []
    for chosen in _random_sets(hot, seed, sets):
        excess.append(every_vector_bound(hot, chosen)[0] - hot.bound(chosen, chosen)[0])
    return {"seed": seed, "value": value, "every": every, "theta": theta, "nu": nu, "seconds": seconds,
            "base": floor_at_q(inst, tr) + hot.overload, "sets": sets,
            "above": sum(e > 0 for e in excess), "excess": max(excess) if excess else None}


def _each(seeds: list[int], measure, header: str, line) -> int:
    """One table: ``header``, then per seed ``line(measure(seed))``, or a note where no topic is overloaded."""
    print(header)
    for seed in seeds:
        d = measure(seed)
        print(f"{seed:>4} " + ("   - (no topic is overloaded)" if d is None else line(d)), flush=True)
    return 0


def _num(x) -> str:
    return "-" if x is None else f"{x:,.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--search-seconds", type=float, default=5.0)
    parser.add_argument("--certify", type=float, default=0.0, metavar="SECONDS",
                        help="then try to prove, over every level vector, that no assignment saves more than the "
                             "closed max-min (level_certificate.certify), for at most this long per group")
    parser.add_argument("--hot", type=float, default=0.0, metavar="SECONDS",
                        help="then search the two-level sets with the hot topic's flow counted (level_hot.hot_search) "
                             "for at most this long per group, from the answer in hand")
    parser.add_argument("--hot-sets", type=int, default=0, metavar="N",
                        help="and compare the hot bound with the leaf LP on N random two-level sets per group")
    parser.add_argument("--hot-answer", type=float, default=None, metavar="VALUE",
                        help="start the hot search from this answer's saving instead of the coupling set's answer")
    parser.add_argument("--hot-deep", type=int, default=None, metavar="SETS",
                        help="only the hot bound with topics below q - 1 (level_hot_deep), at the local search's set "
                             "and on SETS random sets per group")
    parser.add_argument("--every-vector", type=int, default=None, metavar="SETS",
                        help="only the bound over every level vector of a top set (level_hot_deep.every_vector_bound), "
                             "at the local search's set and on SETS random sets per group")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.every_vector is not None:
        return _each(seeds, lambda seed: every_vector(seed, args.every_vector),
                     f"{'seed':>4} {'two-level':>9} {'every vector':>12} {'θ':>5} {'ν':>5} {'in s':>5} {'floor':>7} "
                     f"{'sets':>5} {'above':>5} {'most above':>10}",
                     lambda d: f"{d['value']:>9} {d['every']:>12} {d['theta']:>5.2f} {d['nu']:>5.2f} "
                               f"{d['seconds']:>5.2f} {_num(d['base'] - d['every']):>7} {d['sets']:>5} {d['above']:>5} "
                               f"{_num(d['excess']):>10}")
    if args.hot_deep is not None:
        return _each(seeds, lambda seed: hot_deep(seed, args.hot_deep),
                     f"{'seed':>4} {'hot':>4} {'set bound':>9} {'|H|':>4} {'one below':>9} {'sets':>5} "
                     f"{'worst gap':>9} {'above':>5}",
                     lambda d: f"{d['topic']:>4} {d['value']:>9} {d['size']:>4} {d['single']:>9.1f} {d['sets']:>5} "
                               f"{_num(d['gap']):>9} {d['above']:>5}")
    print(f"{'seed':>4} {'beyond q':>9} {'beyond q+1':>10} {'closed form':>11} {'box LP':>7} {'max-min':>7} "
          f"{'closed':>6} {'in s':>5} {'|H|':>4} {'leaf LP':>8} {'answer':>7}")
    rows = []
    for seed in seeds:
        r = analyse(seed, args.search_seconds, args.certify, args.hot, args.hot_sets, args.hot_answer)
        rows.append(r)
        print(f"{r['seed']:>4} {_num(r['beyond_q']):>9} {_num(r['beyond_q1']):>10} {_num(r['closed_form']):>11} "
              f"{_num(r['box_lp']):>7} {_num(r['max_min']):>7} {'yes' if r['closed'] else 'no':>6} "
              f"{r['searched']:>5.1f} {r['high']:>4} {_num(r['leaf_lp']):>8} {_num(r['answer']):>7}", flush=True)
    if args.certify:
        print(f"\n{'seed':>4} {'proven':>6} {'ended at':>16} {'nodes':>10} {'cuts':>8} {'in s':>7} {'floor':>7}")
        for r in rows:
            c = r["certificate"]
            if c is None:
                print(f"{r['seed']:>4} {'-':>6} (the max-min did not close)")
                continue
            print(f"{r['seed']:>4} {'yes' if c.proven else 'no':>6} {c.stage:>16} {c.nodes:>10,} {c.cuts:>8,} "
                  f"{c.seconds:>7.1f} {_num(r['floor'] if c.proven else None):>7}")
    if args.hot or args.hot_sets:
        print(f"\n{'seed':>4} {'hot':>4} {'overload':>8} {'base':>7} {'root':>5} {'local':>5} {'its answer':>10} "
              f"{'in s':>5} {'proven':>6} {'closed':>6} {'nodes':>8} {'in s':>6} {'above':>5} {'answer':>7} "
              f"{'floor':>7} {'bound = leaf':>12}")
        for r in rows:
            h = r["hot"]
            if h is None:
                print(f"{r['seed']:>4} {'-':>4} (no topic is overloaded)")
                continue
            f = h["search"]
            print(f"{r['seed']:>4} {h['topic']:>4} {h['overload']:>8,} {h['base']:>7,} {h['root']:>5} "
                  f"{h['local']:>5} {_num(h['local_answer']):>10} {h['local_seconds']:>5.1f} "
                  f"{'yes' if f.proven else 'no':>6} {'yes' if f.closed else 'no':>6} {f.nodes:>8,} {f.seconds:>6.1f} "
                  f"{len(f.above):>5} {_num(h['answer']):>7} {_num(h['floor']):>7} {h['equal']:>5} of {h['sets']:<3}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
