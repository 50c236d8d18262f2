"""The relaxed network over task groups and capped-pair profiles (``exact.rack_active`` under
``balance_subtopology`` and ``exact.balanced_subtopology`` at scale) against the per-client models.

Its optimum must never exceed the rule's optimum (the priced per-client network's, networkx's on Kafka's
graph, brute force on tiny instances); when it answers ``optimal`` its placement must cost exactly that
optimum, keep every count, meet every bound and pass the evaluator and the rule; and ``solve_active``'s
automatic choice, which falls back to the priced network where the read-back misses the bound, must reach
the per-client optimum on every instance.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from kipopt.datasets import generate
from kipopt.evaluation.tasks import evaluate_tasks
from kipopt.formulations.tasks.rack import balance_relaxed
from kipopt.formulations.tasks.rack import rules as rack_tasks
from kipopt.formulations.tasks.rack.balance_priced import solve_balance_priced
from kipopt.formulations.tasks.rack.balance_relaxed import meets_bounds, solve_balance_relaxed
from kipopt.formulations.tasks.rack.model import active_problem

from rack_instances import active_instances, kafka_caps, networkx_optimum, random_instance

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# (seed, tasks, clients, sub-topologies): small ones where the read-back often misses its bound, and the
# benchmark's shape scaled down (many sub-topologies, caps of one task), where it meets it
SHAPES = [(1, 60, 8, 3), (2, 200, 25, 10), (4, 1000, 100, 25), (5, 2000, 200, 50), (6, 2000, 100, 200),
          (8, 300, 40, 6), (10, 3000, 150, 300), (11, 4000, 200, 400)]


def instance(seed: int, tasks: int, clients: int, subtopologies: int):
    return generate("tasks", seed, tasks=tasks, clients=clients, subtopologies=subtopologies,
                    strategy="balance_subtopology")


def check_relaxed(x, bounds: str):
    """The relaxed answer against the priced per-client network; returns both."""
    p = active_problem(x, bounds)
    relaxed = solve_balance_relaxed(p)
    exact = solve_balance_priced(p)
    assert exact.status == "optimal"
    assert relaxed.bound is not None and relaxed.bound <= exact.objective, "not a lower bound"
    if relaxed.status == "optimal":
        assert relaxed.objective == relaxed.bound == exact.objective == p.cost(relaxed.placement)
        assert meets_bounds(p, relaxed.placement)
        assignment = rack_tasks.placement_assignment(x, p, relaxed.placement)
        rule = "rack_active" if bounds == "kafka" else "balanced_subtopology"
        assert evaluate_tasks(x, assignment).feasible
        assert rack_tasks.RULE_VIOLATIONS[rule](x, assignment) == []
        assert rack_tasks.active_objective(x, assignment) == exact.objective
    else:
        assert relaxed.status == "not_dealt" and relaxed.placement is None
    return p, relaxed, exact


@pytest.mark.parametrize("bounds", ["kafka", "fair"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"seed{s[0]}")
def test_relaxed_is_a_bound_and_exact_when_dealt(shape, bounds):
    check_relaxed(instance(*shape), bounds)


def test_relaxed_meets_its_bound_at_the_benchmarks_shape():
    """Many sub-topologies and caps of one task (the limits benchmark's shape, scaled down): the read-back
    meets the bound, so the relaxed model alone proves optimality, with a model whose size does not grow
    with the clients or the sub-topologies."""
    dealt = 0
    for seed, tasks, clients, subtopologies in [(5, 2000, 200, 50), (6, 2000, 100, 200), (10, 3000, 150, 300),
                                                (11, 4000, 200, 400)]:
        p, relaxed, _ = check_relaxed(instance(seed, tasks, clients, subtopologies), "kafka")
        dealt += relaxed.status == "optimal"
        vectors = len(np.unique(p.traffic, axis=0))
        R, F = len(p.racks), relaxed.info["capped_classes"]
        assert relaxed.info["columns"] <= vectors * R * R + F * vectors * (R + 1) + F
    assert dealt == 4


def test_columns_follow_the_classes_not_the_clients():
    """Ten times the clients and sub-topologies, the same racks and traffic vectors: the relaxed model's
    task groups do not grow (its capped-pair profiles are bounded by the vectors' counts, not the pairs)."""
    small = active_problem(instance(21, 2000, 100, 100), "kafka")
    large = active_problem(instance(21, 20000, 1000, 1000), "kafka")
    a, b = balance_relaxed._Relaxed(small), balance_relaxed._Relaxed(large)
    assert a.K == b.K <= len(np.unique(large.traffic, axis=0)) * len(large.racks)  # 18 here
    assert b.build().num_col < 1.5 * a.build().num_col  # 617 and 648 columns here
    assert b.F < len(b.over_pairs) and len(b.over_pairs) > len(a.over_pairs)  # 66 profiles of 385 capped pairs


@pytest.mark.parametrize("bounds", ["kafka", "fair"])
@pytest.mark.parametrize("shape", SHAPES[:5], ids=lambda s: f"seed{s[0]}")
def test_auto_model_is_exact_with_or_without_the_fallback(shape, bounds):
    """``solve_active`` above the PuLP size: the relaxed answer when dealt, else the priced network's with
    the relaxed bound; optimal and equal to the per-client optimum either way."""
    x = instance(*shape)
    rule = "rack_active" if bounds == "kafka" else "balanced_subtopology"
    p, sol = rack_tasks.solve_active(x, rule, model="relaxed")
    exact = solve_balance_priced(p)
    assert sol.status == "optimal" and sol.objective == sol.bound == exact.objective
    assert meets_bounds(p, sol.placement)
    if sol.info["model"] != "balance-relaxed":
        assert sol.info["relaxed_fallback"] and sol.info["relaxed_info"]["dealt"] is False


def test_greedy_deal_stuck_goes_to_the_exact_deal(monkeypatch):
    """The greedy dealing never failing on the benchmark shape would leave the exact dealing untested: with
    the greedy forced to fail, the transportation deal must reach the same optimum."""
    monkeypatch.setattr(balance_relaxed, "_deal", lambda *args: False)
    p, relaxed, exact = check_relaxed(instance(6, 2000, 100, 200), "kafka")
    assert relaxed.status == "optimal"


def test_capped_pairs_keep_at_most_their_cap():
    """A client owning three tasks of one sub-topology under a cap of one keeps at most one of them; its
    pair's class is dealt by the rotation (each pair keeps floor or ceil of the class's kept units)."""
    x = instance(6, 2000, 100, 200)
    p = active_problem(x, "kafka")
    net = balance_relaxed._Relaxed(p)
    assert net.F > 0 and len(net.over_pairs) > net.F  # some profiles hold several pairs
    relaxed = solve_balance_relaxed(p)
    assert relaxed.status == "optimal"
    counts = np.zeros((p.num_clients, len(p.groups)), dtype=np.int64)
    stay = relaxed.placement == p.owner
    np.add.at(counts, (p.owner[stay], p.group[stay]), 1)
    assert np.all(counts <= p.upper)


def brute_force(p) -> int | None:
    """The rule's optimum by enumeration: every placement keeping each count and meeting every bound."""
    best = None
    for placement in itertools.product(range(p.num_clients), repeat=p.num_tasks):
        placement = np.array(placement, dtype=np.int64)
        if meets_bounds(p, placement):
            cost = p.cost(placement)
            best = cost if best is None else min(best, cost)
    return best


@pytest.mark.parametrize("bounds", ["kafka", "fair"])
@pytest.mark.parametrize("seed", range(8))
def test_tiny_instances_against_brute_force(seed, bounds):
    x = random_instance(seed, tasks=6, clients=3, racks=3, subtopologies=2, strategy="balance_subtopology")
    p = active_problem(x, bounds)
    best = brute_force(p)
    relaxed = solve_balance_relaxed(p)
    assert relaxed.bound <= best
    if relaxed.status == "optimal":
        assert relaxed.objective == best
    _, sol = rack_tasks.solve_active(x, "rack_active" if bounds == "kafka" else "balanced_subtopology",
                                     model="relaxed")
    assert sol.status == "optimal" and sol.objective == best


@SETTINGS
@given(active_instances(max_tasks=18, max_clients=7, strategies=("balance_subtopology",)))
def test_relaxed_against_networkx_on_kafkas_graph(x):
    """Hypothesis sweep: the relaxed optimum never exceeds networkx's min-cost flow on Kafka's graph, and the
    automatic model (relaxed, else priced) reaches it."""
    p = active_problem(x, "kafka")
    best = networkx_optimum(x, kafka_caps(x))
    relaxed = solve_balance_relaxed(p)
    assert relaxed.bound <= best
    if relaxed.status == "optimal":
        assert relaxed.objective == best and meets_bounds(p, relaxed.placement)
    _, sol = rack_tasks.solve_active(x, "rack_active", model="relaxed")
    assert sol.status == "optimal" and sol.objective == best


@pytest.mark.parametrize("method", ["exact.rack_active", "exact.balanced_subtopology"])
def test_solve_under_a_time_limit_proves_optimality(method):
    """End to end through :func:`kipopt.solve` with a limit (the guarded child): the benchmark's shape
    scaled down answers ``optimal`` with bound = objective from the relaxed model, the evaluator finds no
    broken rule, and the objective is the priced per-client network's."""
    from kipopt.api import solve
    from kipopt.solution import Status

    x = instance(11, 4000, 200, 400)
    s = solve(x, method, time_limit=60)
    assert s.status is Status.OPTIMAL and s.bound == s.objective and s.metrics["violations"] == []
    assert s.metrics["model"] == "balance-relaxed"
    bounds = "kafka" if method == "exact.rack_active" else "fair"
    assert s.objective == solve_balance_priced(active_problem(x, bounds)).objective


EDGES = {"rack-less clients, stateless tasks, new clients": dict(rackless_clients=0.2, stateless_share=0.25,
                                                                   new_clients=10),
         "six racks, moves dearer than traffic": dict(racks=6, non_overlap_cost=10, traffic_cost=1),
         "two racks, moves free": dict(racks=2, non_overlap_cost=0, traffic_cost=3),
         "one rack": dict(racks=1)}


@pytest.mark.parametrize("bounds", ["kafka", "fair"])
@pytest.mark.parametrize("edge", list(EDGES))
def test_relaxed_on_edge_shapes(edge, bounds):
    """Rack-less clients (a rack without traffic), stateless tasks (no traffic vector), clients without
    tasks, many racks, free moves, a single rack: a bound, and exact when dealt."""
    x = generate("tasks", 3, tasks=2000, clients=100, subtopologies=100, strategy="balance_subtopology",
                 **EDGES[edge])
    check_relaxed(x, bounds)
