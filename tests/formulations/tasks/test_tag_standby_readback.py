"""``exact.tag_standby``'s heap-based greedy start and read-back give what the plain sorts they replace give."""

from __future__ import annotations

import numpy as np
import pytest

from kipopt.datasets import generate
from kipopt.formulations.tasks import tag_standby as ts
from kipopt.formulations.tasks import tag_balance
from kipopt.formulations.tasks.rack.model import unique_owners
from kipopt.formulations.tasks.rules import standby_target


def reference_start(pr, cl, capacity, num_col, w_cols, y_cols, allowed, U, L):
    """Each copy on the least loaded allowed client of its profile, by a sort of those clients every time."""
    x = np.zeros(num_col)
    load = np.zeros(len(capacity), dtype=np.int64)
    for tasks, opts, w, y, clients in zip(cl.tasks, cl.options, w_cols, y_cols, allowed):
        x[w[0]] = len(tasks)
        for _ in tasks:
            for p in np.nonzero(opts[0])[0]:
                here = np.nonzero(pr.of[clients] == p)[0]
                order = here[np.lexsort((clients[here], load[clients[here]] / capacity[clients[here]]))]
                for j in order[:opts[0][p]]:
                    x[y[j]] += 1
                    load[clients[j]] += 1
    x[U] = np.max(-(-load // capacity))
    x[L] = np.min(load // capacity)
    return x


def reference_disaggregate(pr, cl, x, w_cols, y_cols, allowed):
    out = {}
    for tasks, opts, w, y, clients in zip(cl.tasks, cl.options, w_cols, y_cols, allowed):
        counts = np.rint(x[w]).astype(np.int64)
        chosen = [o for o, n in zip(opts, counts) for _ in range(n)]
        supply = dict(zip(clients.tolist(), np.rint(x[y]).astype(np.int64).tolist()))
        for t in tasks:
            out[t] = []
        for p in sorted({int(p) for o in opts for p in np.nonzero(o)[0]}):
            here = [c for c in clients.tolist() if pr.of[c] == p]
            demand = sorted(((int(o[p]), t) for t, o in zip(tasks, chosen) if o[p] > 0), key=lambda d: -d[0])
            for need, t in demand:
                best = sorted(here, key=lambda c: (-supply[c], c))[:need]
                if len(best) < need or supply[best[-1]] <= 0:
                    return None
                for c in best:
                    supply[c] -= 1
                out[t].extend(best)
        if any(v != 0 for v in supply.values()):
            return None
    return out


def grouped(seed: int, **params):
    x = generate("tasks", seed, **params)
    owner_of = unique_owners(x)
    cindex = {c: j for j, c in enumerate(x.client_ids)}
    stateful = np.array([x.tasks[t].stateful for t in x.task_ids])
    pr = ts.profiles(x)
    owner = np.array([cindex[owner_of[t]] for t in x.task_ids], dtype=np.int64)
    classes = ts.grouped_classes(pr, owner, stateful, standby_target(x))
    capacity = np.array([x.clients[c].capacity for c in x.client_ids], dtype=np.int64)
    return pr, classes, capacity


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("params", [dict(tasks=300, clients=30), dict(tasks=600, clients=40, num_standby_replicas=2),
                                    dict(tasks=400, clients=25, num_standby_replicas=3)])
def test_heap_start_and_read_back_equal_the_sorts(seed, params):
    pr, classes, capacity = grouped(seed, **params)
    assert classes is not None
    res, w, y, allowed, lp = ts.solve_grouped(pr, classes, capacity, None, None)
    U, L = lp.num_col - 2, lp.num_col - 1
    start = tag_balance.greedy_start(pr, classes, capacity, lp.num_col, w, y, allowed, U, L)
    assert np.array_equal(start, reference_start(pr, classes, capacity, lp.num_col, w, y, allowed, U, L))
    for x in (res.x, start):  # the optimum's counts, and the start's (another split of the same classes)
        assert ts.disaggregate(pr, classes, x, w, y, allowed) == reference_disaggregate(pr, classes, x, w, y, allowed)


def test_an_impossible_split_is_refused_by_both():
    pr, classes, capacity = grouped(1, tasks=300, clients=30)
    res, w, y, allowed, lp = ts.solve_grouped(pr, classes, capacity, None, None)
    x = res.x.copy()
    first = y[0]
    x[first[0]] += 5  # one client promised more copies than its class has
    assert ts.disaggregate(pr, classes, x, w, y, allowed) is None
    assert reference_disaggregate(pr, classes, x, w, y, allowed) is None
