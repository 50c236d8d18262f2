"""The certificate as a stage of ``exact.balanced``: a bound over every level vector where the tree's is flat.

The level tree's bounds relax the count coupling (each topic may be half at ``q``), so on groups where
that coupling decides the optimum its bound stays below the answer however long it runs: on the paper
grid's 100,000 x 1,000 x 50 group of seed 2, 10,094 against 10,037 after an hour. There
:func:`~kipopt.formulations.consumers.level_certificate.certify` proves, over every level vector, that no
assignment saves more than the two-level max-min
(:func:`~kipopt.formulations.consumers.level_coupling.best_split`, closed) against every member at ``q``,
so :func:`floor_at_q` less that max-min bounds every valid assignment (:func:`certified_bound`). Where that
floor is the answer in hand, the group is proven.

It applies (:func:`applies`) to groups whose least cross-rack answer is in hand and whose rows the theorem
reads, with no overloaded topic (:func:`~kipopt.formulations.consumers.level_hot.hot_rows`: there the
partitions' flow through that topic costs what the count does not see, and the floor falls far below
the answers), and only under a time limit of at least :data:`CERTIFY_LEAST_SECONDS`: on seed 2 the
max-min's search takes about 100 s and the certificate about 850 s, one core. The tree first gets
:data:`TREE_FIRST_SECONDS` (its answers are what the floor must meet), the certificate the rest, and the
tree again whatever the certificate leaves (when it ends without a proof or does not apply there).

Measured 2026-11-30 on seed 2 (``kipopt solve --method exact.balanced --threads 2 --time-limit 1800``, beside
another one-core job): ``optimal``, 10,094 with bound 10,094, in 918 s (the tree 57 s, then the max-min and
the certificate 858 s: 5.8 million nodes, 485,000 minimum cuts), peak 373 MB. At the grid's 60 s the stage is
not planned, and the answer stays 10,094 with the tree's bound 9,920. The other four 50-topic groups have an
overloaded topic: the stage does not apply there.
"""

from __future__ import annotations

import time

import numpy as np

from kipopt.instance import ConsumersInstance

from kipopt.formulations.consumers.groups import Layout
from kipopt.formulations.consumers.level_bounds import Tree, tree
from kipopt.formulations.consumers.level_certificate import certify, rows
from kipopt.formulations.consumers.level_coupling import best_split, coupling
from kipopt.formulations.consumers.level_hot import hot_rows
from kipopt.formulations.consumers.rules import owners

CERTIFY_LEAST_SECONDS = 600.0
"""The certificate's stage is planned only when at least this much of the time limit is left after the
dec-min stages: below, it would not finish on the groups that need it (about 950 s on the paper grid's
seed 2), and its turn is the tree's."""

TREE_FIRST_SECONDS = 60.0
"""The level tree's turn before the certificate (at most a quarter of the time left): on the paper grid's
seed 2 it finds the answer the certificate proves (10,094) within the grid's 60 s."""

MIXED_LEAST_TOPICS = 2
"""A group needs at least this many subscribed topics for the count coupling to say anything."""


def planned(lay: Layout, left: float) -> bool:
    """Whether the certificate's stage is worth planning for a group of layout ``lay`` with ``left`` seconds
    (the cheap tests; :func:`applies` reads the group)."""
    return left >= CERTIFY_LEAST_SECONDS and len(lay.topics) >= MIXED_LEAST_TOPICS


def applies(instance: ConsumersInstance, lay: Layout) -> Tree | None:
    """The tree's index at the least cross-rack arcs when the certificate reads this group (its rows exist,
    no topic is overloaded), else ``None``."""
    tr = tree(instance, lay, restrict=True)
    if rows(tr) is None or hot_rows(tr) is not None:
        return None
    return tr


def floor_at_q(instance: ConsumersInstance, tr: Tree) -> int:
    """The objective with every member at ``q`` and no flow to meet: the least cross-rack count (times the
    owned partitions and one, as the objective weighs it), then the owned partitions less
    ``Σ_m min(k_m, q)`` (keepable ones, at that count)."""
    owned = len(owners(instance))
    keepable = np.asarray(tr.keep.sum(axis=1)).ravel()
    return (owned + 1) * tr.least + owned - int(np.minimum(keepable, tr.q).sum())


def certified_bound(instance: ConsumersInstance, tr: Tree, until: float) -> tuple[int | None, dict]:
    """A lower bound on every valid assignment's objective, proven by the certificate before ``until`` (a
    ``time.perf_counter()`` instant), or ``None``; and what the stage did, for the result's info."""
    started = time.perf_counter()
    value, _, closed = best_split(coupling(tr), until)
    info: dict = {"certificate_max_min": int(value) if closed else None}
    if not closed:
        info["certificate"] = "the two-level max-min's search did not close in time"
        return None, _timed(info, started)
    done = certify(tr, int(value), until, max_min=value)
    info.update(certificate="proven" if done.proven else f"not proven (ended at: {done.stage})",
                certificate_nodes=done.nodes, certificate_cuts=done.cuts)
    return (floor_at_q(instance, tr) - int(value) if done.proven else None), _timed(info, started)


def _timed(info: dict, started: float) -> dict:
    return dict(info, certificate_seconds=round(time.perf_counter() - started, 3))
