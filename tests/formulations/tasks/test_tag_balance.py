"""``exact.tag_standby`` stage 2 by the level scan, against the single balance MIP it replaces."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from kipopt.datasets import generate
from kipopt.formulations.highs import solve_lexicographic
from kipopt.formulations.tasks import tag_balance, tag_standby
from kipopt.formulations.tasks.rack.model import unique_owners
from kipopt.formulations.tasks.rules import standby_target, tag_standby_levels
from kipopt.methods import SolveOptions
from kipopt.solution import Status

from test_exact_lag_tag import task_instances

FAST = settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def stage2(instance):
    """The grouped stage-2 model of ``instance`` (``None`` when there is nothing to place)."""
    owner_of = unique_owners(instance)
    cindex = {c: j for j, c in enumerate(instance.client_ids)}
    sigma = standby_target(instance)
    stateful = np.array([instance.tasks[t].stateful for t in instance.task_ids])
    if sigma == 0 or not stateful.any():
        return None, None, None
    pr = tag_standby.profiles(instance)
    owner = np.array([cindex[owner_of[t]] for t in instance.task_ids], dtype=np.int64)
    classes = tag_standby.grouped_classes(pr, owner, stateful, sigma)
    capacity = np.array([instance.clients[c].capacity for c in instance.client_ids], dtype=np.int64)
    return tag_standby.build_grouped(pr, classes, capacity), pr, classes


def scan_equals_mip(instance) -> None:
    m, pr, classes = stage2(instance)
    if m is None:
        return
    scan = tag_balance.scan_levels(m, m.capacity, None, None)
    mip = solve_lexicographic(m.lp, [m.lp.cost], None, None, start=m.start)
    assert scan.status == mip.status == "optimal" and scan.stopped is None
    assert scan.values == mip.values == scan.bounds
    standbys = tag_standby.disaggregate(pr, classes, scan.x, m.w_cols, m.y_cols, m.allowed)
    assert standbys is not None
    levels = tag_standby_levels(instance, tag_standby.to_assignment(instance, standbys))
    assert levels.standby_imbalance == scan.values[0]


@FAST
@given(task_instances(max_tasks=30, max_clients=8, max_standbys=3))
def test_the_scan_equals_the_balance_mip(instance):
    scan_equals_mip(instance)


@pytest.mark.parametrize("seed,params", [
    (1, dict(tasks=400, clients=40, tags=2)),
    (2, dict(tasks=300, clients=30, tags=2, num_standby_replicas=2)),
    (3, dict(tasks=500, clients=25, tags=1)),
    (4, dict(tasks=200, clients=60, tags=2, max_capacity=8)),
])
def test_the_scan_equals_the_balance_mip_on_generated_instances(seed, params):
    scan_equals_mip(generate("tasks", seed, **params))


def test_without_the_transport_form_the_full_lp_decides_the_same(monkeypatch):
    x = generate("tasks", 1, tasks=400, clients=40, tags=2)
    m, _, _ = stage2(x)
    assert m.transport is not None
    fast = tag_balance.scan_levels(m, m.capacity, None, None)
    monkeypatch.setattr(tag_balance, "MAX_SINKS", 0)
    slow_model, _, _ = stage2(x)
    assert slow_model.transport is None
    slow = tag_balance.scan_levels(slow_model, slow_model.capacity, None, None)
    assert fast.values == slow.values and fast.status == slow.status == "optimal"


def test_a_larger_instance_is_proven_optimal_below_the_greedy_start():
    """10,000 tasks × 500 clients, two tags: proven optimal, the balance far below the greedy start's."""
    x = generate("tasks", 1, tasks=10_000, clients=500, subtopologies=100, tags=2, stateless_share=0.0)
    r = tag_standby.run_tag_standby(x, SolveOptions())
    assert r.status is Status.OPTIMAL and r.objective == r.bound
    m, _, _ = stage2(x)
    assert r.info["stage_values"][1] < float(m.lp.cost @ m.start)


def test_an_exhausted_scan_answers_the_start_with_the_bound_it_reached():
    x = generate("tasks", 1, tasks=400, clients=40, tags=2)
    m, _, _ = stage2(x)
    stopped = tag_balance.scan_levels(m, m.capacity, 0.0, None)
    assert stopped.status == "feasible" and stopped.stopped == 0
    assert stopped.bounds[0] <= tag_balance.scan_levels(m, m.capacity, None, None).values[0] <= stopped.values[0]
