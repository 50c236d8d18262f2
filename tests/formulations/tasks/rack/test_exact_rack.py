"""Exact KIP-925 models (``exact.rack_active``, ``exact.balanced_subtopology``, ``exact.rack_standby``).

Every optimum is cross-checked against independent solvers on the same
problem (networkx network simplex, SciPy's assignment solver, brute force),
the rack-grouped LP against the full task × client model, and every
returned assignment against the rule's own recomputed objective.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from kipopt.api import solve
from kipopt.costs import role_cost
from kipopt.errors import InstanceError
from kipopt.formulations.tasks.rack import rules as rack_tasks
from kipopt.formulations.tasks.rack.model import active_problem, fair_bounds, kafka_cap, solve_rack_grouped
from kipopt.formulations.tasks.rack.pulp_models import solve_active_pulp
from kipopt.formulations.tasks.rack.balance import solve_balance_grouped
from kipopt.formulations.tasks.rack.transport import solve_transport
from kipopt.instance import from_dict
from kipopt.methods import SolveOptions, methods, rules
from kipopt.solution import Status, TaskRoles

from rack_instances import (active_instances, assignment_optimum, kafka_caps, networkx_optimum, random_instance,
                            random_instance_dict)

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def brute_force_active(instance, bounds: str) -> int:
    """Minimum of role_cost over every placement meeting the counts (and bounds)."""
    tasks, clients = list(instance.tasks), list(instance.clients)
    total = len(tasks)
    sizes = Counter(instance.tasks[t].subtopology for t in tasks)
    best = None
    for combo in itertools.product(clients, repeat=total):
        if any(combo.count(c) != len(instance.clients[c].active) for c in clients):
            continue
        per = Counter((c, instance.tasks[t].subtopology) for t, c in zip(tasks, combo))
        ok = True
        for c in clients:
            orig = len(instance.clients[c].active)
            for g, n in sizes.items():
                k = per.get((c, g), 0)
                if bounds == "kafka" and k > math.ceil(((orig * 1.0) / total) * n):
                    ok = False
                if bounds == "fair" and not (orig * n) // total <= k <= -((-orig * n) // total):
                    ok = False
        if not ok:
            continue
        assignment = {c: TaskRoles(tuple(t for t, cc in zip(tasks, combo) if cc == c)) for c in clients}
        cost = role_cost(instance, assignment, "active").total
        best = cost if best is None else min(best, cost)
    return best


# --------------------------------------------------------------------------- registry and basics


def test_registered():
    """The three rules and exact methods are in the registry, each rule pointing at its method."""
    for name in ("rack_active", "rack_standby", "balanced_subtopology"):
        rule = rules()[name]
        assert rule.family == "tasks" and rule.exact_method in methods()
        assert methods()[rule.exact_method].rule == name


def test_kafka_cap_float_order():
    """Kafka computes ((orig * 1.0) / T) * n_g in doubles: 7/25*25 is 7.000000000000001, cap 8."""
    assert kafka_cap(7, 25, 25) == 8
    assert kafka_cap(14, 25, 25) == 15
    assert fair_bounds(7, 25, 25) == (7, 7)
    assert kafka_cap(4, 10, 5) == 2 and fair_bounds(4, 10, 5) == (2, 2)


def test_fair_bounds_contain_share():
    """floor <= orig*n/T <= ceil, and they coincide exactly on integral shares."""
    for orig, total, n in itertools.product(range(0, 8), range(1, 9), range(1, 9)):
        lo, hi = fair_bounds(orig, total, n)
        assert lo <= orig * n / total <= hi and hi - lo <= 1
        assert (lo == hi) == ((orig * n) % total == 0)


def test_two_owners_rejected():
    """A task active on two clients: InstanceError naming the second client's field and the task."""
    d = random_instance_dict(1, tasks=4, clients=2)
    t = d["clients"]["c0"]["active"][0] if d["clients"]["c0"]["active"] else d["clients"]["c1"]["active"][0]
    other = "c1" if t in d["clients"]["c0"]["active"] else "c0"
    d["clients"][other]["active"].append(t)
    d["clients"][other]["standby"] = [s for s in d["clients"][other]["standby"] if s != t]
    with pytest.raises(InstanceError) as err:
        solve(from_dict(d), "exact.rack_active")
    assert "clients." in err.value.field and ".active" in err.value.field and t in str(err.value)


@pytest.mark.parametrize("method", ["exact.rack_active", "exact.balanced_subtopology"])
def test_unowned_task_rejected(method):
    """A task active nowhere cannot be optimised from the current assignment: the field names it."""
    d = random_instance_dict(2, tasks=4, clients=2)
    victim = next(c for c in d["clients"] if d["clients"][c]["active"])
    t = d["clients"][victim]["active"].pop()
    with pytest.raises(InstanceError) as err:
        solve(from_dict(d), method)
    assert err.value.field == f"tasks.{t}"


# --------------------------------------------------------------------------- active: cross-checks


@FAST
@given(active_instances(max_tasks=16, max_clients=6, strategies=("min_traffic",)))
def test_min_traffic_matches_network_simplex_and_lsa(instance):
    """exact.rack_active == networkx min-cost flow == SciPy assignment on Kafka's MinTraffic graph."""
    s = solve(instance, "exact.rack_active")
    assert s.status is Status.OPTIMAL and s.metrics["violations"] == []
    assert s.objective == networkx_optimum(instance, None) == assignment_optimum(instance)
    assert s.bound == s.objective


@FAST
@given(active_instances(max_tasks=16, max_clients=6, strategies=("balance_subtopology",)))
def test_balance_caps_match_network_simplex(instance):
    """With balance_subtopology, exact.rack_active == networkx on Kafka's two-stage graph with its caps."""
    s = solve(instance, "exact.rack_active")
    assert s.status is Status.OPTIMAL and s.metrics["violations"] == []
    assert s.objective == networkx_optimum(instance, kafka_caps(instance))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(active_instances(max_tasks=18, max_clients=7))
def test_rack_grouped_equals_full_model(instance):
    """The rack-grouped LP and the full task × client PuLP model have the same optimum, for every bound kind."""
    for bounds in ("none", "kafka", "fair"):
        p = active_problem(instance, bounds)
        grouped, full = solve_rack_grouped(p), solve_active_pulp(p)
        assert grouped.status == full.status == "optimal"
        assert grouped.objective == full.objective == p.cost(grouped.placement)
        if bounds != "none":
            balance = solve_balance_grouped(p)
            assert balance.status == "optimal" and balance.objective == grouped.objective
            assert balance.objective == p.cost(balance.placement)
            assert np.array_equal(np.bincount(balance.placement, minlength=p.num_clients), p.orig)
        if bounds == "none":
            transport = solve_transport(p)
            assert transport.status == "optimal" and transport.objective == grouped.objective
            assert transport.objective == p.cost(transport.placement)
            assert np.array_equal(np.bincount(transport.placement, minlength=p.num_clients), p.orig)
        assert not grouped.info["ilp_fallback"], "a vertex of a network LP must be integral"
        assert np.array_equal(np.bincount(grouped.placement, minlength=p.num_clients), p.orig)


@settings(max_examples=80, deadline=None)
@given(active_instances(max_tasks=5, max_clients=3))
def test_brute_force_active(instance):
    """Tiny instances: both active methods reach the brute-force minimum of their own rule."""
    bounds = "kafka" if instance.config.rack_aware_assignment_strategy == "balance_subtopology" else "none"
    assert solve(instance, "exact.rack_active").objective == brute_force_active(instance, bounds)
    assert solve(instance, "exact.balanced_subtopology").objective == brute_force_active(instance, "fair")


@FAST
@given(active_instances(max_tasks=14, max_clients=5))
def test_balanced_never_below_kafka_caps(instance):
    """The fair-share polytope lies inside Kafka's caps polytope, so its optimum is never lower."""
    d = dict(vars(instance.config), rack_aware_assignment_strategy="balance_subtopology")
    capped = from_dict(dict(_to_dict(instance), config=_config_dict(d)))
    fair = solve(instance, "exact.balanced_subtopology")
    assert fair.status is Status.OPTIMAL and fair.metrics["violations"] == []
    assert fair.objective >= solve(capped, "exact.rack_active").objective
    assert rules()["rack_active"].violations(capped, fair.assignment) == []


def _to_dict(instance):
    from kipopt.instance import to_dict
    return to_dict(instance)


def _config_dict(config: dict) -> dict:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in config.items() if v is not None}


@pytest.mark.parametrize("seed", range(6))
def test_generated_instances(seed):
    """Instances from kipopt.datasets: both models agree, the façade finds no broken rule."""
    datasets = pytest.importorskip("kipopt.datasets")
    try:
        instance = datasets.generate("tasks", seed, tasks=24, clients=6, subtopologies=3,
                                     strategy=("min_traffic", "balance_subtopology")[seed % 2])
    except NotImplementedError:
        pytest.skip("generators not available yet")
    for rule, method in (("rack_active", "exact.rack_active"), ("balanced_subtopology", "exact.balanced_subtopology")):
        try:
            s = solve(instance, method)
        except InstanceError:
            owners = Counter(t for c in instance.clients.values() for t in c.active)
            assert any(owners[t] != 1 for t in instance.tasks)
            return
        assert s.status is Status.OPTIMAL and s.metrics["violations"] == [], s.message
        _, other = rack_tasks.solve_active(instance, rule, model="pulp")
        assert other.objective == s.objective


def test_model_choice_by_size():
    """auto picks the transportation model without bounds; with bounds PuLP up to PULP_MAX_PAIRS
    task × client pairs and above the relaxed model (the priced network where its read-back misses)."""
    small = active_problem(random_instance(3, tasks=10, clients=4), "kafka")
    big = active_problem(random_instance(3, tasks=rack_tasks.PULP_MAX_PAIRS // 10 + 1, clients=10), "kafka")
    assert rack_tasks.choose_model(small) == "pulp" and rack_tasks.choose_model(big) == "relaxed"
    assert rack_tasks.choose_model(small, "arrays") == "arrays"
    assert rack_tasks.choose_model(active_problem(random_instance(3, tasks=10, clients=4))) == "transport"
    s = solve(random_instance(3, tasks=300, clients=10), "exact.rack_active")
    assert s.metrics["model"] == "transport" and s.status is Status.OPTIMAL
    s = solve(random_instance(3, tasks=300, clients=10, strategy="balance_subtopology"), "exact.rack_active")
    assert s.status is Status.OPTIMAL
    assert s.metrics["model"] == "balance-relaxed" or (s.metrics["model"] == "balance-priced"
                                                       and s.metrics["relaxed_fallback"])


def test_new_active_drops_its_standby():
    """A task moved onto a client that held its standby becomes active there and the standby goes."""
    d = {"format": 1, "family": "tasks",
         "topics": {"ina": {"racks": [["a"]]}, "inb": {"racks": [["b"]]}, "cl": {"racks": [["a"], ["a"]]}},
         "tasks": {"0_0": {"inputs": ["ina-0"], "changelogs": ["cl-0"]},
                   "0_1": {"inputs": ["inb-0"], "changelogs": ["cl-1"]}},
         "clients": {"x": {"rack": "b", "active": ["0_0"]},
                     "y": {"rack": "a", "active": ["0_1"], "standby": ["0_0"]}},
         "config": {"rack_aware_assignment_strategy": "min_traffic"}}
    s = solve(from_dict(d), "exact.rack_active")
    assert s.status is Status.OPTIMAL and s.objective == 2  # swap: two moves, no cross-rack traffic
    assert s.assignment["y"] == TaskRoles(("0_0",), (), ())
    assert s.assignment["x"] == TaskRoles(("0_1",), (), ())


def test_cli_solve_rejects_two_owners(tmp_path, capsys):
    """kipopt solve: a task active on two clients is bad input (exit 2, one line naming the field)."""
    from kipopt.cli import main
    import json
    d = random_instance_dict(1, tasks=4, clients=2)
    t = d["clients"]["c0"]["active"][0] if d["clients"]["c0"]["active"] else d["clients"]["c1"]["active"][0]
    other = "c1" if t in d["clients"]["c0"]["active"] else "c0"
    d["clients"][other]["active"].append(t)
    path = tmp_path / "two.json"
    path.write_text(json.dumps(d))
    assert main(["solve", str(path), "--method", "exact.rack_active"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"clients.{other}.active" in err and t in err


def test_options_reach_highs():
    """Time limit and threads reach HiGHS; changing the thread count within one process still solves
    (HiGHS' process-wide pool otherwise makes a run with a different count fail)."""
    instance = random_instance(5, tasks=300, clients=8, strategy="balance_subtopology")  # arrays model
    for threads in (1, 2, None, 1):
        r = rack_tasks.run_rack_active(instance, SolveOptions(time_limit=30.0, threads=threads))
        assert r.status is Status.OPTIMAL and r.objective == r.bound and r.info["presolve"] == "off"
        small = random_instance(5, tasks=20, clients=4, strategy="balance_subtopology")
        r = rack_tasks.run_rack_active(small, SolveOptions(threads=threads))
        assert r.status is Status.OPTIMAL and r.info["model"] == "pulp-full"
        r = rack_tasks.run_rack_active(random_instance(5, tasks=20, clients=4), SolveOptions(threads=threads))
        assert r.status is Status.OPTIMAL and r.info["model"] == "transport"


def test_highs_ilp_fallback_on_a_fractional_vertex():
    """The odd-cycle packing LP has the fractional vertex (½, ½, ½); the ILP path finds 1 (and bound 1)."""
    from kipopt.formulations.highs import ArrayLP, build_csc, is_integral, solve_lp
    cols, rows = np.array([0, 0, 1, 1, 2, 2]), np.array([0, 2, 0, 1, 1, 2])
    start, index, value = build_csc(3, cols, rows, np.ones(6))
    lp = ArrayLP(-np.ones(3), np.zeros(3), np.ones(3), np.full(3, -np.inf), np.ones(3), start, index, value)
    relaxed, exact = solve_lp(lp), solve_lp(lp, integer=True)
    assert relaxed.objective == -1.5 and not is_integral(relaxed.x)
    assert exact.status == "optimal" and exact.objective == -1 and exact.bound == -1 and is_integral(exact.x)
