"""Readable member-level PuLP models of the KIP-881 rules (one variable per partition × subscriber).

For small instances, for reading, for export (:func:`write_model`), and as
the independent reference the grouped models of
:mod:`~kipopt.formulations.consumers.range` and
:mod:`~kipopt.formulations.consumers.balanced` are tested against.

``range`` (:func:`range_model`)::

    min  Σ c_{p,m} x_{p,m}
    s.t. Σ_{m ∈ N_t} x_{p,m} = 1                 every partition p of topic t
         lo_t <= Σ_{p ∈ t} x_{p,m} <= hi_t       every t, m ∈ N_t

Bipartite, totally unimodular: the LP vertex is integral.

``balanced`` restricted to the most balanced (dec-min) assignments
(:func:`balanced_model`), lexicographic in two solves and integer
throughout (the side constraint of the second solve is not unimodular)::

    A:  S* = min Σ_{m,k} (2k + 1) z_{m,k}
         s.t. Σ_{m ∈ N_t} x_{p,m} = 1,  Σ_p x_{p,m} = Σ_k z_{m,k},  x ∈ {0,1},  0 <= z <= 1
    B:  min  W Σ c_{p,m} x_{p,m} - Σ_{p owned by m} x_{p,m}      (+ O, the owned count)
         s.t. the rows of A and Σ (2k + 1) z_{m,k} <= S*

``z_{m,k}`` is the k-th partition of member m, priced at the increase of
``x_m²``; convexity fills them in order, so ``S* = min Σ_m x_m²``.

``balanced`` itself, the sticky assignor's pairwise balance, as a MILP
(:func:`pairwise_model`): with a level ``λ_t`` per topic and ``h_{t,m}``
"m holds some partition of t",

    min  W Σ c_{p,m} x_{p,m} - Σ_{p owned by m} x_{p,m}
    s.t. Σ_{m ∈ N_t} x_{p,m} = 1,   n_m = Σ_p x_{p,m}
         n_m >= λ_t                                 every t, m ∈ N_t
         Σ_{p ∈ t} x_{p,m} <= P_t h_{t,m}
         n_m <= λ_t + 1 + U_m (1 - h_{t,m}),  L_m <= n_m <= U_m
         x, h ∈ {0,1},  λ integer

(for every topic, holders exceed its least-loaded subscriber by at most
one, which is the rule with ``λ_t`` its least load; ``[L_m, U_m]`` are the
level bounds of :func:`~kipopt.formulations.consumers.groups.level_bounds`,
valid for every pairwise balanced assignment). Not unimodular, and it
grows with partitions × members: small instances only.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from kipopt.instance import ConsumersInstance

from kipopt.formulations.consumers.groups import class_counts, layout, level_bounds
from kipopt.formulations.consumers.rules import cross_rack, is_cross_rack, owners

Assignment = dict[str, tuple[str, ...]]


def subscribers(instance: ConsumersInstance) -> dict[str, list]:
    found = defaultdict(list)
    for m in instance.members:
        for t in m.topics:
            if instance.topics[t].partitions > 0:
                found[t].append(m)
    return found


def pairs(instance: ConsumersInstance) -> int:
    """The number of partition × subscriber pairs: the member-level models' column count."""
    return sum(instance.topics[t].partitions * len(ms) for t, ms in subscribers(instance).items())


def _assignment_vars(instance: ConsumersInstance, prob, integer: bool):
    import pulp

    cat = pulp.LpBinary if integer else pulp.LpContinuous
    x = {}
    for t, subs in subscribers(instance).items():
        for p in range(instance.topics[t].partitions):
            name = f"{t}-{p}"
            row = [x.setdefault((name, m.id), pulp.LpVariable(f"x_{len(x)}", 0, 1, cat)) for m in subs]
            prob += pulp.lpSum(row) == 1, f"partition_{len(prob.constraints)}"
    return x


def _cross_cost(instance: ConsumersInstance, x) -> list:
    racks, rack_of = instance.partition_racks, {m.id: m.rack for m in instance.members}
    return [v for (p, m), v in x.items() if is_cross_rack(rack_of[m], racks[p])]


def range_model(instance: ConsumersInstance, integer: bool = False):
    """``(pulp.LpProblem, x)`` with ``x[(partition, member)]``."""
    import pulp

    prob = pulp.LpProblem("kip881_range", pulp.LpMinimize)
    x = _assignment_vars(instance, prob, integer)
    for t, subs in subscribers(instance).items():
        size, n = instance.topics[t].partitions, len(subs)
        for m in subs:
            held = pulp.lpSum(x[(f"{t}-{p}", m.id)] for p in range(size))
            prob += held >= size // n, f"lo_{len(prob.constraints)}"
            prob += held <= -(-size // n), f"hi_{len(prob.constraints)}"
    prob += pulp.lpSum(_cross_cost(instance, x))
    return prob, x


def balanced_model(instance: ConsumersInstance, squares: int | None = None):
    """Stage A when ``squares`` is None, else stage B with ``Σ x_m² <= squares``; integer variables."""
    import pulp

    prob = pulp.LpProblem("kip881_balanced", pulp.LpMinimize)
    x = _assignment_vars(instance, prob, integer=True)
    held: dict[str, list] = defaultdict(list)
    for (p, m), v in x.items():
        held[m].append(v)
    cost = []
    for m, vs in held.items():
        z = [pulp.LpVariable(f"z_{len(cost) + k}", 0, 1) for k in range(len(vs))]
        prob += pulp.lpSum(vs) == pulp.lpSum(z), f"count_{len(prob.constraints)}"
        cost += [(2 * k + 1) * zk for k, zk in enumerate(z)]
    if squares is None:
        prob += pulp.lpSum(cost)
        return prob, x
    prob += pulp.lpSum(cost) <= squares, "most_balanced"
    keep = [x[(p, m)] for p, m in owners(instance).items() if (p, m) in x]
    weight = len(owners(instance)) + 1
    prob += weight * pulp.lpSum(_cross_cost(instance, x)) - pulp.lpSum(keep)
    return prob, x


def member_levels(instance: ConsumersInstance) -> tuple[dict[str, int], dict[str, int]]:
    """Per member id, the level bounds ``L`` and ``U`` of its subscription class."""
    lay = layout(instance)
    classes, member_class, count, sizes = class_counts(instance, lay)
    L, U = level_bounds(lay, sizes, classes, count)
    return ({m: int(L[c]) for m, c in zip(lay.members, member_class)},
            {m: int(U[c]) for m, c in zip(lay.members, member_class)})


def pairwise_model(instance: ConsumersInstance, cutoff: float | None = None):
    """``(pulp.LpProblem, x)``: the rule ``balanced`` exactly, as a MILP; ``cutoff`` (rule units)
    keeps only assignments at least that good (a known answer's value)."""
    import pulp

    prob = pulp.LpProblem("kip881_pairwise", pulp.LpMinimize)
    x = _assignment_vars(instance, prob, integer=True)
    subs = subscribers(instance)
    held: dict[str, list] = defaultdict(list)
    for (_, mid), v in x.items():
        held[mid].append(v)
    low, high = member_levels(instance)
    for m in instance.members:  # valid cuts: every pairwise balanced count lies in [L, U]
        prob += pulp.lpSum(held[m.id]) >= low[m.id], f"L_{len(prob.constraints)}"
        prob += pulp.lpSum(held[m.id]) <= high[m.id], f"U_{len(prob.constraints)}"
    for t, members in subs.items():
        size = instance.topics[t].partitions
        level = pulp.LpVariable(f"level_{len(prob.constraints)}", 0, None, pulp.LpInteger)
        for m in members:
            count = pulp.lpSum(held[m.id])
            holds = pulp.LpVariable(f"h_{len(prob.constraints)}", cat=pulp.LpBinary)
            prob += count >= level, f"least_{len(prob.constraints)}"
            prob += pulp.lpSum(x[(f"{t}-{p}", m.id)] for p in range(size)) <= size * holds, f"h_{len(prob.constraints)}"
            prob += count <= level + 1 + high[m.id] * (1 - holds), f"most_{len(prob.constraints)}"
    keep = [x[(p, m)] for p, m in owners(instance).items() if (p, m) in x]
    objective = (len(owners(instance)) + 1) * pulp.lpSum(_cross_cost(instance, x)) - pulp.lpSum(keep)
    prob += objective
    if cutoff is not None:
        prob += objective <= cutoff - len(owners(instance)), "cutoff"
    return prob, x


def solve_pairwise(instance: ConsumersInstance, time_limit: float | None = None, threads: int | None = None,
                   cutoff: float | None = None):
    """``(assignment or None, status, bound)`` of :func:`pairwise_model`; ``bound`` in rule units
    (with a ``cutoff``, "infeasible" means nothing beats it: the bound is then the cutoff)."""
    from kipopt.formulations.tasks.rack.pulp_models import _solve

    prob, x = pairwise_model(instance, cutoff)
    status = _solve(prob, mip=True, time_limit=time_limit, threads=threads)
    offset = len(owners(instance))
    bound = None
    try:
        bound = float(prob.solverModel.getInfo().mip_dual_bound) + offset
    except AttributeError:
        pass
    if status == "infeasible" and cutoff is not None:
        return None, "optimal", float(cutoff)
    if status not in ("optimal", "feasible"):
        return None, status, bound
    return _read(instance, x), status, bound


def _read(instance: ConsumersInstance, x) -> Assignment:
    lists: dict[str, list[str]] = {m.id: [] for m in instance.members}
    for (p, m), v in x.items():
        if (v.value() or 0) > 0.5:
            lists[m].append(p)
    return {m: tuple(ps) for m, ps in lists.items()}


def solve_range_members(instance: ConsumersInstance, time_limit: float | None = None, threads: int | None = None):
    """``(assignment or None, status, cross-rack)`` of :func:`range_model` (LP, then ILP if fractional)."""
    from kipopt.formulations.tasks.rack.pulp_models import _integral, _solve

    prob, x = range_model(instance)
    status = _solve(prob, mip=False, time_limit=time_limit, threads=threads)
    if status == "optimal" and not _integral(x.values()):
        prob, x = range_model(instance, integer=True)
        status = _solve(prob, mip=True, time_limit=time_limit, threads=threads)
    if status not in ("optimal", "feasible"):
        return None, status, None
    assignment = _read(instance, x)
    return assignment, status, float(cross_rack(instance, assignment))


def solve_balanced_members(instance: ConsumersInstance, time_limit: float | None = None):
    """``(assignment or None, status, min Σ x²)`` of :func:`balanced_model`, stages A then B."""
    from kipopt.formulations.tasks.rack.pulp_models import _solve

    prob, x = balanced_model(instance)
    status = _solve(prob, mip=True, time_limit=time_limit, threads=None)
    if status != "optimal":
        return None, status, None
    squares = sum(len(v) ** 2 for v in _read(instance, x).values())
    prob, x = balanced_model(instance, squares)
    status = _solve(prob, mip=True, time_limit=time_limit, threads=None)
    return (_read(instance, x) if status in ("optimal", "feasible") else None), status, squares


def write_model(instance: ConsumersInstance, path: str | Path, rule: str = "range") -> Path:
    """Write the member-level model of ``rule`` to ``path`` (``.mps`` or ``.lp``); for ``balanced``
    stage A (the most balanced counts)."""
    path = Path(path)
    prob, _ = range_model(instance) if rule == "range" else balanced_model(instance)
    if path.suffix == ".lp":
        prob.writeLP(str(path))
    else:
        prob.writeMPS(str(path))
    return path
