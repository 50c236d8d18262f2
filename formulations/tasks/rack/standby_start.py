"""A feasible start for the tagged grouped standby ILP, from a network LP.

With tags and more than one standby per task, the grouped model of
:mod:`kipopt.formulations.tasks.rack.standby_grouped` keeps covering rows and its
LP is often fractional; at 10,000 tasks the ILP can outlast any sensible
time limit before it finds a point better than the starting assignment.

A sufficient condition keeps the problem a network: replace the copies a
task held in group ``h`` only by copies in groups ``g`` that carry every
pair ``h`` added beyond the task's actives (``g`` *dominates* ``h`` for the
task; ``h`` dominates itself). The union of the task's pairs then contains
the start's, so no task loses distinctness. Per task, a *slot* node per old
group ``h`` (supply: the copies held there) sends flow to a *bundle* node
per group ``g`` it may move to, and the bundle feeds the task's ``kept`` and
``new`` edges into ``g``; tasks without covering rows feed their edges
directly. Every column is a node-arc incidence column: the matrix is totally
unimodular, the simplex vertex integral, and its cost an upper bound the ILP
starts from.
"""

from __future__ import annotations

import numpy as np

from kipopt.formulations.highs import Deadline, SparseBuilder, solve_tu_lp
from kipopt.formulations.tasks.rack.standby_model import StandbyProblem, overlap_counts


def dominating_start(p: StandbyProblem, on_held: np.ndarray, carries: np.ndarray, covered: np.ndarray,
                     threads: int | None = None, deadline: Deadline | None = None) -> np.ndarray | None:
    """Copies per edge of the cheapest placement where copies move only to dominating groups.

    ``p`` is the grouped problem (sinks are groups) and the arrays are those of
    :class:`~kipopt.formulations.tasks.rack.standby_grouped.GroupedStandby`.
    """
    T, G, E = len(p.tasks), len(p.clients), p.num_edges
    restricted = np.zeros(T, dtype=bool)
    restricted[p.tags.need_task] = True
    b = SparseBuilder()
    x = b.add_cols(E, upper=p.edge_cap.astype(np.float64))
    b.add_rows(G, p.edge_client, x, 1.0, p.counts, p.counts)
    free = ~restricted[p.edge_task]
    tasks = np.nonzero(~restricted & (p.copies > 0))[0]
    row_of = np.full(T, -1, dtype=np.int64)
    row_of[tasks] = np.arange(len(tasks))
    b.add_rows(len(tasks), row_of[p.edge_task[free]], x[free], 1.0, p.copies[tasks], p.copies[tasks])
    # bundles: the (task, group) pairs of the restricted tasks' edges
    edges = np.nonzero(~free)[0]
    bundles, bundle_of_edge = np.unique(p.edge_task[edges] * G + p.edge_client[edges], return_inverse=True)
    # slots: (task, old group); candidate moves: dominating groups the task has edges into
    slot_t, slot_h = np.nonzero(on_held * restricted[:, None])
    added = carries[slot_h] & ~covered[slot_t]
    missing = overlap_counts(added, ~carries)
    s, g = np.nonzero(missing == 0)
    key = slot_t[s] * G + g
    pos = np.minimum(np.searchsorted(bundles, key), max(len(bundles) - 1, 0))
    ok = (bundles[pos] == key) if len(bundles) else np.zeros(len(key), dtype=bool)
    s, pos = s[ok], pos[ok]
    supply = on_held[slot_t, slot_h].astype(np.float64)
    f = b.add_cols(len(s), upper=supply[s])
    b.add_rows(len(bundles), np.concatenate([bundle_of_edge.reshape(-1), pos]), np.concatenate([x[edges], f]),
               np.concatenate([np.ones(len(edges)), -np.ones(len(s))]), 0.0, 0.0)
    b.add_rows(len(slot_t), s, f, 1.0, supply, supply)
    lp = b.build(cost=np.concatenate([p.edge_cost.astype(np.float64), np.zeros(len(s))]))
    res, _ = solve_tu_lp(lp, threads=threads, deadline=deadline)
    if res.x is None or res.status not in ("optimal", "feasible"):
        return None
    return np.rint(res.x[:E]).astype(np.int64)
