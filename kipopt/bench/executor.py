"""One work item on an executor: rebuild its instance, run the exact method of every rule involved
and then the other methods (each through :func:`~kipopt.bench.method_run.run_method`), and turn the
runs into result rows with their gaps to the exact optimum.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from typing import Any, Mapping

from .grid import load_generator, registered_methods
from .items import WorkItem, stable_hash
from .method_run import NOT_APPLICABLE, MethodRun, _finite, run_method
from .results import write_part

# A relative gap at or below this counts as optimal (objectives are sums of integers).
OPTIMAL_TOLERANCE = 1e-9


@dataclass(frozen=True)
class ItemSettings:
    """What every executor needs besides the item itself (shipped with the closure)."""

    out: str | None
    grace: float
    threads: int
    generator: str
    providers: tuple[str, ...]


def run_item(item: WorkItem, settings: ItemSettings) -> list[dict]:
    """Generate the item's instance, run its methods, and return (and write) its rows.

    Whatever goes wrong (the generator, a provider missing on this executor)
    becomes ``status: error`` rows carrying the message; the job goes on.
    """
    base = {"item_id": item.item_id, "instance_id": item.instance_id, "family": item.family,
            "params": json.dumps(dict(item.params), sort_keys=True), "seed": item.seed,
            "host": socket.gethostname(), "pid": os.getpid()}
    start = time.perf_counter()
    stage = ""
    try:
        registry = registered_methods(settings.providers)
        stage = "generation failed: "
        instance = load_generator(settings.generator)(item.family, item.seed, **dict(item.params))
        base.update(_describe(instance), generate_seconds=time.perf_counter() - start)
        stage = ""
        rows = _run_methods(instance, item, settings, registry, base)
    except Exception as exc:  # noqa: BLE001 - recorded as the item's error rows
        failed = MethodRun("error", message=f"{stage}{type(exc).__name__}: {exc}")
        rows = [_row(base, m, limit, None, failed, None) for m, limit in item.methods]
    if settings.out is not None:
        write_part(settings.out, item.item_id, rows)
    return rows


def _run_methods(instance: Any, item: WorkItem, settings: ItemSettings, registry: Mapping[str, Any],
                 base: dict) -> list[dict]:
    from ..methods import get_rule
    limits = dict(item.methods)
    rules = {m: get_rule(registry[m].rule, item.family) for m in limits}
    exact_runs: dict[str, MethodRun] = {}
    rows = []
    for rule in sorted({r.name: r for r in rules.values()}.values(), key=lambda r: r.name):
        limit = limits.get(rule.exact_method, max(limits.values()))
        run = run_method(instance, rule.exact_method, limit, settings.grace, item.seed, settings.threads)
        exact_runs[rule.name] = run
        rows.append(_row(base, rule.exact_method, limit, rule, run, run))
    scored = [get_rule(name, item.family) for name in item.score_rules]
    for rule in scored:
        if rule.name not in exact_runs:
            limit = limits.get(rule.exact_method, max(limits.values()))
            exact_runs[rule.name] = run_method(instance, rule.exact_method, limit, settings.grace, item.seed,
                                               settings.threads)
            rows.append(_row(base, rule.exact_method, limit, rule, exact_runs[rule.name], exact_runs[rule.name]))
    for method, limit in item.methods:
        rule = rules[method]
        extra = tuple(r.name for r in scored if r.name != rule.name and r.exact_method != method)
        if method == rule.exact_method and not extra:
            continue
        run = run_method(instance, method, limit, settings.grace, item.seed, settings.threads, extra)
        if method != rule.exact_method:
            rows.append(_row(base, method, limit, rule, run, exact_runs[rule.name]))
        rows.extend(_scored_row(base, method, limit, r, run, exact_runs[r.name]) for r in scored if r.name in extra)
    return rows


def _scored_row(base: dict, method: str, limit: float, rule: Any, run: MethodRun, exact: MethodRun) -> dict:
    """``method``'s run scored on another ``rule`` (a ``score_rules`` entry of the grid)."""
    found = (run.metrics or {}).get("scored", {}).get(rule.name)
    if found is None:
        return _row(base, method, limit, rule, run, exact)
    mine = found["criteria"] or {}
    metrics = dict(run.metrics, criteria=mine, criteria_order=list(mine))  # the row's JSON sorts keys
    metrics.pop("scored", None)
    best = (exact.metrics or {}).get("criteria") or {}
    if mine and best and set(mine) == set(best):
        metrics["first_shortfall"], metrics["shortfall"] = next(
            ((c, mine[c] - best[c]) for c in mine if mine[c] != best[c]), (None, 0))
    scored = MethodRun(run.status, _finite(found["objective"]), None, run.seconds, run.peak_memory_mb,
                       run.memory_growth_mb, metrics, run.message, found["violations"])
    row = _row(base, method, limit, rule, scored, exact)
    # the run's status is about its own rule; on this rule it is optimal only when it meets the proven optimum
    row["status"] = "optimal" if row["optimal"] else "feasible"
    return row


def _row(base: dict, method: str, limit: float, rule: Any, run: MethodRun, exact: MethodRun | None) -> dict:
    reference, optimum = _reference(exact)
    ok = run.status in ("optimal", "feasible") and run.objective is not None
    gap = _gap(run.objective, reference) if ok else None
    return dict(base, method=method, rule=rule.name if rule else None,
                exact_method=rule.exact_method if rule else None, status=run.status,
                objective=_finite(run.objective), bound=reference, optimum=optimum, gap=gap,
                optimal=bool(ok and optimum is not None and gap is not None and gap <= OPTIMAL_TOLERANCE
                             and not run.violations),
                violations=run.violations, beats_bound=_beats(run.objective if ok else None, reference, rule),
                seconds=run.seconds, time_limit=limit, peak_memory_mb=run.peak_memory_mb,
                memory_growth_mb=run.memory_growth_mb,
                metrics=json.dumps(run.metrics, sort_keys=True) if run.metrics is not None else None,
                error=run.message if run.status in ("error", "infeasible", NOT_APPLICABLE) else None,
                finished_at=time.time(), criteria=_criteria(run, exact), method_status=run.status)


def _criteria(run: MethodRun, exact: MethodRun | None) -> str | None:
    """Each criterion of a lexicographic rule, in order, with its own signed gap to the exact answer's value
    (JSON): ``(value - optimum) / max(1, |value|, |optimum|)``, in [-1, 1]. Past the first criterion where
    they differ a method may be better than the optimum (the optimum traded it for an earlier one).

    >>> run = MethodRun("feasible", metrics={"criteria": {"imbalance": 3, "moves": 10}})
    >>> best = MethodRun("optimal", metrics={"criteria": {"imbalance": 1, "moves": 12}})
    >>> json.loads(_criteria(run, best))
    [['imbalance', 3, 1, 0.6666666666666666], ['moves', 10, 12, -0.16666666666666666]]
    """
    mine = (run.metrics or {}).get("criteria")
    if not mine:
        return None
    best = (exact.metrics or {}).get("criteria") if exact is not None and exact.status == "optimal" else None
    out = []
    for name, value in mine.items():
        reference = best.get(name) if best else None
        gap = None if reference is None else (value - reference) / max(1.0, abs(value), abs(reference))
        out.append([name, value, reference, gap])
    return json.dumps(out)


def _reference(exact: MethodRun | None) -> tuple[float | None, float | None]:
    """The exact run's best bound, and its objective when it is a proven optimum."""
    if exact is None or exact.status not in ("optimal", "feasible"):
        return None, None
    optimum = exact.objective if exact.status == "optimal" else None
    bound = exact.bound if exact.bound is not None else optimum
    return bound, optimum


def _beats(objective: float | None, bound: float | None, rule: Any) -> bool:
    """True when an objective is better than the exact method's proven bound: the method solved a
    different (usually relaxed) problem, typically by breaking a rule the exact model enforces."""
    if objective is None or bound is None or rule is None:
        return False
    slack = OPTIMAL_TOLERANCE * max(1.0, abs(bound))
    return objective < bound - slack if rule.sense == "min" else objective > bound + slack


def _gap(objective: float | None, reference: float | None) -> float | None:
    from ..solution import relative_gap
    return relative_gap(objective, reference)


def _describe(instance: Any) -> dict:
    """Size (tasks or partitions), nodes (clients, members or brokers) and a content hash."""
    from ..instance import to_dict
    family = instance.family
    if family == "tasks":
        size, nodes = len(instance.tasks), len(instance.clients)
    elif family == "consumers":
        size, nodes = sum(t.partitions for t in instance.topics.values()), len(instance.members)
    else:
        size, nodes = instance.partitions * instance.replication_factor, len(instance.brokers)
    return {"size": size, "nodes": nodes, "instance_sha": stable_hash(to_dict(instance), 32)}
