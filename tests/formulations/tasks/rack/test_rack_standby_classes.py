"""``exact.rack_standby``'s class model (task classes × client groups): same optimum, size free of the tasks."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipopt.datasets import generate
from kipopt.formulations.tasks.rack import standby_classes as S
from kipopt.formulations.tasks.rack.rules import run_rack_standby
from kipopt.instance import from_dict, to_dict
from kipopt.methods import SolveOptions, rules
from kipopt.solution import Status

from rack_instances import standby_instances, tagged_standby_instances

SWEEP = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def optimal_three_ways(x) -> dict:
    """Class, task-level grouped and client-level models optimal with one objective; the class answer legal."""
    found = {m: run_rack_standby(x, SolveOptions(), model=m) for m in ("grouped", "tasks", "clients")}
    assert {r.status for r in found.values()} == {Status.OPTIMAL}
    assert len({r.objective for r in found.values()}) == 1 and found["grouped"].bound == found["grouped"].objective
    assert rules()["rack_standby"].violations(x, found["grouped"].assignment) == []
    return found["grouped"].info


@pytest.mark.parametrize("seed,standbys", [(2, 3), (4, 2), (9, 3), (10, 2), (0, 2), (5, 3)])
def test_classes_with_tags_equal_the_finer_models(seed, standbys):
    """Tagged, several copies: pattern classes; some of these vertices are fractional (the rounding MIP runs)."""
    x = generate("tasks", seed, tasks=120, clients=12, num_standby_replicas=standbys, tags=2)
    info = optimal_three_ways(x)
    assert info["model"] == "standby-classes" and info["pattern_classes"] > 0


def test_the_fractional_vertex_is_rounded_by_a_small_mip():
    x = generate("tasks", 4, tasks=120, clients=12, num_standby_replicas=2, tags=2)
    info = optimal_three_ways(x)
    assert info["ilp"] is True and "full_ilp" not in info


def test_without_the_rounding_the_full_mip_answers(monkeypatch):
    x = generate("tasks", 4, tasks=120, clients=12, num_standby_replicas=2, tags=2)
    monkeypatch.setattr(S, "round_fractional", lambda *a: None)
    info = optimal_three_ways(x)
    assert info["full_ilp"] is True


def test_too_many_patterns_falls_back_to_the_task_level_model(monkeypatch):
    x = generate("tasks", 4, tasks=60, clients=12, num_standby_replicas=2, tags=2)
    monkeypatch.setattr(S, "MAX_PATTERNS", 0)
    assert S.class_model(x) is None
    assert optimal_three_ways(x)["model"] == "standby-grouped"


def twice(x):
    """The instance with every task doubled: a copy reading the same partitions, active and standby on the same
    clients as the original (every class twice as large, no new class)."""
    d = to_dict(x)

    def copy(tid: str) -> str:
        sub, part = tid.split("_")
        return f"{sub}_{int(part) + 1_000_000}"

    for tid in list(d["tasks"]):
        d["tasks"][copy(tid)] = dict(d["tasks"][tid])
    for c in d["clients"].values():
        for role in ("active", "standby"):
            c[role] = c.get(role, []) + [copy(t) for t in c.get(role, [])]
        c["lags"] = {**c.get("lags", {}), **{copy(t): v for t, v in c.get("lags", {}).items()}}
    return from_dict(d)


@pytest.mark.parametrize("standbys", [1, 2])
def test_the_model_does_not_grow_with_the_tasks(standbys):
    x = generate("tasks", 3, tasks=200, clients=30, num_standby_replicas=standbys, tags=2)
    small, large = S.class_model(x), S.class_model(twice(x))
    assert len(large.classes) == len(small.classes)
    sizes = [S.build_class_lp(m)[0] for m in (small, large)]
    assert sizes[0].num_col == sizes[1].num_col and sizes[0].num_row == sizes[1].num_row
    assert sum(len(k.tasks) for k in large.classes) == 2 * sum(len(k.tasks) for k in small.classes)
    one, two = (run_rack_standby(y, SolveOptions()) for y in (x, twice(x)))
    assert two.status is Status.OPTIMAL and two.objective == 2 * one.objective


def test_dealing_gives_every_task_its_copies_within_each_cap():
    x = generate("tasks", 11, tasks=300, clients=25, num_standby_replicas=2, tags=0)
    m = S.class_model(x)
    sol, cols = S.solve_classes(m)
    kept, new = S.deal(m, cols, sol.x)
    per_task = Counter()
    for t, g, k, _ in kept:
        per_task[t] += k
    for t, g, k in new:
        per_task[t] += k
    copies = {int(t): k.copies for k in m.classes for t in k.tasks}
    assert dict(per_task) == copies
    caps = {int(t): k for k in m.classes for t in k.tasks}
    assert all(k <= caps[t].held[g] for t, g, k, _ in kept)
    assert all(k <= caps[t].new_cap[g] for t, g, k in new)


@SWEEP
@given(st.one_of(standby_instances(max_tasks=12, max_clients=6), tagged_standby_instances(max_tasks=8, max_clients=6)))
def test_class_model_equals_the_finer_models_on_small_instances(instance):
    optimal_three_ways(instance)


def test_the_start_is_a_feasible_point_of_the_class_lp():
    x = generate("tasks", 9, tasks=120, clients=12, num_standby_replicas=3, tags=2)
    lp, _, x0 = S.build_class_lp(S.class_model(x))
    col = np.repeat(np.arange(lp.num_col), np.diff(lp.start))
    activity = np.bincount(lp.index, weights=lp.value * x0[col], minlength=lp.num_row)
    assert np.all(activity >= lp.row_lower - 1e-9) and np.all(activity <= lp.row_upper + 1e-9)
    assert np.all(x0 <= lp.upper)
