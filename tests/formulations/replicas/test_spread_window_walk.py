"""The window walk of ``solve_replica_flow`` against every window solved."""

from __future__ import annotations

import math

import pytest

from kipopt.datasets import generate
from kipopt.formulations.replicas import moves as SM
from kipopt.formulations.replicas.model import Cluster, _integral, _lp_solve
from kipopt.formulations.replicas.spread import _fresh


def every_window(x, c: Cluster, d_max: int) -> list[float]:
    avg = c.partitions * c.rf / len(c.brokers)
    values = []
    for lo in range(max(0, math.ceil(avg) - d_max), math.floor(avg) + 1):
        net = (SM._replica_network if c.one_per_rack else SM._every_rack_network)(x, c, d_max, lo)
        o = _lp_solve(net.model, None, None, c.one_per_rack)
        values.append(round(o.objective) if o.status == "optimal" and _integral(o.x) else math.inf)
    return values


def is_convex(values: list[float]) -> bool:
    finite = [v for v in values if v < math.inf]
    return all(finite[i - 1] + finite[i + 1] >= 2 * finite[i] for i in range(1, len(finite) - 1))


@pytest.mark.parametrize("seed,params", [
    (1, dict(partitions=400, brokers=16, added_brokers=4, racks=2)),                 # R < RF: every rack
    (2, dict(partitions=300, brokers=10, added_brokers=5, racks=2, rack_sizes="3,7")),
    (3, dict(partitions=500, brokers=12, added_brokers=3, racks=3, added_racks=1)),  # one per rack
    (4, dict(partitions=240, brokers=9, added_brokers=3, racks=4)),
])
@pytest.mark.parametrize("extra", [0, 2, 5])
def test_the_walk_finds_the_best_window(seed, params, extra):
    """Widened windows (``d_max`` above the optimum) give several floors: the walk ends at the best one,
    and the fewest moves are convex in the floor, as the walk assumes."""
    x = generate("replicas", seed, **params)
    c = Cluster.of(x)
    d = _fresh(x, c, None, None, {}).d + extra
    values = every_window(x, c, d)
    assert is_convex(values)
    sets, moves, bound = SM.solve_replica_flow(x, c, d, None, None)
    assert moves == min(values) == bound
