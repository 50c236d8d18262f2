"""Seconds against instance size per family, from the benchmark's rows: what the paper's scaling tables,
figures and ratios read (``paper/make_paper.py``).

A run counts once, on its method's own rule (a run scored on a second rule has a row per rule), at its
family's natural size (tasks, subscribed partitions, partitions: :func:`kipopt.bench.plots.size_of`). A run
killed at its time limit is *unfinished*: counted beside the medians, never inside them. A ratio of two
median times is given only where both clear :data:`NOISE_FLOOR_SECONDS`.
"""

from __future__ import annotations

from typing import Any

from .pipeline import killed_at_limit

NOISE_FLOOR_SECONDS = 1.0
"""A ratio of two median times is reported only where both are at least this: below it timer and load noise
dominate (the old KIP-925 ratio divided by a ~15 ms exact time that measured 0.012-0.033 s run to run)."""

SCALING_AXES = {"tasks": ("tasks", "clients"), "consumers": ("partitions", "members"),
                "replicas": ("partitions", "brokers")}
"""Per family, what the scaling tables' size and node columns count (replicas: partitions, not replicas)."""


def _missing(x: Any) -> bool:
    return x is None or x != x


def own_rule_rows(rows: Any) -> Any:
    """Each method on the rule it was built for (a grid's ``score_rules`` rows left out)."""
    from .. import methods as registry
    known = registry.methods()
    own = [known[m].rule == r if m in known else True for m, r in zip(rows["method"], rows["rule"])]
    return rows[own] if len(rows) else rows


def family_runs(rows: Any, family: str) -> Any:
    """Every run of a family once (on its method's own rule), its natural size (tasks, subscribed partitions,
    partitions) and whether it did not finish (:func:`~kipopt.bench.pipeline.killed_at_limit`)."""
    from .plots import size_of
    part = rows[rows["family"] == family]
    part = own_rule_rows(part) if len(part) else part
    part = part.assign(natural_size=size_of(part), unfinished=killed_at_limit(part))
    return part[part["natural_size"].notna()]


def family_scaling(rows: Any, family: str) -> tuple[Any, Any]:
    """(median seconds of the finished runs, count of unfinished runs), each indexed by (size, nodes) with a
    column per method of the family."""
    runs = family_runs(rows, family)
    keys = ["natural_size", "nodes", "method"]
    done = runs[runs["status"].isin(["optimal", "feasible"]) & runs["seconds"].notna()]
    medians = done.groupby(keys)["seconds"].median().unstack("method").sort_index()
    unfinished = runs.groupby(keys)["unfinished"].sum().unstack("method").sort_index()
    return medians, unfinished


def scaling_ratios(rows: Any, family: str) -> list[tuple[Any, Any, str, str, float]]:
    """(size, nodes, port, exact, port seconds / exact seconds) for every method with an exact method on its
    rule, at every size where both medians are at least :data:`NOISE_FLOOR_SECONDS`."""
    from .. import methods as registry
    known, rules = registry.methods(), registry.rules()
    medians, _ = family_scaling(rows, family)
    out = []
    for method in medians.columns:
        if method not in known or method.startswith("exact."):
            continue
        exact = rules[known[method].rule].exact_method if known[method].rule in rules else None
        if exact not in medians.columns:
            continue
        for key in medians.index:
            port, ref = medians.loc[key, method], medians.loc[key, exact]
            if not (_missing(port) or _missing(ref)) and min(port, ref) >= NOISE_FLOOR_SECONDS:
                out.append((key[0], key[1], method, exact, float(port / ref)))
    return out
