"""The dedicated min-cost flow of ``exact.spread`` against HiGHS' LP of the same network (the path before it)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from kipopt.datasets import generate
from kipopt.formulations.replicas import moves as SM
from kipopt.formulations.replicas.model import Cluster, Model, _integral
from kipopt.formulations.replicas.network import Network, _min_cost_flow, dedicated_solver_available, solve_network
from kipopt.formulations.replicas.spread import _fresh
from kipopt.formulations.replicas.targets import weights_of

pytestmark = pytest.mark.skipif(not dedicated_solver_available(), reason="OR-Tools is not installed")


def both(net: Network, model: Model, presolve: bool = True):
    fast = solve_network(net, model, None, None, presolve)
    lp = solve_network(net, model, None, None, presolve, dedicated=False)
    return fast, lp


def agree(fast, lp) -> None:
    assert (fast.status == "optimal") == (lp.status == "optimal" and _integral(lp.x)), (fast.status, lp.status)
    if fast.status == "optimal":
        assert fast.objective == pytest.approx(lp.objective, abs=1e-6)
        assert _integral(fast.x)


def feasible_flow(net: Network, x: np.ndarray) -> bool:
    """Bounds hold and every node sends out exactly its supply."""
    if (x < net.lower - 1e-9).any() or (x > net.upper + 1e-9).any():
        return False
    balance = np.zeros(net.nodes)
    np.add.at(balance, net.tail, x)
    inside = net.head >= 0
    np.subtract.at(balance, net.head[inside], x[inside])
    return bool(np.allclose(balance, net.supply))


SHAPES = [
    (1, dict(partitions=400, brokers=16, added_brokers=4, racks=2)),                  # R < RF: every rack
    (2, dict(partitions=300, brokers=10, added_brokers=5, racks=2, rack_sizes="3,7")),
    (3, dict(partitions=200, brokers=12, added_brokers=3, racks=3, added_racks=1)),   # one per rack, a rack added
    (4, dict(partitions=240, brokers=9, added_brokers=3, racks=4)),
    (5, dict(partitions=600, brokers=20, added_brokers=4, racks=5, added_racks=1)),   # the bench's shape, smaller
    (6, dict(partitions=600, brokers=20, added_brokers=4, racks=5, added_racks=1, current_rack_slips=0.0)),
]


@pytest.mark.parametrize("seed,params", SHAPES)
@pytest.mark.parametrize("extra", [0, 3])
def test_every_window_same_optimum_as_the_lp(seed, params, extra):
    """Each window's network: the min-cost flow's cost is the LP's optimum (or both find none), and its
    flow is integral and feasible; likewise with moves weighed by random sizes."""
    x = generate("replicas", seed, **params)
    c = Cluster.of(x)
    d = _fresh(x, c, None, None, {}).d + extra
    avg = c.partitions * c.rf / len(c.brokers)
    rng = np.random.default_rng(seed)
    for w in (None, rng.integers(1, 50, c.partitions)):
        for lo in range(max(0, math.ceil(avg) - d), math.floor(avg) + 1):
            net = (SM._replica_network if c.one_per_rack else SM._every_rack_network)(x, c, d, lo, w)
            fast, lp = both(net.flow, net.model, c.one_per_rack)
            agree(fast, lp)
            if fast.status == "optimal":
                assert feasible_flow(net.flow, fast.x)


@pytest.mark.parametrize("seed,params", [s for s in SHAPES if s[1]["racks"] + s[1].get("added_racks", 0) >= 3])
@pytest.mark.parametrize("extra", [0, 3])
def test_reduced_network_same_optimum_as_the_slots(seed, params, extra):
    """One replica per rack: the reduced network (single-replica slots as arcs to their broker, which forwards
    what it does not keep to its rack's pool) has the slot network's optimum in every window, by either solver,
    and its read-back places exactly that many moves."""
    x = generate("replicas", seed, **params)
    c = Cluster.of(x)
    assert c.one_per_rack
    d = _fresh(x, c, None, None, {}).d + extra
    avg = c.partitions * c.rf / len(c.brokers)
    for lo in range(max(0, math.ceil(avg) - d), math.floor(avg) + 1):
        slots = SM._replica_network(x, c, d, lo, reduced=False)
        small = SM._replica_network(x, c, d, lo)
        assert len(small.flow.tail) < len(slots.flow.tail) and len(small.forward) == len(c.brokers)
        reference = solve_network(slots.flow, slots.model, None, None)
        fast, lp = both(small.flow, small.model)
        agree(fast, lp)
        assert fast.status == reference.status
        if fast.status == "optimal":
            assert fast.objective == reference.objective
            sets = SM._read_network(c, small, fast.x, x)
            moved = sum(len(set(s) - set(x.current.get(c.start + p, ()))) for p, s in enumerate(sets))
            assert moved == round(fast.objective)
            rack = c.rack_of_index
            assert all(len(set(s)) == c.rf and len({rack[b] for b in s}) == c.rf for s in sets)  # one per rack
            loads = np.bincount([c.brokers.index(b) for s in sets for b in s], minlength=len(c.brokers))
            assert lo <= loads.min() and loads.max() <= lo + d


@pytest.mark.parametrize("seed,params", SHAPES)
def test_replica_flow_same_moves_both_ways(seed, params):
    """The window walk answers the same fewest moves and bound with either solver."""
    x = generate("replicas", seed, **params)
    c = Cluster.of(x)
    d = _fresh(x, c, None, None, {}).d
    w = weights_of(x, False)
    _, moves, bound = SM.solve_replica_flow(x, c, d, None, None)
    _, lp_moves, lp_bound = SM.solve_replica_flow(x, c, d, None, None, dedicated=False)
    assert (moves, bound) == (lp_moves, lp_bound)
    assert moves == bound  # proven optimal
    assert w.sum() > 0


@pytest.mark.parametrize("seed,params", SHAPES[2:])
def test_leader_flow_same_kept_leaders(seed, params):
    """The leader flow keeps as many current leaders with either solver, within the same imbalance."""
    x = generate("replicas", seed, **params)
    c = Cluster.of(x)
    fresh = _fresh(x, c, None, None, {})
    sets, _, _ = SM.solve_replica_flow(x, c, fresh.d, None, None)
    kept = []
    for dedicated in (True, False):
        a = SM.choose_leaders(x, c, sets, fresh.l, None, None, dedicated=dedicated)
        assert a is not None
        leads = np.bincount([c.brokers.index(bs[0]) for bs in a.values()], minlength=len(c.brokers))
        assert leads.max() - leads.min() <= fresh.l
        kept.append(sum(x.current[p][0] == bs[0] for p, bs in a.items() if x.current.get(p)))
    assert kept[0] == kept[1]


@st.composite
def random_networks(draw):
    """Small random networks: arcs between random nodes or out of the network, random bounds and costs."""
    n = draw(st.integers(2, 6))
    m = draw(st.integers(1, 14))
    tail = np.array(draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)))
    head = np.array(draw(st.lists(st.integers(-1, n - 1), min_size=m, max_size=m)))
    head = np.where(head == tail, -1, head)  # no loops
    lower = np.array(draw(st.lists(st.integers(0, 2), min_size=m, max_size=m)), dtype=float)
    width = np.array(draw(st.lists(st.integers(0, 3), min_size=m, max_size=m)), dtype=float)
    cost = np.array(draw(st.lists(st.integers(-2, 5), min_size=m, max_size=m)), dtype=float)
    supply = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=float)
    return tail, head, lower, lower + width, cost, supply


@settings(max_examples=150, deadline=None)
@given(random_networks())
def test_random_networks_same_optimum_as_the_lp(data):
    """Lower bounds, arcs leaving the network, negative costs (cycles): the network solver and the LP agree."""
    tail, head, lower, upper, cost, supply = data
    model = Model()
    cols = model.add_vars(len(tail), 0, 1, integer=False)
    model.lower, model.upper, model.cost = [lower], [upper], [cost]
    inside = head >= 0
    model.add_rows(supply, supply, np.r_[tail, head[inside]], np.r_[cols, cols[inside]],
                   np.r_[np.ones(len(tail)), -np.ones(int(inside.sum()))])
    net = Network.of(model, tail, head, supply)
    fast, lp = both(net, model)
    assert (fast.status == "optimal") == (lp.status == "optimal"), (fast.status, lp.status)
    if fast.status == "optimal":
        assert fast.objective == pytest.approx(lp.objective, abs=1e-6)
        assert feasible_flow(net, fast.x)


def test_costs_beyond_the_network_solver_fall_back_to_the_lp():
    """Costs its cost scaling cannot take (bytes near 2^62) are answered by the LP, not dropped."""
    model = Model()
    cols = model.add_vars(2, 0, 1, integer=False, cost=np.array([2.0 ** 62, 1.0]))
    model.add_rows(np.ones(1), 1, np.zeros(2, dtype=np.int64), cols, 1.0)
    net = Network.of(model, np.zeros(2, dtype=np.int64), np.full(2, -1), np.ones(1))
    assert _min_cost_flow(net).status == "error"
    out = solve_network(net, model, None, None)
    assert out.status == "optimal" and out.objective == 1.0 and out.x.tolist() == [0.0, 1.0]


def test_a_network_that_cannot_finish_before_the_deadline_is_not_started():
    """The network solver has no time limit: with less time left than its estimate it does not start."""
    import time
    x = generate("replicas", 5, **SHAPES[4][1])
    c = Cluster.of(x)
    net = SM._replica_network(x, c, 0, 75)
    soon = time.perf_counter() + 1e-6 * len(net.flow.tail)  # a tenth of the estimate
    assert solve_network(net.flow, net.model, soon, None).status == "time_limit"
    assert solve_network(net.flow, net.model, time.perf_counter() + 60, None).status in ("optimal", "infeasible")


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10 ** 6), st.integers(10, 60), st.integers(3, 5), st.sampled_from([0.0, 0.2, 0.6]))
def test_random_reassignments_reduced_network_same_fewest_moves(seed, partitions, racks, slips):
    """Small random add-a-rack reassignments (slipped starts included): the walk over windows gives the same
    fewest moves on the reduced network by the network solver as on the slot network by HiGHS' LP."""
    x = generate("replicas", seed, partitions=partitions, replication_factor=3, brokers=2 * racks, added_brokers=2,
                 racks=racks, added_racks=1, current_rack_slips=slips)
    c = Cluster.of(x)
    d = _fresh(x, c, None, None, {}).d
    _, moves, bound = SM.solve_replica_flow(x, c, d, None, None)
    slot_networks = SM._replica_network
    try:
        SM._replica_network = lambda *a, **k: slot_networks(*a, **dict(k, reduced=False))
        _, lp_moves, lp_bound = SM.solve_replica_flow(x, c, d, None, None, dedicated=False)
    finally:
        SM._replica_network = slot_networks
    assert (moves, bound) == (lp_moves, lp_bound)
