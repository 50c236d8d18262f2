"""The priced network (``exact.rack_active`` under ``balance_subtopology`` at scale) against its cross-checks.

:mod:`kipopt.formulations.tasks.rack.balance_priced` must reach the optimum of the
per-client network of :mod:`kipopt.formulations.tasks.rack.balance` (and of the
rack-grouped LP, and of networkx on Kafka's own graph) on every instance, and
its placement must keep every count, meet every bound and pass the evaluator
and the rule. Its pricing and its fallback are forced here too, so neither
path goes untested on the instances where the first restricted model happens
to be enough.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from kipopt.datasets import generate
from kipopt.deadline import Deadline
from kipopt.evaluation.tasks import evaluate_tasks
from kipopt.formulations.tasks.rack import balance_priced as rack_balance_priced
from kipopt.formulations.tasks.rack import rules as rack_tasks
from kipopt.formulations.tasks.rack.balance import solve_balance_grouped
from kipopt.formulations.tasks.rack.balance_priced import solve_balance_priced
from kipopt.formulations.highs import solve_lp
from kipopt.instance import from_dict
from kipopt.formulations.tasks.rack.model import (_bounds, active_problem, fair_bounds, kafka_cap, kafka_cap_matrix,
                                            solve_rack_grouped)
from kipopt.methods import SolveOptions, get_method
from kipopt.solution import Status, current_assignment

from rack_instances import active_instances, kafka_caps, networkx_optimum, random_instance, random_instance_dict

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

GENERATED = [dict(seed=s, tasks=t, clients=c, subtopologies=g, racks=r, rackless_clients=rl, new_clients=n,
                  stateless_share=ss, non_overlap_cost=no, traffic_cost=tc)
             for s, t, c, g, r, rl, n, ss, no, tc in [
                 (31, 60, 8, 3, 3, 0.0, 0, 0.0, 1, 10), (32, 200, 25, 10, 3, 0.2, 3, 0.25, 10, 1),
                 (33, 120, 12, 4, 4, 0.0, 2, 0.5, 5, 1), (34, 300, 40, 6, 2, 0.1, 5, 0.0, 0, 3),
                 (35, 90, 9, 9, 5, 0.5, 1, 0.25, 2, 10), (36, 500, 50, 20, 3, 0.0, 0, 0.0, 10, 1),
                 (37, 40, 40, 2, 3, 0.3, 10, 0.0, 1, 0), (38, 1000, 100, 25, 6, 0.05, 10, 0.25, 3, 7),
                 (39, 30, 3, 3, 3, 0.0, 0, 0.0, 10, 1), (40, 400, 20, 40, 3, 0.0, 4, 0.0, 10, 1),
                 (41, 12, 12, 1, 3, 0.0, 6, 1.0, 10, 1), (42, 2000, 200, 50, 3, 0.0, 0, 0.0, 10, 1)]]

TINY = [dict(seed=s, tasks=t, clients=c, racks=r, subtopologies=g, rackless_client=rl)
        for s, t, c, r, g, rl in [
            (1, 1, 1, 1, 1, False), (2, 3, 3, 3, 1, False), (3, 6, 2, 2, 3, False), (4, 5, 7, 3, 2, False),
            (5, 8, 3, 1, 2, True), (6, 9, 4, 3, 3, True), (7, 2, 5, 2, 2, False), (8, 14, 3, 3, 3, False)]]


def check(instance, bounds: str, **solve_args) -> tuple:
    """Priced vs per-client network vs rack-grouped LP on one instance; returns the priced solution."""
    p = active_problem(instance, bounds)
    counts = rack_balance_priced.feasible_counts(p)
    assert np.array_equal(counts.sum(axis=1), p.orig) and np.all(counts >= p.lower) and np.all(counts <= p.upper)
    assert np.array_equal(counts.sum(axis=0), np.bincount(p.group, minlength=len(p.groups)))
    for placement in (rack_balance_priced.repaired_placement(p), rack_balance_priced.feasible_placement(p)):
        if placement is not None:  # the time-limit answers keep every count and bound too
            assert np.array_equal(np.bincount(placement, minlength=p.num_clients), p.orig)
            n = np.zeros((p.num_clients, len(p.groups)), dtype=np.int64)
            np.add.at(n, (placement, p.group), 1)
            assert np.all(n <= p.upper) and np.all(n >= p.lower)
    priced = solve_balance_priced(p, **solve_args)
    network = solve_balance_grouped(p)
    rack = solve_rack_grouped(p)
    assert priced.status == network.status == rack.status == "optimal", (priced.info, network.status)
    assert priced.objective == network.objective == rack.objective == p.cost(priced.placement)
    assert priced.bound == priced.objective
    assert np.array_equal(np.bincount(priced.placement, minlength=p.num_clients), p.orig)
    counts = np.zeros((p.num_clients, len(p.groups)), dtype=np.int64)
    np.add.at(counts, (priced.placement, p.group), 1)
    assert np.all(counts <= p.upper) and np.all(counts >= p.lower)
    rule = "rack_active" if bounds == "kafka" else "balanced_subtopology"
    assignment = rack_tasks.placement_assignment(instance, p, priced.placement)
    assert evaluate_tasks(instance, assignment).feasible
    assert rack_tasks.RULE_VIOLATIONS[rule](instance, assignment) == []
    assert rack_tasks.active_objective(instance, assignment) == priced.objective
    return p, priced


@pytest.mark.parametrize("bounds", ["kafka", "fair"])
@pytest.mark.parametrize("params", GENERATED, ids=lambda p: f"seed{p['seed']}")
def test_priced_equals_per_client_network_on_generated(params, bounds):
    params = dict(params)
    seed = params.pop("seed")
    _, priced = check(generate("tasks", seed, strategy="balance_subtopology", **params), bounds)
    assert priced.info["model"] == "balance-priced"


@pytest.mark.parametrize("bounds", ["kafka", "fair"])
@pytest.mark.parametrize("params", TINY, ids=lambda p: f"tiny{p['seed']}")
def test_priced_on_tiny_edge_cases(params, bounds):
    """One task, one client, clients without tasks (cap 0), a rack-less client, one rack, more clients than
    tasks: the same optimum as the cross-checks, and networkx on Kafka's graph agrees under Kafka's caps."""
    params = dict(params)
    instance = random_instance(params.pop("seed"), strategy="balance_subtopology", **params)
    _, priced = check(instance, bounds)
    if bounds == "kafka" and all(c.rack is not None for c in instance.clients.values()):
        assert priced.objective == networkx_optimum(instance, kafka_caps(instance))


LAYOUTS = {  # client racks (None: rack-less), by client index
    "one client per rack": ["r0", "r1", "r2"],
    "unequal racks 1/2/5": ["r0", "r1", "r1", "r2", "r2", "r2", "r2", "r2"],
    "one rack": ["r1"] * 4,
    "two racks, one rack-less client": [None, "r0", "r1", "r1", "r0"],
}


@pytest.mark.parametrize("bounds", ["kafka", "fair"])
@pytest.mark.parametrize("stateless", [False, True])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("seed", range(3))
def test_priced_on_rack_layouts(layout, stateless, bounds, seed):
    """Explicit rack layouts (one client per rack, unequal racks, a single rack, a rack-less client), with
    every third task stateless or none, and some clients without tasks: the same optimum as the
    cross-checks."""
    racks = LAYOUTS[layout]
    d = random_instance_dict(seed, tasks=3 * len(racks), clients=len(racks), racks=3, subtopologies=3,
                             strategy="balance_subtopology")
    for cid, rack in zip(sorted(d["clients"]), racks):
        d["clients"][cid]["rack"] = rack
    if stateless:
        for j, spec in enumerate(d["tasks"].values()):
            if j % 3 == 0:
                spec["stateful"], spec["changelogs"] = False, []
    idle = sorted(d["clients"])[-1]  # its tasks go to the first client: a client with nothing (cap 0)
    d["clients"][sorted(d["clients"])[0]]["active"] += d["clients"][idle]["active"]
    d["clients"][idle]["active"] = []
    check(from_dict(d), bounds)


@SETTINGS
@given(active_instances(max_tasks=18, max_clients=7, strategies=("balance_subtopology",)))
def test_priced_equals_networkx_on_kafkas_graph(instance):
    """Hypothesis sweep: the priced optimum is networkx's min-cost flow on Kafka's two-stage graph."""
    _, priced = check(instance, "kafka")
    assert priced.objective == networkx_optimum(instance, kafka_caps(instance))


@pytest.mark.parametrize("seed", [32, 36, 40])
def test_pricing_alone_reaches_the_optimum(seed, monkeypatch):
    """With no arrival arc in the first model (only the artificial routes), pricing must bring in the
    columns the optimum needs."""
    monkeypatch.setattr(rack_balance_priced._PricedNetwork, "_feasible_pairs",
                        lambda self: np.zeros(len(self.direct_c), dtype=bool))
    params = dict(next(p for p in GENERATED if p["seed"] == seed))
    params.pop("seed")
    for bounds in ("kafka", "fair"):
        _, priced = check(generate("tasks", seed, strategy="balance_subtopology", **params), bounds)
        assert priced.info["model"] == "balance-priced"
        assert priced.info["pricing_rounds"] >= 1 and priced.info["priced_columns"] > 0


def test_artificial_flow_falls_back_to_the_per_client_network(monkeypatch):
    """No arrival arcs and no pricing: the restricted optimum uses an artificial route, which is never read
    back; the per-client network answers instead, with the same optimum."""
    monkeypatch.setattr(rack_balance_priced._PricedNetwork, "_feasible_pairs",
                        lambda self: np.zeros(len(self.direct_c), dtype=bool))
    monkeypatch.setattr(rack_balance_priced._PricedNetwork, "price", lambda self, dual: None)
    instance = generate("tasks", 36, tasks=500, clients=50, subtopologies=20, strategy="balance_subtopology")
    _, priced = check(instance, "kafka")
    assert priced.info["priced_fallback"] and priced.info["model"] == "balance-grouped"


@pytest.mark.parametrize("bounds", ["kafka", "fair"])
@pytest.mark.parametrize("params", GENERATED, ids=lambda p: f"seed{p['seed']}")
def test_feasible_counts_meet_every_sum_and_bound(params, bounds):
    params = dict(params)
    p = active_problem(generate("tasks", params.pop("seed"), strategy="balance_subtopology", **params), bounds)
    counts = rack_balance_priced.feasible_counts(p)
    assert np.array_equal(counts.sum(axis=1), p.orig)
    assert np.array_equal(counts.sum(axis=0), np.bincount(p.group, minlength=len(p.groups)))
    assert np.all(counts >= p.lower) and np.all(counts <= p.upper)


@pytest.mark.parametrize("bounds", ["kafka", "fair"])
@pytest.mark.parametrize("params", GENERATED, ids=lambda p: f"seed{p['seed']}")
def test_feasible_placement_meets_the_rule(params, bounds):
    """The time-limit answer when the start breaks the bounds: every count kept, every bound met; the repair
    of the start, when it succeeds, moves only the tasks over a cap."""
    params = dict(params)
    seed = params.pop("seed")
    instance = generate("tasks", seed, strategy="balance_subtopology", **params)
    p = active_problem(instance, bounds)
    rule = "rack_active" if bounds == "kafka" else "balanced_subtopology"
    repaired = rack_balance_priced.repaired_placement(p)
    if bounds == "kafka" and seed in (36, 42):
        assert repaired is not None, "the caps leave room here: moving the tasks over a cap suffices"
    if repaired is not None:  # only the tasks over a cap moved
        over = np.zeros((p.num_clients, len(p.groups)), dtype=np.int64)
        np.add.at(over, (p.owner, p.group), 1)
        assert np.count_nonzero(repaired != p.owner) == np.maximum(over - p.upper, 0).sum()
    for placement in (rack_balance_priced.feasible_placement(p), repaired):
        if placement is None:
            continue
        assignment = rack_tasks.placement_assignment(instance, p, placement)
        assert evaluate_tasks(instance, assignment).feasible
        assert rack_tasks.RULE_VIOLATIONS[rule](instance, assignment) == []


@pytest.mark.parametrize("rule", ["rack_active", "balanced_subtopology"])
def test_expired_deadline_answers_within_the_rule_when_the_start_breaks_it(rule):
    instance = generate("tasks", 36, tasks=500, clients=50, subtopologies=20, strategy="balance_subtopology")
    start = current_assignment(instance)
    assert rack_tasks.RULE_VIOLATIONS[rule](instance, start), "the start must break the bounds here"
    method = {"rack_active": "exact.rack_active", "balanced_subtopology": "exact.balanced_subtopology"}[rule]
    result = get_method(method).run(instance, SolveOptions(deadline_at=time.perf_counter() - 1.0))
    assert result.status is Status.FEASIBLE and "built to meet" in result.message
    assert evaluate_tasks(instance, result.assignment).feasible
    assert rack_tasks.RULE_VIOLATIONS[rule](instance, result.assignment) == []
    objective = rack_tasks.active_objective(instance, result.assignment)
    assert result.objective in (None, objective)  # the guard leaves its start's objective to the façade
    assert 0 <= result.bound <= objective


@pytest.mark.parametrize("seed", [32, 38, 42])
def test_first_model_needs_no_artificial_flow(seed):
    """The first restricted model (arcs of one feasible count matrix, from a maximum flow) admits a flow
    of its own: its optimum sends nothing along the artificial routes."""
    params = dict(next(p for p in GENERATED if p["seed"] == seed))
    params.pop("seed")
    p = active_problem(generate("tasks", seed, strategy="balance_subtopology", **params), "kafka")
    net = rack_balance_priced._PricedNetwork(p)
    res = solve_lp(net.build())
    assert res.status == "optimal"
    assert not np.rint(res.x[net.col_art:net.col_art + net.n_art]).any()


class _StopAfterFirstSolve:
    """A deadline that passes between the first solve and its first re-solve (no clock involved)."""

    at = None

    def __init__(self) -> None:
        self.checks = 0

    @property
    def expired(self) -> bool:
        self.checks += 1
        return self.checks > 1

    def limit(self, time_limit=None):
        return time_limit


@pytest.mark.parametrize("seed,bounds", [(38, "kafka"), (38, "fair"), (42, "kafka"), (35, "fair")])
def test_deadline_between_pricing_rounds_answers_with_a_lagrangian_bound(seed, bounds):
    """Stopped after one restricted solve whose pricing found columns: a feasible placement and a bound
    (restricted optimum plus the found columns' reduced costs times their caps) around the true optimum."""
    params = dict(next(p for p in GENERATED if p["seed"] == seed))
    params.pop("seed")
    p = active_problem(generate("tasks", seed, strategy="balance_subtopology", **params), bounds)
    optimum = solve_balance_grouped(p).objective
    sol = solve_balance_priced(p, _StopAfterFirstSolve())
    assert sol.status == "feasible" and sol.bound is not None
    assert sol.bound <= optimum <= sol.objective == p.cost(sol.placement)
    counts = np.zeros((p.num_clients, len(p.groups)), dtype=np.int64)
    np.add.at(counts, (sol.placement, p.group), 1)
    assert np.all(counts <= p.upper) and np.all(counts >= p.lower)
    assert np.array_equal(np.bincount(sol.placement, minlength=p.num_clients), p.orig)


def test_expired_deadline_returns_no_placement():
    instance = generate("tasks", 33, tasks=120, clients=12, subtopologies=4, strategy="balance_subtopology")
    sol = solve_balance_priced(active_problem(instance, "kafka"), Deadline.after(-1.0))
    assert sol.placement is None and sol.status == "time_limit"


def test_priced_network_and_auto_read_back_deterministically():
    """The priced network (``model="balance"``) and the automatic choice (the relaxed model first) each give
    the same placement twice, at the per-client network's optimum."""
    instance = generate("tasks", 36, tasks=500, clients=50, subtopologies=20, strategy="balance_subtopology")
    p1, a = rack_tasks.solve_active(instance, model="balance")
    _, b = rack_tasks.solve_active(instance, model="balance")
    assert a.info["model"] == "balance-priced" and np.array_equal(a.placement, b.placement)
    _, network = rack_tasks.solve_active(instance, model="network")
    assert network.info["model"] == "balance-grouped" and network.objective == a.objective
    _, auto = rack_tasks.solve_active(instance)
    _, again = rack_tasks.solve_active(instance)
    assert auto.status == "optimal" and auto.objective == a.objective and np.array_equal(auto.placement,
                                                                                        again.placement)


def test_vectorised_bounds_equal_the_scalar_definitions():
    """Kafka's caps in numpy doubles equal :func:`kafka_cap` (Java's double order) on every triple with
    T < 120, including the 229 where the product lands just above an integer; the fair bounds equal
    :func:`fair_bounds`."""
    mismatches = 0
    for total in range(1, 120):
        orig, sizes = np.arange(total + 1), np.arange(total + 1)
        caps = kafka_cap_matrix(orig, total, sizes)
        lower, upper = _bounds("fair", orig, sizes, total)
        for o in range(total + 1):
            mismatches += sum(int(caps[o, n]) != kafka_cap(o, total, n) for n in range(total + 1))
            mismatches += sum((int(lower[o, n]), int(upper[o, n])) != fair_bounds(o, total, n)
                              for n in range(total + 1))
    assert mismatches == 0
    assert kafka_cap_matrix(np.array([7]), 25, np.array([25]))[0, 0] == 8  # 7.000000000000001 in doubles
