"""``exact.rack_standby``'s class model against the task-level grouped and the client-level models."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipopt.api import solve
from kipopt.datasets import generate
from kipopt.formulations.tasks.rack import standby_grouped as G
from kipopt.formulations.tasks.rack.standby_model import solve_standby
from kipopt.formulations.tasks.rack.standby_start import dominating_start
from kipopt.formulations.tasks.rack.rules import run_rack_standby, standby_objective
from kipopt.instance import from_dict
from kipopt.methods import SolveOptions, rules
from kipopt.solution import Status, TaskRoles

from rack_instances import standby_instances, tagged_standby_instances

SWEEP = settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def agree(instance) -> dict:
    """The three models optimal with one objective; the class model's answer breaks no rule. Returns its info."""
    grouped = run_rack_standby(instance, SolveOptions())
    tasks = run_rack_standby(instance, SolveOptions(), model="tasks")
    clients = run_rack_standby(instance, SolveOptions(), model="clients")
    assert {grouped.status, tasks.status, clients.status} == {Status.OPTIMAL}
    assert grouped.objective == tasks.objective == clients.objective == grouped.bound
    for r in (grouped, tasks):
        assert rules()["rack_standby"].violations(instance, r.assignment) == []
    assert tasks.info["model"] == "standby-grouped"
    return grouped.info


@SWEEP
@given(st.one_of(standby_instances(max_tasks=12, max_clients=6), tagged_standby_instances(max_tasks=8, max_clients=6)))
def test_grouped_equals_client_level_on_small_instances(instance):
    agree(instance)


@pytest.mark.parametrize("seed,params", [
    (1, dict(tasks=60, clients=9, num_standby_replicas=1)),
    (2, dict(tasks=60, clients=9, num_standby_replicas=2)),
    (3, dict(tasks=80, clients=12, num_standby_replicas=2, tags=2)),
    (4, dict(tasks=40, clients=6, num_standby_replicas=1, racks=2, tags=0)),
    (5, dict(tasks=100, clients=20, num_standby_replicas=3, tags=2)),
    (6, dict(tasks=30, clients=4, num_standby_replicas=2, racks=1)),
])
def test_grouped_equals_client_level_on_generated_instances(seed, params):
    info = agree(generate("tasks", seed, **params))
    assert info["model"] == "standby-classes"


def test_one_copy_tasks_need_no_covering_rows():
    """With one standby per task, tag distinctness is a filter on columns: a transportation LP, no ILP."""
    x = generate("tasks", 7, tasks=200, clients=30, num_standby_replicas=1, tags=2)
    assert x.config.rack_aware_assignment_tags
    r = run_rack_standby(x, SolveOptions())
    assert r.info["tag_rows"] == 0 and r.info["ilp"] is False
    full = run_rack_standby(x, SolveOptions(), model="clients")
    assert full.info["tag_rows"] > 0 and full.objective == r.objective


def test_model_size_follows_groups_not_clients():
    """Tenfold the clients in the same racks: the columns stay within tasks × groups × 2."""
    small, large = (generate("tasks", 9, tasks=300, clients=n, num_standby_replicas=1, tags=0) for n in (30, 300))
    sizes = [G.grouped_standby(x).problem for x in (small, large)]
    for p in sizes:
        assert p.num_edges <= 2 * len(p.tasks) * len(p.clients)
    assert len(sizes[0].clients) == len(sizes[1].clients) == 3


def test_disaggregation_meets_counts_and_keeps_old_hosts():
    """Read-back: every client's count, distinct clients, no active host, kept copies on old hosts."""
    x = generate("tasks", 11, tasks=200, clients=25, num_standby_replicas=2, tags=0)
    m = G.grouped_standby(x)
    sol = solve_standby(m.problem)
    placed = G.disaggregate(m, sol.chosen).standby
    assert placed is not None
    tasks, clients = x.task_ids, x.client_ids
    assert [len(s) for s in placed] == [len(x.clients[c].standby) for c in clients]
    copies = Counter(t for s in placed for t in s)
    assert all(copies[i] == sum(t in x.clients[c].standby for c in clients) for i, t in enumerate(tasks))
    for c, s in zip(clients, placed):
        assert len(set(s)) == len(s) and not {tasks[t] for t in s} & set(x.clients[c].active)
    kept_units = int(sol.chosen[:m.num_kept].sum())
    kept_on_old = sum(tasks[t] in x.clients[c].standby for c, s in zip(clients, placed) for t in s)
    assert kept_on_old == kept_units


def one_rack(clients: dict) -> dict:
    tasks = {f"0_{i}": {"inputs": [f"in-{i}"], "changelogs": [f"cl-{i}"]} for i in range(4)}
    return {"format": 1, "family": "tasks", "topics": {"in": {"racks": [["a"]] * 4}, "cl": {"racks": [["b"]] * 4}},
            "tasks": tasks, "clients": clients, "config": {"num_standby_replicas": 1}}


def test_tight_group_is_read_back():
    """Every task has exactly one client it may move to; the read-back still finds the placement."""
    x = from_dict(one_rack({"c0": {"rack": "a", "active": ["0_0", "0_1"], "standby": ["0_2", "0_3"]},
                            "c1": {"rack": "a", "active": ["0_2"], "standby": ["0_0"]},
                            "c2": {"rack": "a", "active": ["0_3"], "standby": ["0_1"]}}))
    assert agree(x)["model"] == "standby-classes"


def test_swap_repairs_a_stuck_fill():
    """0_0 is filled first and takes c0, the roomiest; 0_1, active on c1, is then left with nothing but c1.

    The fill swaps: 0_0 moves to c1 and 0_1 takes c0, rather than giving up.
    """
    x = from_dict(one_rack({"c0": {"rack": "a"}, "c1": {"rack": "a", "active": ["0_1"]},
                            "c2": {"rack": "a", "active": ["0_0"]},
                            "c3": {"rack": "a", "active": ["0_2", "0_3"], "standby": ["0_0", "0_1"]}}))
    m = G.grouped_standby(x)
    room = np.array([1, 1, 0, 0])
    placed: list[list[int]] = [[] for _ in range(4)]
    hosts: dict[int, set[int]] = {}
    assert G._fill_group(m.active, [0, 1, 2, 3], [(0, 1), (1, 1)], room, placed, hosts) == []
    assert placed == [[1], [0], [], []] and room.tolist() == [0, 0, 0, 0]


def test_a_stuck_group_is_split_and_solved_again():
    """Two clients per rack, one standby per task: tasks active on one client can only use the other.

    The first round's group totals cannot all be read back; the clients left
    with room become groups of their own and the next round is read back, at
    the client-level optimum.
    """
    rounds = Counter()
    for seed in range(12):
        x = generate("tasks", seed, tasks=60, clients=6, num_standby_replicas=1, tags=0)
        info = agree(x)
        rounds[info["rounds"]] += 1
        assert info["groups"] <= 6
    assert rounds[1] and sum(n for r, n in rounds.items() if r > 1)


@pytest.mark.parametrize("seed", range(4))
def test_dominating_start_is_never_below_the_optimum(seed):
    """The network start for multi-copy tagged tasks meets every row of the grouped model's LP."""
    x = generate("tasks", 20 + seed, tasks=80, clients=15, num_standby_replicas=2 + seed % 2, tags=2)
    m = G.grouped_standby(x)
    assert len(m.problem.tags.need_task) > 0
    y0 = dominating_start(m.problem, m.on_held, m.carries, m.covered)
    p = m.problem
    assert np.all(y0 <= p.edge_cap) and np.all(np.bincount(p.edge_task, y0, len(p.tasks)) == p.copies)
    assert np.all(np.bincount(p.edge_client, y0, len(p.clients)) == p.counts)
    covered = np.bincount(p.tags.cover_z, y0[p.tags.cover_edge], p.tags.num_indicators) > 0
    assert np.all(np.bincount(p.tags.pair_task, covered, len(p.tasks))[p.tags.need_task] >= p.tags.need)
    assert p.cost(y0) >= run_rack_standby(x, SolveOptions(), model="clients").objective


@pytest.mark.parametrize("seed", range(4))
def test_the_start_stands_when_the_ilp_finds_nothing(monkeypatch, seed):
    """An ILP that ends without a point (time limit) leaves the network start as the answer, with the LP bound."""
    from kipopt.formulations.tasks.rack import standby_model as M
    from kipopt.formulations.highs import HighsResult

    real = M.solve_lp

    def no_point(lp, integer=False, **kw):
        if integer:
            return HighsResult("time_limit", None, None, None, True, "Time limit reached", "on")
        return real(lp, integer=integer, **kw)

    x = generate("tasks", 20 + seed, tasks=80, clients=15, num_standby_replicas=2 + seed % 2, tags=2)
    best = run_rack_standby(x, SolveOptions(), model="clients")
    monkeypatch.setattr(M, "solve_lp", no_point)
    r = run_rack_standby(x, SolveOptions(), model="tasks")
    assert rules()["rack_standby"].violations(x, r.assignment) == [] and r.info["ilp"] is True
    assert r.status in (Status.FEASIBLE, Status.OPTIMAL) and r.objective >= best.objective
    assert r.bound is not None and r.bound <= best.objective
    assert standby_objective(x, r.assignment) == r.objective


def test_a_time_limited_ilp_runs_in_a_child_after_highs_ran_here():
    """Under a deadline the ILP runs in a forked child; HiGHS has run in this process before, and the child
    must not wait for the parent's pool threads (it did, until the deadline, before the pool was restarted)."""
    x = generate("tasks", 1, tasks=300, clients=30, num_standby_replicas=3)
    free = solve(x, "exact.rack_standby")
    assert free.metrics["ilp"] is True
    limited = solve(x, "exact.rack_standby", time_limit=60)
    assert limited.status is Status.OPTIMAL and limited.objective == free.objective
