"""BoundsLP: one HiGHS object re-solved under new bounds gives what a fresh solve gives, its cutoff stops
are confirmed by weak duality, and its time limit counts from each solve, not from the object's first."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given, settings, strategies as st

from kipopt.formulations.highs import ArrayLP, BoundsLP, build_csc, solve_lp


def _transport(seed: int, S: int = 6, D: int = 8) -> ArrayLP:
    """An ``S x D`` transportation LP with ranged supplies, costs drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    cols = np.arange(S * D)
    start, index, value = build_csc(S * D, np.r_[cols, cols], np.r_[cols // D, S + cols % D], np.ones(2 * S * D))
    return ArrayLP(rng.integers(-5, 20, S * D).astype(float), np.zeros(S * D), np.full(S * D, 3.0),
                   np.r_[np.full(S, 2.0), np.full(D, 3.0)], np.r_[np.full(S, 6.0 * D / 8), np.full(D, 3.0)],
                   start, index, value)


def _bounds(rng) -> tuple[np.ndarray, ...]:
    n = 48
    upper = rng.integers(0, 4, n).astype(float)
    supply_lo = rng.integers(0, 5, 6).astype(float)
    return (np.zeros(n), upper, np.r_[supply_lo, np.full(8, 3.0)],
            np.r_[supply_lo + rng.integers(0, 4, 6), np.full(8, 3.0)])


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6))
def test_re_solves_match_fresh_solves(seed):
    rng = np.random.default_rng(seed)
    base = _transport(seed % 7)
    family = BoundsLP(base)
    for _ in range(6):
        lower, upper, row_lower, row_upper = _bounds(rng)
        lp = ArrayLP(base.cost, lower, upper, row_lower, row_upper, base.start, base.index, base.value)
        fresh = solve_lp(lp)
        got = family.solve(lp)
        assert got.status == fresh.status
        if fresh.status == "optimal":
            assert abs(got.objective - fresh.objective) < 1e-6
            cut = fresh.objective - 0.5
            stopped = family.solve(lp, cutoff=cut)
            assert stopped.status == "cutoff" and cut < stopped.bound <= fresh.objective + 1e-6
            assert family.solve(lp, cutoff=fresh.objective + 0.5).status == "optimal"


def test_time_limit_counts_from_each_solve():
    """HiGHS compares its limit with the run time summed over the object's runs: a limit shorter than the
    runs before, but ample for this one, must not stop it before its first pivot."""
    base = _transport(1, 60, 80)
    family = BoundsLP(base)
    upper = base.upper.copy()
    for k in range(6):
        upper[k::7] = 0.0
        assert family.solve(replace(base, upper=upper.copy())).status == "optimal"
    spent = family._h.getRunTime()
    upper[3::11] = 1.0
    got = family.solve(replace(base, upper=upper), time_limit=spent / 2)
    assert got.status == "optimal"
