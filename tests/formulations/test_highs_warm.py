"""WarmLP: the cutoff stop is confirmed by weak duality, and large families solve in a child the time limit
kills, with the same answers as in process."""

from __future__ import annotations

import numpy as np

from kipopt.formulations.highs import ArrayLP, WarmLP, build_csc, dual_bound, solve_lp


def _transport(seed: int, shift: float = 0.0) -> ArrayLP:
    """A 6 x 8 transportation LP (supplies = demands), costs drawn from ``seed`` plus ``shift``."""
    rng = np.random.default_rng(seed)
    S, D = 6, 8
    supply = np.full(S, 4.0)
    demand = np.full(D, 3.0)
    cols = np.arange(S * D)
    rows = np.r_[cols // D, S + cols % D]
    start, index, value = build_csc(S * D, np.r_[cols, cols], rows, np.ones(2 * S * D))
    cost = rng.integers(0, 20, S * D).astype(float) + shift
    return ArrayLP(cost, np.zeros(S * D), np.full(S * D, np.inf), np.r_[supply, demand], np.r_[supply, demand],
                   start, index, value)


def test_cutoff_stops_only_above_the_cutoff_with_a_checked_bound():
    stops = 0
    for seed in range(1, 12):
        lp = _transport(seed)
        full = solve_lp(lp)
        for cutoff in (full.objective - 5.5, full.objective - 0.5, full.objective + 0.5):
            warm = WarmLP()
            warm.solve(_transport(0))  # a basis to start from, far from this one's optimum
            got = warm.solve(lp, cutoff=cutoff)
            if got.status == "cutoff":
                stops += 1
                assert cutoff < got.bound <= full.objective + 1e-6
            else:
                assert got.status == "optimal" and abs(got.objective - full.objective) < 1e-6
    assert stops > 0


def test_dual_bound_of_the_optimal_duals_is_the_optimum():
    lp = _transport(3)
    full = solve_lp(lp)
    assert abs(dual_bound(lp, full.row_dual) - full.objective) < 1e-6


def test_large_families_solve_in_a_child_with_the_same_answer(monkeypatch):
    lp = _transport(5)
    inline = WarmLP().solve(lp, time_limit=30)
    monkeypatch.setattr(WarmLP, "WARM_COLUMNS", 10)
    child = WarmLP().solve(lp, time_limit=30)
    assert (child.status, child.objective) == (inline.status, inline.objective)
    assert np.allclose(child.x, inline.x)
