"""WarmLP: the cutoff stop is confirmed by weak duality, and large families solve in a child the time limit
kills, with the same answers as in process."""

from __future__ import annotations

from dataclasses import replace

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


def _dense_dual_bound(lp: ArrayLP, y: np.ndarray) -> float:
    """Weak duality written out on the dense matrix (rows with both bounds finite, columns in [l, u])."""
    A = np.zeros((lp.num_row, lp.num_col))
    for j in range(lp.num_col):
        for k in range(lp.start[j], lp.start[j + 1]):
            A[lp.index[k], j] += lp.value[k]
    d = lp.cost - A.T @ y
    return float(np.where(y > 0, y * lp.row_lower, y * lp.row_upper).sum()
                 + np.where(d > 0, d * lp.lower, d * lp.upper).sum())


def test_dual_bound_follows_each_lp_pattern_in_turn():
    """:func:`dual_bound` keeps the entry columns of the last pattern it saw: LPs of different patterns
    asked in turn, each twice, get the bound written out on their own matrix."""
    rng = np.random.default_rng(7)
    lps = []
    for n in (5, 9, 4):
        cols = np.repeat(np.arange(n), 2)
        rows = np.stack([np.arange(n) % 3, 3 + np.arange(n) % 2], axis=1).ravel()
        start, index, value = build_csc(n, cols, rows, rng.integers(1, 4, 2 * n).astype(float))
        lps.append(ArrayLP(rng.integers(-5, 6, n).astype(float), np.zeros(n), np.full(n, 4.0),
                           np.full(5, -3.0), np.full(5, 6.0), start, index, value))
    for _ in range(2):
        for lp in lps:
            y = rng.normal(size=5)
            first = dual_bound(lp, y)  # expands this pattern (the one before was another)
            assert abs(first - _dense_dual_bound(lp, y)) < 1e-9
            assert dual_bound(lp, y) == first  # reads the columns kept for it


def test_a_warm_start_carries_its_duals_to_another_member():
    """A member solved to optimality gives, through :attr:`WarmLP.start`, its basis and its duals; a
    tighter member started from it (the family's own last duals far away) is settled by those duals with
    no solve when they bound it above the cutoff, and otherwise solved to its own optimum."""
    lp = _transport(3)
    warm = WarmLP()
    first = warm.solve(lp)
    start = warm.start
    assert np.array_equal(start.row_dual, first.row_dual)
    tighter = replace(lp, upper=np.where(first.x > 0.5, first.x, lp.upper))
    warm.solve(_transport(0, shift=50.0))  # the family's last optimum is now another one's
    assert warm.start.row_dual is not None and not np.array_equal(warm.start.row_dual, start.row_dual)
    settled = warm.solve(tighter, cutoff=first.objective - 0.5, start=start)
    assert settled.status == "cutoff" and "duals" in settled.message and settled.bound >= first.objective - 1e-6
    solved = warm.solve(tighter, cutoff=first.objective + 0.5, start=start)
    assert solved.status == "optimal" and abs(solved.objective - solve_lp(tighter).objective) < 1e-6
    warm.solve(tighter, cutoff=first.objective - 0.5, start=start)
    assert warm.start.row_dual is None  # a member settled without a solve leaves no duals of its own


def test_a_cutoff_leaves_its_proof_for_the_next_members():
    """The duals that proved a member above its cutoff settle the next, tighter member with no solve,
    where the last optimum's duals do not."""
    from kipopt.formulations.highs import carried_cutoff
    carried = 0
    for seed in range(1, 12):
        warm = WarmLP()
        first = warm.solve(_transport(0))
        lp = _transport(seed)
        cutoff = solve_lp(lp).objective - 0.5
        stopped = warm.solve(lp, cutoff=cutoff)
        if "dual bound checked" not in stopped.message:
            continue
        assert stopped.status == "cutoff" and dual_bound(lp, stopped.row_dual) > cutoff
        tighter = replace(lp, upper=np.full(lp.num_col, 3.0))
        if carried_cutoff(tighter, first.row_dual, cutoff) is None:
            settled = warm.solve(tighter, cutoff=cutoff)
            assert settled.status == "cutoff" and "earlier member" in settled.message
            carried += 1
    assert carried > 0


def test_large_families_solve_in_a_child_with_the_same_answer(monkeypatch):
    lp = _transport(5)
    inline = WarmLP().solve(lp, time_limit=30)
    monkeypatch.setattr(WarmLP, "WARM_COLUMNS", 10)
    child = WarmLP().solve(lp, time_limit=30)
    assert (child.status, child.objective) == (inline.status, inline.objective)
    assert np.allclose(child.x, inline.x)


def _bounded(lp: ArrayLP) -> ArrayLP:
    """The same LP with every flow at most 4: finite column bounds, so that any duals bound it."""
    return replace(lp, upper=np.full(lp.num_col, 4.0))


def test_the_last_optimums_duals_settle_a_cutoff_without_a_solve_and_never_above_the_optimum():
    reused = 0
    for seed in range(1, 10):
        before = _bounded(_transport(seed))
        for shift in (0.0, 0.5, 2.0, -1.0):
            lp = _bounded(_transport(seed, shift))
            full = solve_lp(lp)
            for cutoff in (full.objective - 30.5, full.objective - 0.5, full.objective + 0.5):
                warm = WarmLP()
                warm.solve(before)
                got = warm.solve(lp, cutoff=cutoff)
                if got.status == "cutoff":
                    assert cutoff < got.bound <= full.objective + 1e-6
                    reused += got.message == "bounded by an earlier member's duals"
                else:
                    assert got.status == "optimal" and abs(got.objective - full.objective) < 1e-6
    assert reused > 0


def test_duals_of_the_wrong_sign_are_projected_not_minus_infinity():
    """A ``<=`` row's positive dual or a ``>=`` row's negative one (another LP's, or round-off) counts as 0,
    not as ``y · (∓inf)``."""
    lp = ArrayLP(cost=np.array([1.0, 1.0]), lower=np.zeros(2), upper=np.full(2, 5.0),
                 row_lower=np.array([2.0, -np.inf]), row_upper=np.array([np.inf, 4.0]),
                 start=np.array([0, 2, 4]), index=np.array([0, 1, 0, 1]), value=np.array([1.0, 1.0, 1.0, 1.0]))
    assert dual_bound(lp, np.array([1.0, 1e-12])) == dual_bound(lp, np.array([1.0, 0.0])) == 2.0
    assert dual_bound(lp, np.array([-1e-12, -0.5])) == dual_bound(lp, np.array([0.0, -0.5])) == -2.0


def _ranged_transport(seed: int, S: int = 6, D: int = 8) -> ArrayLP:
    """An ``S x D`` transportation LP with ranged supplies, costs drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    cols = np.arange(S * D)
    start, index, value = build_csc(S * D, np.r_[cols, cols], np.r_[cols // D, S + cols % D], np.ones(2 * S * D))
    return ArrayLP(rng.integers(-5, 20, S * D).astype(float), np.zeros(S * D), np.full(S * D, 3.0),
                   np.r_[np.full(S, 2.0), np.full(D, 3.0)], np.r_[np.full(S, 6.0 * D / 8), np.full(D, 3.0)],
                   start, index, value)


def test_re_solves_in_the_shared_object_match_fresh_solves():
    """Members differing in bounds and in entry values, one after another in the family's one HiGHS object:
    each answer is a fresh solve's, and a cutoff below the optimum stops with a checked bound."""
    rng = np.random.default_rng(5)
    base = _ranged_transport(3)
    warm = WarmLP()
    for _ in range(30):
        value = np.where(rng.random(len(base.value)) < 0.1, 0.0, 1.0)
        lp = replace(base, value=value, upper=rng.integers(0, 4, base.num_col).astype(float),
                     row_lower=np.r_[rng.integers(0, 5, 6).astype(float), np.full(8, 3.0)])
        lp = replace(lp, row_upper=np.r_[lp.row_lower[:6] + rng.integers(0, 4, 6), np.full(8, 3.0)])
        fresh = solve_lp(lp)
        got = warm.solve(lp)
        assert got.status == fresh.status
        if fresh.status == "optimal":
            assert abs(got.objective - fresh.objective) < 1e-6
            stopped = warm.solve(lp, cutoff=fresh.objective - 0.5)
            assert stopped.status == "cutoff" and fresh.objective - 0.5 < stopped.bound <= fresh.objective + 1e-6
            assert warm.solve(lp, cutoff=fresh.objective + 0.5).status == "optimal"


def test_time_limit_counts_from_each_solve():
    """HiGHS compares its limit with the run time summed over the object's runs: a limit shorter than the
    runs before, but ample for this one, must not stop it before its first pivot."""
    base = _ranged_transport(1, 60, 80)
    warm = WarmLP()
    upper = base.upper.copy()
    for k in range(6):
        upper[k::7] = 0.0
        assert warm.solve(replace(base, upper=upper.copy())).status == "optimal"
    spent = warm._h.getRunTime()
    upper[3::11] = 1.0
    got = warm.solve(replace(base, upper=upper), time_limit=spent / 2)
    assert got.status == "optimal"


def _first_columns_floored(x: np.ndarray) -> np.ndarray:
    """Fix the first five flows at their optimum's values minus what a test wants moved: at 0 where the
    optimum ships something (so the second LP has to re-route)."""
    return np.where(x[:5] > 0.5, 0.0, x[:5])


def test_solve_then_equals_the_fixed_lp_solved_alone_inline_and_in_a_child(monkeypatch):
    from kipopt.formulations.highs import fix_columns
    for seed in range(1, 6):
        lp = _transport(seed)
        full = solve_lp(lp)
        fixed = solve_lp(fix_columns(lp, _first_columns_floored(full.x)))
        for warm_columns in (WarmLP.WARM_COLUMNS, 10):  # in process, then both solves in one child
            monkeypatch.setattr(WarmLP, "WARM_COLUMNS", warm_columns)
            warm = WarmLP()
            first, second = warm.solve_then(lp, _first_columns_floored, time_limit=30)
            assert first.status == "optimal" and abs(first.objective - full.objective) < 1e-6
            assert second is not None
            if second.status == fixed.status and abs(second.objective - fixed.objective) < 1e-6:
                assert fixed.objective <= first.objective + 0.5  # the fixed LP's answer only where it is as good
            else:  # the fixed LP falls short: a dive on the first's face answers at the first's value
                assert second.status == "optimal" and abs(second.objective - first.objective) < 1e-6
                assert np.allclose(second.x[:5], np.round(second.x[:5]))
            assert warm.carried  # the first optimum's duals settle later members


def test_solve_then_skips_the_second_above_the_cutoff(monkeypatch):
    lp = _transport(2)
    full = solve_lp(lp)
    for warm_columns in (WarmLP.WARM_COLUMNS, 10):
        monkeypatch.setattr(WarmLP, "WARM_COLUMNS", warm_columns)
        first, second = WarmLP().solve_then(lp, _first_columns_floored, time_limit=30, cutoff=full.objective - 0.5)
        assert second is None and first.status in ("cutoff", "optimal")
        assert first.status == "cutoff" or first.objective > full.objective - 0.5


def test_solve_then_in_a_child_stops_at_the_time_limit(monkeypatch):
    import time
    monkeypatch.setattr(WarmLP, "WARM_COLUMNS", 10)
    t0 = time.perf_counter()
    first, second = WarmLP().solve_then(_transport(4), _first_columns_floored, time_limit=1e-4)
    assert time.perf_counter() - t0 < 5
    assert first.status in ("time_limit", "optimal") and (second is None or second.status != "error")


def test_solve_then_in_a_child_says_infeasible_where_interior_point_gives_up(monkeypatch):
    """IPM gives up on infeasible LPs: the child then runs the plain dual simplex, as a single solve does,
    so that the level tree reads "infeasible" (a vector to drop), never an error that would stop it."""
    lp = _transport(3)
    infeasible = replace(lp, row_lower=lp.row_lower + 1.0, row_upper=lp.row_upper + 1.0)  # supply 30, demand 32
    from kipopt.formulations import highs
    real = highs._result

    def giving_up(h, integer):  # the first run of each child ends without an answer, as IPM's may
        result = real(h, integer)
        if h.getOptionValue("solver") in ("ipm", (highs.highspy.HighsStatus.kOk, "ipm")):
            return replace(result, status="error", x=None, objective=None)
        return result

    monkeypatch.setattr(highs, "_result", giving_up)
    monkeypatch.setattr(WarmLP, "WARM_COLUMNS", 10)
    for lp_, status in ((infeasible, "infeasible"), (lp, "optimal")):
        first, second = WarmLP().solve_then(lp_, _first_columns_floored, time_limit=30)
        assert first.status == status and (second is None) == (status != "optimal")
        assert WarmLP().solve(lp_, time_limit=30).status == status


def test_the_family_keeps_its_last_optima_duals_newest_first_and_each_bounds_any_member():
    """After 12 members (different costs) the family carries the duals of its last ``KEPT_DUALS`` optima,
    newest first; by weak duality each bounds every member, at most at its optimum."""
    warm = WarmLP()
    lps = [_transport(seed) for seed in range(12)]
    results = [warm.solve(lp) for lp in lps]
    assert all(r.status == "optimal" for r in results)
    carried = warm.carried
    assert len(carried) == WarmLP.KEPT_DUALS
    for kept, result in zip(carried, reversed(results)):
        assert np.array_equal(kept, result.row_dual)
    for lp, result in zip(lps, results):
        for dual in carried:
            assert dual_bound(lp, dual) <= result.objective + 1e-6


def test_solve_then_each_in_children_at_once_equals_one_at_a_time(monkeypatch):
    """Large members at once, each in a child of its own: the same results as :meth:`WarmLP.solve_then` one
    at a time, their optima's duals kept; a member the kept duals settle is not solved."""
    lps = [_transport(seed) for seed in (1, 2, 5)]
    alone = [WarmLP().solve_then(lp, _first_columns_floored, time_limit=30) for lp in lps]
    monkeypatch.setattr(WarmLP, "WARM_COLUMNS", 10)
    warm = WarmLP()
    both = warm.solve_then_each(lps, _first_columns_floored, time_limit=30)
    for (first, second), (a, b) in zip(both, alone):
        assert first.status == a.status == "optimal" and abs(first.objective - a.objective) < 1e-6
        assert second is not None and second.status == b.status
        assert second.status != "optimal" or abs(second.objective - b.objective) < 1e-6
    assert len(warm.carried) == 3
    lp = _bounded(_transport(1))
    warm = WarmLP()
    warm.solve_then(lp, _first_columns_floored, time_limit=30)
    optimum = solve_lp(lp).objective
    again = warm.solve_then_each([lp, _bounded(_transport(2))], _first_columns_floored, time_limit=30,
                                 cutoff=optimum - 0.5)
    assert again[0][0].status == "cutoff" and "earlier member" in again[0][0].message


def test_the_thread_pool_is_made_again_only_when_its_size_changes():
    """A thread's HiGHS pool and a run asking for another size: solves asking for 1, 2, none and 1 threads
    in turn all succeed; the pool is restarted on a change of size only (a restart stops and starts its
    threads), and a restart after a fork is followed by a new one."""
    import kipopt.formulations.highs_lp as highs_lp
    from kipopt.formulations.highs import restart_thread_pool

    made = []
    size = highs_lp.size_thread_pool

    def spy(threads):
        before = highs_lp._pool_size()
        size(threads)
        if before != threads:
            made.append(threads)
    highs_lp.size_thread_pool = spy
    try:
        restart_thread_pool()
        for threads in (1, 1, 2, None, 2, 1):
            assert solve_lp(_transport(3), threads=threads).status == "optimal"
        restart_thread_pool()
        spy(None)  # made at HiGHS' default size (the level tree's start, no thread count given)
        assert solve_lp(_transport(3), threads=None).status == "optimal"
        assert solve_lp(_transport(3), threads=1).status == "optimal"
    finally:
        highs_lp.size_thread_pool = size
    assert made == [1, 2, 1, 1]


def test_each_thread_keeps_the_size_of_its_own_pool():
    """HiGHS keeps a pool per thread, so the size last made is per thread too: after another thread made its
    pool at 2, a thread whose pool is at 1 still resizes its own before a 2-thread solve (one number for the
    process skipped that resize, and the solve ended in error)."""
    import threading

    ready, go, statuses = threading.Event(), threading.Event(), {}

    def other() -> None:
        statuses["at 1"] = solve_lp(_transport(4), threads=1).status
        ready.set()
        go.wait(30)
        statuses["then at 2"] = solve_lp(_transport(4), threads=2).status

    thread = threading.Thread(target=other)
    thread.start()
    ready.wait(30)
    statuses["here at 2"] = solve_lp(_transport(4), threads=2).status
    go.set()
    thread.join(30)
    assert statuses == {"at 1": "optimal", "here at 2": "optimal", "then at 2": "optimal"}


_SILENCED_AT_ONCE = """
import os, sys, threading
sys.setswitchinterval(1e-6)  # threads switch inside the blocks, as they may on a busy machine
from kipopt.formulations.highs_lp import new_highs
threads = [threading.Thread(target=lambda: [new_highs() for _ in range(3000)]) for _ in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("still here", flush=True)
print(os.readlink("/proc/self/fd/1"), file=sys.stderr)
"""


def test_stdout_survives_threads_silencing_highs_at_once(tmp_path):
    """Three threads making silent ``Highs`` objects at once (each silences fd 1 around the constructor):
    fd 1 points where it did before, and the script's output after them arrives (one save and restore per
    block left fd 1 at /dev/null for good in most runs)."""
    import os
    import subprocess
    import sys

    import pytest
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("reads fd 1's target through /proc")
    out = tmp_path / "out.txt"
    with open(out, "w") as stdout:
        done = subprocess.run([sys.executable, "-c", _SILENCED_AT_ONCE], stdout=stdout, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "still here\n"
    assert done.stderr.strip() == str(out)


def test_meanwhile_runs_once_here_while_the_children_work(monkeypatch):
    """The level tree bounds boxes while its large leaf LPs solve: ``meanwhile`` runs once, in this process,
    for a batch of several, of one, of none left to solve (the kept duals settled it), and in process; the
    results are those without it."""
    import os

    from kipopt.formulations.highs import Deadline, call_highs_each_before
    ran: list[int] = []

    def note():
        ran.append(os.getpid())
    assert call_highs_each_before(Deadline.after(30), [lambda: 1, lambda: 2, lambda: 3], note) == [1, 2, 3]
    assert call_highs_each_before(Deadline.after(30), [lambda: 4], note) == [4]
    assert call_highs_each_before(Deadline.after(30), [], note) == []
    assert ran == [os.getpid()] * 3
    lps = [_transport(seed) for seed in (1, 2)]
    alone = [WarmLP().solve_then(lp, _first_columns_floored, time_limit=30) for lp in lps]
    for columns in (10, 10_000):   # in children, then in process
        monkeypatch.setattr(WarmLP, "WARM_COLUMNS", columns)
        ran.clear()
        both = WarmLP().solve_then_each(lps, _first_columns_floored, time_limit=30, meanwhile=note)
        one = WarmLP().solve_then(lps[0], _first_columns_floored, time_limit=30, meanwhile=note)
        assert len(ran) == 2
        for (first, _), (a, _) in zip(both + [one], alone + alone[:1]):
            assert first.status == a.status == "optimal" and abs(first.objective - a.objective) < 1e-6


_FORK_PROBE = """
import os, sys
import numpy as np
from kipopt.formulations.highs import ArrayLP, solve_lp
threads = lambda: len(os.listdir("/proc/self/task"))
lp = ArrayLP(np.ones(3), np.zeros(3), np.ones(3), np.array([1.0]), np.array([1.0]), np.arange(4),
             np.zeros(3, dtype=np.int64), np.ones(3))
base = threads()
assert solve_lp(lp, threads=2).status == "optimal"
with_worker = threads()
at_fork = []
os.register_at_fork(after_in_parent=lambda: at_fork.append(threads()))
pid = os.fork()
if pid == 0:
    os._exit(0 if solve_lp(lp, threads=2).status == "optimal" else 1)
_, status = os.waitpid(pid, 0)
print(base, with_worker, at_fork[0], os.waitstatus_to_exitcode(status), solve_lp(lp, threads=2).status)
"""


def test_a_fork_finds_no_highs_worker_in_the_forking_thread():
    """HiGHS' workers of the forking thread are stopped and joined just before any fork (a worker caught by the
    fork on its way to sleep would leave its semaphore's mutex and condition variable mid-change to the
    child), and made again by the parent's next run; the child solves as before."""
    import os
    import subprocess
    import sys

    import pytest
    if not os.path.isdir("/proc/self/task"):
        pytest.skip("counts threads through /proc")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")  # numpy's own pool, stopped at forks too
    done = subprocess.run([sys.executable, "-c", _FORK_PROBE], capture_output=True, text=True, timeout=60, env=env)
    base, with_worker, at_fork, child, again = done.stdout.split()
    assert int(with_worker) == int(base) + 1, done.stdout  # threads=2: one worker beside this thread
    assert int(at_fork) == int(base) and child == "0" and again == "optimal"
