"""When and how the level tree (:mod:`~kipopt.formulations.consumers.level_tree`) spends its time: its box
relaxations, box MILPs, leaf LPs at once, and the bounds it takes from the leaves' duals; each setting with
what was measured for it. The tree reads them here at run time (``policy.NAME``), so a test or a benchmark
may change one for a run."""

from __future__ import annotations

from kipopt.deadline import cores

BOX_LP_EAGER_COLUMNS = 10_000
"""Up to this many leaf LP columns every box gets its relaxation. Above, the tree starts with its closed-form
bounds alone and adds the relaxations late (:data:`BOX_LP_LATE_BOXES`): on the 10,000 x 1,000 benchmark
group (16,000 columns) its proof took 5.9 s with them from the start (76 boxes, 70 box LPs) against 1.6 s
without (156 boxes); a 100-member, 20-topic group has about 2,000 to 5,000."""

ENUM_MAX_VECTORS = 256
"""A box of at most this many level vectors goes in line as its vectors, each bounded by the Lagrangian at the
duals in hand and again at those the leaves leave later (:mod:`~kipopt.formulations.consumers.level_enum`),
instead of being split further. 10,000 x 1,000 seed 2: 3.41 s with none, 0.98-1.07 s at 64 and 256, 1.6-2.2 s at
1,024 (a 1,024-vector box costs 220 ms per pricing)."""

ENUM_MAX_LIVE_UNITS = 6_000_000
"""The most units of the enumerated boxes in line at once (40 bytes each: 240 MB); a box that would pass
it is split as before."""

ENUM_AFTER_BOXES = 20
"""Boxes are enumerated only once the tree has popped this many: pricing a 256-vector box costs 30-40 ms, more
than the few splits that settle an easy group. On the 10,000 x 1,000 benchmark groups (seeds 1-3, 2026-12-02,
in process): seed 2 proven in 1.16 s (64 boxes) where splitting took 3.41 s (459 boxes); seeds 1 and 3
0.70 and 1.61 s either way (1.03 and 1.82 s when enumerating from the first box)."""

SWEEP_FLOOR_MIN_COLUMNS = 10_000
"""Above this many leaf LP columns the sweep scores a vector by its Lagrangian floor at the duals in hand, with
no solve, where that floor shows it cannot improve (``sweep_floored``). On ten 10,000 x 1,000 groups (15,500
columns; in process, 60 s limit) the proofs took 32.6 s in all instead of 36.7; on the oracle benchmark's groups
of 10 to 100 members (a few thousand columns, a warm leaf LP in milliseconds) ``check --batch`` ran 170 checks/s
with it and 183 without (the machine at half speed)."""

BOX_LP_MAX_COLUMNS = 50_000
"""Above this many columns, no box relaxations (a solve there runs interior point in a child, seconds each)."""

BOX_LP_LATE_BOXES = 300
BOX_LP_LATE_SHARE = 0.25
BOX_LP_LATE_SECONDS = 5.0
"""Models above :data:`BOX_LP_EAGER_COLUMNS` get box relaxations once the closed-form search has popped this
many boxes, or used this share of its time and at least these seconds: the 10,000 x 1,000 benchmark
group, proven in 156 boxes and 1.5 s, never gets them; a 100,000 x 1,000 x 50 group, which pops a
handful of boxes in a minute, gets them after 15 s."""

CUBE_AFTER_LEAVES = 200
"""Boxes go to the MILP of :mod:`~kipopt.formulations.consumers.level_box` only once this many leaf LPs have
been solved: until then the box relaxations and the leaves settle the group, or show that they do not.
Measured on four 100-member, 20-topic groups of the production grid (60 s limit): with the MILPs from the
start 38, 15, 31 and 33 s (two groups spent their time in box MILPs the box LPs did not need: 2 s
without them); without any, two were left unproven (1,115 and 1,008 against 1,116 and 1,009); from
200 leaves on, 2.1, 15.9, 31.0 and 2.4 s, all four proven."""

LEAF_WORKERS = 2
"""At most this many large leaf LPs (interior point, each in a child of its own) at once, in the sweep and
for the leaves first in line (:meth:`~kipopt.formulations.highs.WarmLP.solve_then_each`): the level tree
works on one core otherwise."""


def leaf_workers(threads: int | None) -> int:
    """Large leaf LPs solved at once: :data:`LEAF_WORKERS`, no more than ``threads`` (when given) or the
    process's cores (:func:`kipopt.deadline.cores`: a ``--batch`` worker's share)."""
    return max(1, min(LEAF_WORKERS, threads or cores()))


BOXES_BESIDE = True
"""While large leaf LPs solve in children the parent bounds and splits the boxes first in line instead of
waiting (at 100,000 x 5,000: 42 boxes so, the proof in 45.8 s instead of 47-48)."""

SPECULATIVE_PARTNERS = True
INSIDE_TRIES = 32
"""A large leaf with no other leaf in line is solved beside the vector nearest it in a box of least bound
(of the first :data:`INSIDE_TRIES` in line, each try a bound by every carried dual): at 100,000 x 5,000 (0 to
5 pairs among 45 leaf LPs before) the proof took 47-48 s instead of 71 (57 s with 4 tries)."""

LEAF_MILP_CHILD_COLUMNS = 40_000
"""Under a deadline, a leaf MILP with more columns than this runs in a child the deadline kills (at
1,000,000 x 10,000 a leaf has 208,000)."""

PRICED_MIN_COLUMNS = 40_000
"""Leaves and boxes whose leaf LP has more columns than this (interior point in a child, seconds per leaf at
100,000 x 5,000) are first bounded by the Lagrangian at the supply prices of the carried duals
(:mod:`~kipopt.formulations.consumers.level_lagrange`, 10-100 ms there): a leaf the bound settles is not
solved (:func:`~kipopt.formulations.consumers.level_lagrange.priced_out`), a box takes the better of it and
weak duality (:func:`~kipopt.formulations.consumers.level_duals.carried_bound`). At 100,000 x 5,000
(60 s limit, two threads) the proof took 8.6-9.2 s instead of 43.7-45.4 s: each of the 21 leaf LPs
solved after the sweep before was settled by it. Below, a warm dual simplex settles a leaf in
milliseconds, and the leaves' duals (which a priced-out leaf does not leave) bound more boxes: on mixed
40-member groups with no box relaxations the tree popped more leaves with it."""

CARRIED_BOX_BOUNDS = True
"""Above :data:`BOX_LP_MAX_COLUMNS`, bound a box by the duals the leaves' solves left behind, cut it when
that reaches the best answer, else shave it with them
(:func:`~kipopt.formulations.consumers.level_duals.carried_bound`). Below, box relaxations price the
boxes: on a 50-topic group of 100,000 partitions (46,000 columns, box LPs from 15 s on) the carried
duals' shave before them took the time of half its boxes (bound at 60 s 9,939 against 10,178 without).
On a 100,000 x 5,000 group (leaf LPs of 89,000 columns, too large for box relaxations) the bound at 60 s
rose from 23,161 to 23,491 (the answer: 23,549), and the group was proven in 79 s end to end (with
:attr:`WarmLP.KEPT_DUALS <kipopt.formulations.highs.WarmLP.KEPT_DUALS>` duals kept)."""

DUAL_SHAVE = True
"""Shave relaxed boxes by their relaxations' duals (:mod:`~kipopt.formulations.consumers.level_duals`):
on the production grid's 100-member groups, 3 to 8 times fewer boxes to the same proofs."""
