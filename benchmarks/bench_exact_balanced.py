"""``exact.balanced`` at scale: status, objective, bound and gap, end to end (issue 19, item 3).

Instances: :func:`bench_kip881.instance_dict` (three racks, RF 2, ``--topics``
topics with each member a random non-empty subset: mixed subscriptions; 80 %
of partitions owned, a fifth of the members a generation or two behind; 20 %
rack-less members). Each run is ``kipopt solve INSTANCE --method
exact.balanced --threads 2 --time-limit L`` in a child under a memory cap
(``--memory-gb``, default 6): "end to end" is its wall time (start,
reading, solving, evaluating, printing), "cpu" its CPU seconds (the figure to
trust on a loaded machine), "gap" ``(objective - bound) / objective``.

Targets (issue 19): 10,000 × 1,000 optimal in < 1 s; 100,000 × 5,000 optimal
in < 10 s; 1,000,000 × 10,000 within 0.1 % in < 120 s. Run with ``nice``;
the machine is shared, so wall times are noisy: compare CPU seconds and
ratios from one run. Exit status 1 when a target is missed.

Run: ``nice python benchmarks/bench_exact_balanced.py [--sizes small,medium,large]``.

Measured 2026-11-25 on the shared 2-core machine (load average about 10,
eight sessions at work; one run each, seed 1, 6 GB cap), with the targets'
limits as ``--time-limit``; none is met. Before (first table) and after
(second) the ``balclass`` branch, runs about an hour apart:

=================  ========  =============  =======  ==========  ======  =======
size               status    objective      bound    end to end  CPU s   peak MB
=================  ========  =============  =======  ==========  ======  =======
10,000 x 1,000     feasible  20,654,919     2,116    3.98        0.57    50
100,000 x 5,000    feasible  2,117,982,849  20,820   54.12       7.76    115
1,000,000 x 10,000 feasible  211,142,166,313 209,479 570.30      112.74  790
=================  ========  =============  =======  ==========  ======  =======

=================  ========  =============  =======  ==========  ======  =======
size               status    objective      bound    end to end  CPU s   peak MB
=================  ========  =============  =======  ==========  ======  =======
10,000 x 1,000     feasible  20,654,919     2,116    3.69        0.71    53
100,000 x 5,000    feasible  2,117,982,849  20,820   30.31       3.75    141
=================  ========  =============  =======  ==========  ======  =======

Rerun at 18:13 when the load had fallen to about 1 (same branch, same seed):

=================  ========  =============  =======  ==========  ======  =======
size               status    objective      bound    end to end  CPU s   peak MB
=================  ========  =============  =======  ==========  ======  =======
10,000 x 1,000     feasible  2,470          2,116    0.88        1.11    55
100,000 x 5,000    feasible  24,154         20,820   7.97        8.19    169
=================  ========  =============  =======  ==========  ======  =======

There the dec-min answer arrives within both limits, 14 % above the
balance-free bound: neither is proven, and the gap is the open part of the
target. At 500,000 partitions (5,000 members) with ``--time-limit 5`` the
method now answers in 2.8 s (greedy fallback: the time reserved for it,
:data:`~kipopt.formulations.consumers.balanced.FALLBACK_SECONDS_PER_PARTITION`,
leaves the dec-min stages nothing at that size), 3.0 CPU s in process.

Under the heavy load (wall five to eight times CPU) the dec-min
LPs do not finish and the least-loaded greedy fallback answers (cross-rack
partitions, hence the objectives); the fallback now takes heaps instead of a
scan of every subscriber per move, and the method prices its answer through
the layout instead of building the evaluator's index (at 500,000 partitions
with ``--time-limit 5`` the fallback alone took 34 s of 57 s in the method,
profiled under load). Without a limit the dec-min answer is 24,154 at
100,000 × 5,000 (7.5 CPU s; building the MILP takes another 9 CPU s there),
and at 10,000 × 1,000 with a 30 s limit the method answers 2,470 against a
bound of 2,116: not proven. The level search
(:mod:`~kipopt.formulations.consumers.level_search`), which proves most small
mixed groups, does not apply here: with 10 topics the box of topic levels
holds 6 · 10^11 vectors at 10,000 × 1,000 and 3 · 10^14 at 100,000 × 5,000.

After the level tree (:mod:`~kipopt.formulations.consumers.level_tree`: branch and bound over boxes
of topic levels, closed-form box bounds with the count coupling, per level vector an LP made tight by
each owner's two-mode keep hull), measured 2026-11-25 on the quiet machine (load average about 1, one
run each, seed 1). At the targets' limits (this script)::

    10,000 x 1,000    feasible  2,470   bound 2,130   1.01 s end to end   1.24 CPU s
    100,000 x 5,000   feasible  24,154  bound 21,323  8.54 s              8.75 CPU s

With longer limits (``kipopt solve ... --time-limit L``, end to end): 10,000 x 1,000 is **proven
optimal at 2,388** (the dec-min answer, 2,470, is 3.4 % above it; the balance-free bound said 2,116)
in 13.3 s at L = 60 (the target is 1 s: not met); 100,000 x 5,000 ends ``feasible`` at 24,154 with
the bound raised to 23,053 (gap 4.6 %, was 14 %) at L = 120, and 23,037 at L = 60 (method 54.1 s).
The tree spends its time in leaf LPs of about 86,000 columns there (interior point, about 3 s each
unloaded): the per-member model does not shrink, since the generator's 5,000 members fall in about
4,000 (rack, subscription) classes. 1,000,000 x 10,000 was not run.

2026-11-28, quiet machine: the box bounds read each class's levels off its (class, topic) pairs
instead of the dense classes x topics grid (same bounds, checked on 2,480 box batches and by a test):
10,000 x 1,000 is proven optimal at 2,388 in 7.85 s end to end at L = 60 (10.58 s before, same run
order, same 2,496 boxes and 38 leaf LPs; target 1 s: not met). Of the tree's time, about 3.5 s are
the warm leaf LPs (15,957 columns, 25-330 ms each) and the rest the box bounds.

Later on 2026-11-28 (quiet machine, one run each): the box bounds are computed with a batch's arrays
laid out (pairs, boxes) and their per-class, per-owner and per-group sums as sparse products (2.1
times faster, identical bounds on the search's 2,458 batches); a leaf's warm LP stops at the best
answer's cutoff (its dual bound re-checked by weak duality); a rounding heuristic (high counts
rounded and fixed, the LP again) gives answers early. 10,000 x 1,000 is proven optimal at 2,388 in
5.4-6.6 s end to end at L = 60 (2,490 boxes, 33 leaf LPs of which 30 stop at the cutoff, three
rounded answers, no leaf MILP; it was 7.1-7.2 s with the faster box bounds alone). This script, at
the targets' limits::

    10,000 x 1,000      feasible  2,470    bound 2,259    gap 8.5 %   1.26 s end to end
    100,000 x 5,000     feasible  24,154   bound 23,024   gap 4.7 %   9.73 s   (bound 21,323 before)
    1,000,000 x 10,000  feasible  244,816  bound 224,125  gap 8.5 %   109.6 s  1,237 MB peak

(That is with the level tree keeping the time the member MILP's build would not fit in, and leaf LPs
of over 40,000 columns in a child the time limit kills: an interior point solve overran a 2 s limit by
2 s at 100,000 x 5,000, which took the method to 10.8 s of a 10 s limit.) At 1,000,000 x 10,000 the
level tree's rounding improves the dec-min answer (245,146) and raises the bound from the
balance-free 209,479; its leaf LPs of about 200,000 columns take 10-14 s each (interior point). At
100,000 x 5,000 with L = 60 the rounding finds 23,849 against a bound of 23,045 (gap 3.4 %). No
target is met: 10,000 x 1,000 needs about five times less time, and the larger ones need a bound the
box relaxation does not give.

With boxes shaved before they are halved, leaf LPs first bounded by the last optimum's duals, and each
owner's keep in a box's bound capped at the peak of ``min(ℓ, k(ℓ))`` (measured 2026-11-28, quiet
machine): 10,000 x 1,000 is proven optimal at 2,388 in 1.96-2.08 s end to end at L = 60 (156 boxes
instead of 2,490; 6 leaf LPs solved by HiGHS instead of 36, the other 30 settled by the carried-over
duals; 0.6 s of it is reading, evaluating and writing, as for any method); 100,000 x 5,000 at
L = 60 ends at 23,549 against 23,142 (gap 1.7 %, 52.4 s). This script, at the targets' limits::

    10,000 x 1,000      feasible  2,470    bound 2,375    gap 3.8 %   1.46 s end to end
    100,000 x 5,000     feasible  24,154   bound 23,024   gap 4.7 %   9.76 s
    1,000,000 x 10,000  feasible  243,884  bound 224,323  gap 8.0 %   111.2 s  1,309 MB peak

Still no target is met. At 100,000 x 5,000 with L = 10 the dec-min stages take 4.6 s and the first
leaf LP, which no dual settles yet, 3.1 s (interior point in a child, 86,000 columns).
With narrow boxes settled by one MILP each (formulations/consumers/level_box.py; measured 2026-11-28,
quiet machine), nothing changes at these sizes: no box's model is small enough to qualify (10,000 flow
columns at most). This script, at the targets' limits::

    10,000 x 1,000      feasible  2,470    bound 2,375    gap 3.8 %   1.45 s end to end
    100,000 x 5,000     feasible  24,154   bound 23,024   gap 4.7 %   10.17 s
    1,000,000 x 10,000  feasible  244,504  bound 224,263  gap 8.3 %   111.3 s  1,305 MB peak

(10,000 x 1,000 at L = 60 is still proven optimal at 2,388, method 1.7 s.) The box MILPs prove
100-member, 20-topic groups of the production paper grid instead (4 of its 40 such groups are now
proven, 2 before).

With every box bounded by the leaves' LP written for the whole box (:func:`~kipopt.formulations.consumers.
level_warm.relax_box`; measured 2026-11-29, quiet machine), nothing changes at these sizes: their leaf LPs
have 16,000 columns and more, where box relaxations join only late (each one 80 ms at 10,000 x 1,000: with
them from the start the proof took 7.2 s against 1.8 s). This script, at the targets' limits::

    10,000 x 1,000      feasible  2,470    bound 2,375    gap 3.8 %   1.28 s end to end
    100,000 x 5,000     feasible  24,154   bound 23,025   gap 4.7 %   9.70 s
    1,000,000 x 10,000  feasible  243,884  bound 224,324  gap 8.0 %   110.9 s  1,310 MB peak

They prove 38 of the production grid's 40 mixed 100-member, 20-topic groups at 60 s instead (7 before).

Measured 2026-11-29 (quiet machine, one run each): stage 1 over the window of the least and greatest
counts only (:func:`~kipopt.formulations.consumers.decmin.extreme_counts`; at 1,000,000 x 10,000
164,034 columns and 11.2 s become 5,120 and 0.48 s), stage 2 by interior point above 30,000 columns
(18.0 s become 6.8 s there), a leaf's rounding in the same HiGHS object as its relaxation
(:meth:`~kipopt.formulations.highs.WarmLP.solve_then`: a short dual simplex instead of a second cold
interior point solve) and the package's bytecode compiled by ``make setup``. This script::

    10,000 x 1,000      feasible  2,470    bound 2,375    gap 3.8 %   1.31 s end to end
    100,000 x 5,000     feasible  23,877   bound 23,037   gap 3.5 %   9.71 s   (was 24,154: the first leaf's
                                                                                  rounding now fits)
    1,000,000 x 10,000  feasible  243,864  bound 224,391  gap 8.0 %   110.8 s  1,319 MB peak

At 1,000,000 x 10,000 the level tree gets about 22 s more but its leaf LPs (about 200,000 columns) take
15-20 s each, and the bound (the closed form's) does not move: no change. 10,000 x 1,000 at L = 60 is
proven at 2,388 in 2.1 s end to end. No target is met.

Measured 2026-11-29 (quiet machine, one run each) with the sweep of
:mod:`~kipopt.formulations.consumers.level_local` (the vectors that lower every topic outside the ``r``
largest by one level, a few leaf LPs, each rounded to an answer). This script::

    10,000 x 1,000      feasible  2,388    bound 2,163-2,314  gap 3.1-9.4 %  1.25-1.34 s end to end
    100,000 x 5,000     feasible  23,549   bound 23,024-23,078  gap 2.0-2.2 %  9.57-10.30 s
    1,000,000 x 10,000  feasible  243,636  bound 224,392  gap 7.9 %   110.8 s  1,310 MB peak

At 10,000 x 1,000 the answer in 1 s is now the optimum (2,388; dec-min 2,470), but the sweep takes the
time in which the closed-form boxes raised the bound to 2,375, so the gap at the limit is not smaller;
at L = 60 the proof takes 96 boxes instead of 156 (1.5-1.9 s end to end). At 100,000 x 5,000 the
sweep's first vector holds 23,549, the best answer known there (the tree's first leaf held 23,877).
Two runs of ``kipopt solve`` on that instance at L = 10 ended at the dec-min 24,154 when stage 2 took
3.3 s instead of 2.1-2.6 s: the sweep's one leaf LP (interior point, about 3-4 s) then did not finish.
At 1,000,000 x 10,000 one sweep LP fits and gains 0.1 %. No target is met.

Measured 2026-11-29 (quiet machine, one run) with relaxed boxes shaved by their LPs' duals
(:mod:`~kipopt.formulations.consumers.level_duals`) and the duals that proved a leaf's cutoff tried on
the next leaves (:meth:`~kipopt.formulations.highs.WarmLP.solve`). This script::

    10,000 x 1,000      feasible  2,388    bound 2,341    gap 2.0 %   1.23 s end to end
    100,000 x 5,000     feasible  23,549   bound 23,111   gap 1.9 %   9.52 s
    1,000,000 x 10,000  feasible  243,636  bound 224,395  gap 7.9 %   109.1 s  1,313 MB peak

The shave needs box relaxations, which these sizes do not get (16,000 leaf LP columns and more): no
change there. The cutoff's duals settle 30 of the 31 leaf LPs of the 10,000 x 1,000 proof, which at
L = 60 takes 1.42-1.87 s end to end (method 1.08-1.47 s; 96 boxes; it was 1.5-1.9 s): of that, about
0.25 s is reading the instance, 0.35 s the dec-min stages, and 0.28 s the sweep's first leaf LP
(interior point, cold). No target is met.

Measured 2026-11-29 (quiet machine, one run each) with boxes that get no LP of their own bounded, cut and
shaved by the duals the leaves' LPs left behind (the last eight optima's and the last cutoff's; the
level tree's ``CARRIED_BOX_BOUNDS``), and leaves the sweep solved not solved again. This script::

    10,000 x 1,000      feasible  2,388    bound 2,341    gap 2.0 %   1.40 s end to end
    100,000 x 5,000     feasible  23,549   bound 23,127   gap 1.8 %   9.72 s
    1,000,000 x 10,000  feasible  243,636  bound 242,650  gap 0.40 %  110.2 s  1,473 MB peak

At 1,000,000 x 10,000 the bound was 224,392 (gap 7.9 %): the closed form left boxes at about 224,000
whose leaves' LPs lie above the answer, and the carried duals now say so for most of them with no solve
(the bound climbs from 224,075 to 242,610 in 13 s once the sweep's leaves are solved); what is left
open are leaves those duals do not settle, each a 13-18 s interior point solve at 208,000 columns. With
``--time-limit 160`` (in process) the tree ends at 154.5 s with the bound at 243,632 against 243,636 (gap
0.0016 %): the target's 0.1 % is about 40 s of leaf solves away (the sweep's four leaf LPs take 57 s of
the 120, stage 2 5.5 s). From about 195 s on the tree gets only half the time left and the member MILP
(150,051 pairs, a turn of 90 s needed) the other half: with a 220 s limit the tree ended at 111 s and
the MILP, in its child, found nothing. At
100,000 x 5,000 ``kipopt solve --time-limit 300`` proves the optimum, 23,549, in 78.6 s end to end (300
s had left it at 23,177 before); at 10 s the sweep's leaf LPs take the time. No target is met: 10,000 x
1,000 needs 1.4 s, 100,000 x 5,000 about 8 times the 10 s, and 1,000,000 x 10,000 is 0.40 % open at
120 s against 0.1 %.

Measured 2026-11-29 later (quiet machine, one run each) with large leaf LPs two at a time, each in a
child of its own (the level tree's ``LEAF_WORKERS``: the sweep's first guess with its lower neighbour,
then two steps ahead; a leaf with the next leaf in line when the carried duals settle neither), and
the evaluator's partition-to-topic map built without the per-partition rack sets (0.3 s instead of
2.9 s at 1,000,000 partitions, inside the tree's first answer check). This script::

    10,000 x 1,000      feasible  2,388    bound 2,375    gap 0.54 %   1.32 s end to end
    100,000 x 5,000     feasible  23,549   bound 23,156   gap 1.7 %    9.75 s
    1,000,000 x 10,000  feasible  243,636  bound 243,597  gap 0.016 %  109.6 s  995 MB peak

The 1,000,000 x 10,000 target (0.1 % in 120 s) is met; the process tree's summed PSS peaked at 1,078 MB
(two leaf children at once; "peak" above is the largest single process). Its sweep now takes 28 s
instead of 53 (two pairs of 8-12 s interior point solves instead of four solves), and the leaves left
after it, 11-13 s each, come two at a time where the heap has two in line. The first 100,000 x 5,000 run after the change gave 23,024 at 10 s, this one
23,156: the bound at 10 s moves with the second or so the tree gets after the sweep. There the
leaves rarely come two in line (0 to 2 pairs among 45 leaf LPs), and ``kipopt solve --time-limit 300`` proves
23,549 in 71.0 s end to end (78.6 s before). Tried and dropped: settling a leaf above the cutoff by
its interior point's duals before the crossover (HiGHS' crossover run afterwards from that point
otherwise). It saves about 1 s of a 12 s leaf at 1,000,000 x 10,000, but the central duals it keeps
settle fewer later leaves than vertex duals: 100,000 x 5,000 took 104 s to its proof instead of 70.
A looser interior point tolerance (1e-6) was not faster on those leaves and left points HiGHS'
crossover could not finish from.

The same day, after a popped leaf's partner became the leaf of least bound in line wherever it stands
among the boxes (not only one right behind it), a leaf the carried duals settle was no longer modelled
twice, and the first answer check got faster (``GroupIndex.topic_of``). This script::

    10,000 x 1,000      feasible  2,388    bound 2,375    gap 0.54 %    1.22 s end to end
    100,000 x 5,000     feasible  23,549   bound 23,195   gap 1.5 %     9.58 s
    1,000,000 x 10,000  feasible  243,636  bound 243,632  gap 0.0016 %  109.1 s  1,219 MB peak

Over the five runs of this script that day with leaves two at a time (the first still with the interior
point cutoff since dropped), 1,000,000 x 10,000 ended at 243,632, 243,597, 243,378 (0.106 %: missed),
243,597 and 243,632. Every size was slower in the run that missed (10,000 x 1,000 at 1.47 s, 100,000 x
5,000 left at the dec-min answer), with nothing else running that I could find. The target is met
with a margin of one or two leaf solves, no more.

Measured 2026-11-29 evening (quiet machine) after the level tree's start (its bounds' index, arcs and
first leaf LP, at the sweep's first vector) was made in a thread beside the dec-min stages
(:mod:`~kipopt.formulations.consumers.level_start`, groups of at most 50,000 partitions; HiGHS releases
the GIL while it solves, and ``scipy.sparse``'s 0.12 s import moved there too). This script, ``--sizes
small``, fifteen runs over forty minutes: 0.95-1.16 s end to end, three of them under 1 s; eight proven
within the 1 s limit, the other seven at bounds of 2,362-2,386 against 2,388 (the machine's speed drifts
by 10 % within minutes here). Side by side with the code before, alternating runs (``python -m kipopt
solve``, same limit): 0.99-1.11 s against 1.28-1.39 s. So the target is still missed, by about 0.05 s in
a typical run. The whole script::

    10,000 x 1,000      feasible  2,388    bound 2,362    gap 1.1 %     1.14 s end to end
    100,000 x 5,000     feasible  23,549   bound 23,153   gap 1.7 %     9.47 s
    1,000,000 x 10,000  feasible  243,636  bound 243,632  gap 0.0016 %  109.7 s  1,150 MB peak

(the two larger groups do not use the start: above 50,000 partitions stage 2 and the leaf LPs run in
children, and a fork waits for a thread working beside).

Then a large leaf with no other leaf in line was solved beside the vector nearest it in the box of least
bound (``level_policy.SPECULATIVE_PARTNERS``, among the first ``INSIDE_TRIES`` = 32 boxes in line):
``kipopt solve --time-limit 300`` proves 100,000 x 5,000 at 23,549 in 46.9-48.2 s end to end over three
runs (71.0 s before; 10 pairs among 35 leaf LPs, 6 of them inside boxes, where there were 0-5 pairs;
with 4 tries 56.6 and 57.6 s). With the boxes first in line bounded and split while the leaves' children
work (``level_policy.BOXES_BESIDE``; 42 boxes so): 45.8 s; 1,000,000 x 10,000: 243,636 / 243,632 at 109.2 s. At the targets' limits nothing moves: the partners start after the sweep, which
takes the first 7 s at 100,000 x 5,000 (23,549 / 23,192 and 23,197 at 9.48 and 9.37 s), and 1,000,000 x
10,000 gave 243,636 / 243,632 at 109.0 s again (1,234 MB peak).

Measured 2026-11-29 night, after Python's share of the 10,000 x 1,000 run was trimmed (the dec-min
answer's cross-rack count taken once; ``scipy.sparse`` imported by the start's thread after its leaf LP,
not before it, where it held the GIL against the dec-min stages; weak-duality bounds reusing their LP
family's entry columns, 0.34 of 0.43 ms per bound before; stage 2's columns from a mask; read-backs over
Python ints). ``--sizes small`` fifteen times: 0.95, 0.96, 0.96, 0.97 (four), 0.98 (three), 0.99, 1.00,
1.02 (three) s end to end, every run proven optimal at 2,388. Side by side with the code of the morning,
alternating ``kipopt solve`` runs, ten each: 0.94-0.97 s against 0.97-1.15 s. So the target is met in
most runs, with no margin to speak of: the rest is HiGHS (0.36 s of solves), imports (0.12 s of
``scipy.sparse``, which the bounds' products need; a numpy segmented sum was ten times slower per
product) and about 0.1 s of box bounds. ``--sizes medium,large``: 23,549 / 23,197 at 9.37 s, and
243,636 / 243,632 at 109.0 s (1,240 MB peak), unchanged.

With the count coupling's topic set scored after the sweep (:mod:`~kipopt.formulations.consumers.level_coupling`;
at 10,000 x 1,000 its search takes about 3 ms and its set is one the sweep tried), the final code,
``--sizes small`` fifteen times: 0.95 (two), 0.96 (three), 0.97 (six), 0.98, 0.99 (two), 1.00 s, every
run proven at 2,388: 14 of 15 under 1 s. ``--sizes medium``: 23,549 / 23,127 at 9.48 s; ``--sizes
large``: 243,636 / 243,632 at 109.25 s (992 MB peak).

Measured 2026-11-29, late, with leaves and boxes priced by supply
(:mod:`~kipopt.formulations.consumers.level_lagrange`: the carried duals' supply prices, every node's
part solved afresh; a leaf that bound settles is not solved) and, above 50,000 partitions, the tree's
start made while stage 2 solves in its child (``level_start.StartWhile``). ``--sizes medium``:
**optimal at 23,549 in 8.95, 8.86, 8.90 and 8.89 s** end to end (12.0 CPU s, 239 MB peak); before the
start was moved, 9.43 (feasible, 23,549 / 23,524: the deadline came first), 9.11 and 9.00 s. With
``--time-limit 60`` the proof took 43.7-45.4 s before this change (21 leaf LPs by interior point after
the sweep, each settled by this bound when tried: 10-90 ms against 2-3 s). ``--sizes large``: 243,636 /
243,632 at 109.1 s (1,235 MB peak), as before. ``--sizes small`` does not use either (its leaf LPs have
16,000 columns, below ``level_policy.PRICED_MIN_COLUMNS``).

Measured 2026-11-29, night, once the console script ends as soon as its output is out
(:func:`kipopt.cli._exit_now`: Python's finalization, 0.04-0.05 s of every run, most of it clearing the
modules ``scipy.sparse`` brings in, is skipped). ``--sizes small`` fifteen times before: 0.95-1.01 s
end to end (mean 0.977 s, 13 of 15 under 1 s, 1.44 CPU s); after: **0.90-0.95 s** (mean 0.928 s, 15 of
15 under 1 s, 1.37 CPU s), every run proven at 2,388. Tried the same evening and dropped, alternating
runs each: ``scipy.sparse`` imported first in the start's thread (0.951 against 0.968 s) or in a thread
of its own during the first leaf LP (0.953 against 0.959 s); the tree's index built before that leaf LP
(0.79 against 0.76 s in the method); the dec-min stages in a child while this process makes the start
(0.921 against 0.944 s: the two together are 0.77 CPU s on two cores, at their floor); a numpy
sparse product in place of ``scipy.sparse`` (no import, but 5-7 times slower per product: 0.82 against
0.75 s in the method); the start's leaf LP family at one thread (0.950 against 0.955 s). scipy 1.16's
``scipy.sparse`` imports as slowly as 1.17's (0.20 against 0.22 s with numpy). ``--sizes medium,large``
the same evening (before the exit change): 23,549 optimal at 9.04 s; 243,636 / 243,632 at 108.9 s
(1,236 MB peak).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_kip881 import instance_dict  # noqa: E402

SIZES = {
    "small": {"partitions": 10_000, "members": 1_000, "seconds": 1.0, "gap": 0.0},
    "medium": {"partitions": 100_000, "members": 5_000, "seconds": 10.0, "gap": 0.0},
    "large": {"partitions": 1_000_000, "members": 10_000, "seconds": 120.0, "gap": 0.001},
}
KIPOPT = Path(sys.executable).parent / "kipopt"


def run(path: Path, limit: float, memory_gb: float) -> dict:
    def cap() -> None:
        size = int(memory_gb * 1024 ** 3)
        resource.setrlimit(resource.RLIMIT_AS, (size, size))

    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen([str(KIPOPT), "solve", str(path), "--method", "exact.balanced", "--threads", "2",
                                  "--time-limit", str(limit)], stdout=out, stderr=err, text=True, preexec_fn=cap)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        text, errors = out.read(), err.read()
    row = {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024}
    if os.waitstatus_to_exitcode(status) != 0:
        return dict(row, status="error", message=(errors.strip().splitlines() or [""])[-1])
    solution = json.loads(text)
    objective, bound = solution.get("objective"), solution.get("bound")
    gap = (objective - bound) / objective if objective else 0.0
    return dict(row, status=solution["status"], objective=objective, bound=bound, gap=gap,
                violations=len(solution["metrics"].get("violations", [])))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="small,medium,large")
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--memory-gb", type=float, default=6.0)
    args = parser.parse_args(argv)
    missed = []
    print(f"{'size':22} {'status':9} {'objective':>10} {'bound':>10} {'gap':>8} {'end to end':>10} {'cpu':>7} "
          f"{'peak MB':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes.split(","):
            spec = SIZES[size]
            path = Path(tmp) / f"{size}.json"
            path.write_text(json.dumps(instance_dict(spec["partitions"], spec["members"], args.topics, args.seed, 0.0)))
            r = run(path, spec["seconds"], args.memory_gb)
            label = f"{spec['partitions']:,} x {spec['members']:,}"
            if r["status"] == "error":
                print(f"{label:22} error     {r['message']}")
                missed.append(f"{size}: error")
                continue
            print(f"{label:22} {r['status']:9} {r['objective']:10.0f} {r['bound']:10.0f} {r['gap']:8.4%} "
                  f"{r['wall']:10.2f} {r['cpu']:7.2f} {r['peak_mb']:8.0f}")
            if r["violations"] or r["gap"] > spec["gap"] or r["wall"] >= spec["seconds"] or \
                    (spec["gap"] == 0.0 and r["status"] != "optimal"):
                missed.append(f"{size}: {r['status']}, gap {r['gap']:.4%}, {r['wall']:.2f} s "
                              f"(target gap {spec['gap']:.1%} in {spec['seconds']} s)")
    for line in missed:
        print("MISSED:", line)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
