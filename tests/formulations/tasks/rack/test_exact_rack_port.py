"""The ports of ``RackAwareTaskAssignor`` against the exact models of the same problems.

Kafka's cycle canceling is exact for the graph it builds, so on instances
where rack awareness is on, ``kafka.rack_active`` must cost exactly the
optimum of ``exact.rack_active`` (min_traffic and balance_subtopology
alike). ``kafka.rack_standby`` is a pairwise local search that only makes
moves Kafka's tag-aware predicate allows, so it never breaks the
``rack_standby`` rule (tag distinctness included) and never goes below the
exact optimum.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipopt.api import solve
from kipopt.instance import load_instance
from kipopt.methods import methods, rules
from kipopt.solution import Status

from rack_instances import active_instances, networkx_optimum, random_instance, standby_instances

DATA = Path(__file__).parent / "data"
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
GENERATED = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(autouse=True)
def _port_registered():
    if "kafka.rack_active" not in methods():
        pytest.skip("kafka.rack_active is not registered yet")


@SETTINGS
@given(active_instances(max_tasks=20, max_clients=6, strategies=("min_traffic",)))
def test_port_min_traffic_is_optimal(instance):
    """MinTraffic: the port's cost is the exact optimum (and networkx's), and the port keeps every count."""
    port, exact = solve(instance, "kafka.rack_active"), solve(instance, "exact.rack_active")
    assert port.metrics["violations"] == [] and exact.status is Status.OPTIMAL
    assert port.objective == exact.objective == networkx_optimum(instance, None)


@SETTINGS
@given(active_instances(max_tasks=20, max_clients=6, strategies=("balance_subtopology",)))
def test_port_balance_subtopology_is_optimal_for_kafka_caps(instance):
    """BalanceSubtopology: the port's cost is the optimum under Kafka's ceil caps, and at most the
    fair-share optimum (the fair polytope lies inside Kafka's)."""
    port = solve(instance, "kafka.rack_active")
    assert port.metrics["violations"] == []
    assert port.objective == solve(instance, "exact.rack_active").objective
    assert port.objective <= solve(instance, "exact.balanced_subtopology").objective


@pytest.mark.parametrize("seed", range(4))
def test_port_medium_instances(seed):
    """A few 120-task instances (both strategies): port == exact."""
    instance = random_instance(seed, tasks=120, clients=12, subtopologies=4,
                               strategy=("min_traffic", "balance_subtopology")[seed % 2], inputs=2)
    assert solve(instance, "kafka.rack_active").objective == solve(instance, "exact.rack_active").objective


def test_regression_floor():
    """kip925_balance_floor.json: Kafka's caps are ceilings only.

    Client c2 holds 4 of the 7 tasks, so its fair share of sub-topology 1
    (2 tasks) is 8/7: floor 1, ceil 2. It holds none of them and nothing is
    cross-rack, so Kafka (and exact.rack_active) keep the assignment at cost
    0, while exact.balanced_subtopology must move two tasks (cost 2).
    """
    instance = load_instance(str(DATA / "kip925_balance_floor.json"))
    port = solve(instance, "kafka.rack_active")
    fair = solve(instance, "exact.balanced_subtopology")
    assert port.objective == solve(instance, "exact.rack_active").objective == 0
    assert fair.objective == 2 and fair.status is Status.OPTIMAL
    assert rules()["balanced_subtopology"].violations(instance, port.assignment)


def test_regression_float_cap():
    """kip925_balance_float_cap.json: Kafka's cap computed in doubles is one too high.

    c0 holds 14 of 50 tasks; each sub-topology has 25. Kafka's cap is
    ceil((14 * 1.0 / 50) * 25) = ceil(7.000000000000001) = 8, the exact share
    is 7. Sub-topology 0 reads rack a (c0's rack), so Kafka moves an eighth
    task of it to c0 (traffic 230 + 2 moves = 232); the fair model keeps
    7 + 7 (cost 250).
    """
    instance = load_instance(str(DATA / "kip925_balance_float_cap.json"))
    assert solve(instance, "kafka.rack_active").objective == solve(instance, "exact.rack_active").objective == 232
    assert solve(instance, "exact.balanced_subtopology").objective == 250


def test_regression_files_are_valid_json():
    """The regression files are canonical instances (kept readable for other projects)."""
    for path in DATA.glob("kip925_*.json"):
        assert json.loads(path.read_text())["family"] == "tasks"


@SETTINGS
@given(standby_instances(max_tasks=8, max_clients=6))
def test_port_standby_never_below_exact(instance):
    """Pairwise swaps (with and without tags) keep every rule and never beat the exact standby optimum."""
    port, exact = solve(instance, "kafka.rack_standby"), solve(instance, "exact.rack_standby")
    assert exact.status is Status.OPTIMAL
    assert port.metrics["violations"] == []
    assert port.objective >= exact.objective


@GENERATED
@given(seed=st.integers(0, 2**31 - 1), tags=st.integers(1, 4), tasks=st.integers(4, 30),
       clients=st.integers(2, 8), tag_values=st.integers(1, 3))
def test_port_standby_generated_with_tags(seed, tags, tasks, clients, tag_values):
    """kipopt.datasets instances with tags: the port never breaks the rule, the exact model is never
    infeasible, and exact <= port."""
    datasets = pytest.importorskip("kipopt.datasets")
    instance = datasets.generate("tasks", seed, tags=tags, num_standby_replicas=1, current_standbys=1,
                                 tasks=tasks, clients=clients, tag_values=tag_values)
    port, exact = solve(instance, "kafka.rack_standby"), solve(instance, "exact.rack_standby")
    assert port.metrics["violations"] == []
    assert exact.status is Status.OPTIMAL and exact.metrics["violations"] == []
    assert exact.objective <= port.objective


def test_rackless_client_port_not_better():
    """One rack-less client switches Kafka's rack awareness off; the exact model still optimises."""
    instance = random_instance(3, tasks=30, clients=5, rackless_client=True)
    port, exact = solve(instance, "kafka.rack_active"), solve(instance, "exact.rack_active")
    assert port.objective >= exact.objective and exact.status is Status.OPTIMAL


@pytest.mark.parametrize("seed", range(6))
def test_port_generated_instances(seed):
    """kipopt.datasets instances (tags, standbys, capacities): port == exact under both strategies."""
    datasets = pytest.importorskip("kipopt.datasets")
    instance = datasets.generate("tasks", 100 + seed, tasks=40, clients=7, subtopologies=3, replication_factor=1,
                                 strategy=("min_traffic", "balance_subtopology")[seed % 2])
    port, exact = solve(instance, "kafka.rack_active"), solve(instance, "exact.rack_active")
    assert exact.status is Status.OPTIMAL and exact.metrics["violations"] == []
    assert port.objective == exact.objective
    assert not rules()["rack_active"].violations(instance, port.assignment)
