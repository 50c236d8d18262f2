"""Gaps in natural units: every criterion of every rule, against the exact optimum or its bound.

The scalar ``gap`` column of a result row is relative and, on a lexicographic
rule, jumps to about 1 whenever the first criterion differs. Here each run is
split into its rule's criteria (a rule without ``criteria`` has one: its
objective), each with its own signed gap ``value - reference`` in the
criterion's unit, and a relative gap ``(value - reference) / reference`` where
the reference is positive (where it is 0 a relative gap means nothing).

The reference is the exact method's value on the same instance: its proven
optimum (``reference = optimum``) or, when the exact method stopped without a
proof and the rule has a single criterion, its best bound (``reference =
bound``: the true gap is at most the one shown). A lexicographic rule has no
bound per criterion: where its exact method proved nothing, its criteria are
compared with that method's best answer (``reference = best known``), a
reference no optimum is worse than: on the first criterion the true gap is at
least the one shown, and a negative gap means the run found better than the
exact method's answer.

A negative gap on a criterion is explained: ``traded`` when the run is worse
on an earlier criterion (the optimum gave this one up for a higher one),
``broken`` when the run breaks a hard rule the exact model keeps; else
``unexplained``.

>>> import pandas as pd
>>> rows = pd.DataFrame({"family": ["replicas"], "rule": ["spread"], "method": ["kafka.x"], "item_id": ["a"],
...     "status": ["feasible"], "objective": [5.0], "bound": [3.0], "optimum": [3.0], "violations": [0],
...     "criteria": ['[["imbalance", 3, 1, 0.6], ["moves", 10, 12, -0.2]]']})
>>> [(g.criterion, g.gap, g.relative, g.reference_kind, g.negative) for g in natural_gaps(rows).itertuples()]
[('imbalance', 2.0, 2.0, 'optimum', ''), ('moves', -2.0, -0.16666666666666666, 'optimum', 'traded')]
"""

from __future__ import annotations

import json
import math
from typing import Any

BOOTSTRAP_SEED = 20261125
BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95

UNITS = {
    # single-criterion rules: the objective itself
    "rack_active": ("cost", "traffic + non-overlap cost"),
    "balanced_subtopology": ("cost", "traffic + non-overlap cost"),
    "rack_standby": ("cost", "standby traffic + non-overlap cost"),
    "range": ("cross_rack", "cross-rack partitions"),
    "peer_reassign": ("moves", "replica moves"),
}
"""Rule → (criterion name, unit) for the rules whose objective is one criterion."""

CRITERION_UNITS = {
    "cross_rack": "cross-rack partitions", "revoked": "revoked partitions",
    "replica_imbalance": "replicas over the fair share", "leader_imbalance": "leaders over the fair share",
    "moves": "replica moves", "bytes_moved": "bytes moved",
    "not_caught_up": "actives off a most caught-up client", "balance_excess": "tasks beyond the balance factor",
    "subtopology_spread": "sub-topology spread", "movements": "active moves",
    "tag_shortfall": "distinct tag values short", "standby_imbalance": "standby imbalance per thread",
    "caught_up": "actives off a caught-up client", "standbys": "missing standbys",
    "tags": "distinct tag values short", "balance": "tasks outside the balance window",
    "traffic": "traffic cost", "non_overlap": "tasks moved (non-overlap cost)",
}
"""Criterion name → its unit, for the lexicographic rules' criteria."""

GAP_COLUMNS = ["family", "rule", "method", "item_id", "position", "criterion", "unit", "value", "reference",
               "reference_kind", "gap", "relative", "negative"]

_SOLVED = ("optimal", "feasible")


def unit_of(criterion: str, rule: str | None = None) -> str:
    """The unit a criterion's gap is counted in.

    >>> unit_of("moves"), unit_of("cost", "rack_standby"), unit_of("mystery")
    ('replica moves', 'standby traffic + non-overlap cost', 'mystery')
    """
    if rule in UNITS and UNITS[rule][0] == criterion:
        return UNITS[rule][1]
    return CRITERION_UNITS.get(criterion, criterion)


def natural_gaps(rows: Any) -> Any:
    """One row per (run, criterion) with a reference: the signed gap in the criterion's unit (GAP_COLUMNS)."""
    import pandas as pd
    found: list[tuple] = []
    if len(rows):
        solved = rows[rows["status"].isin(_SOLVED) & rows["objective"].notna()]
        has_criteria = "criteria" in solved.columns
        known = _best_known(solved) if has_criteria and "exact_method" in solved.columns else {}
        for r in solved.itertuples(index=False):
            text = getattr(r, "criteria", None) if has_criteria else None
            if isinstance(text, str):
                found.extend(_lexicographic(r, json.loads(text), known.get((r.item_id, r.rule))))
            elif r.rule in UNITS:
                found.extend(_single(r))
    return pd.DataFrame(found, columns=GAP_COLUMNS)


def _best_known(solved: Any) -> dict[tuple[str, str], dict[str, float]]:
    """Per (item, lexicographic rule) whose exact method stopped without a proof: its answer's criteria."""
    out = {}
    mine = solved[(solved["method"] == solved["exact_method"]) & (solved["status"] == "feasible")]
    for r in mine.itertuples(index=False):
        if isinstance(r.criteria, str):
            out[(r.item_id, r.rule)] = {name: value for name, value, _, _ in json.loads(r.criteria)}
    return out


def _lexicographic(r: Any, criteria: list, known: dict[str, float] | None = None) -> list[tuple]:
    """A run's criteria against the proven optimum's, or, where the exact method proved nothing, against
    its best answer (``best known``: on the first criterion the gap to the optimum is at least this)."""
    out, worse_before = [], False
    broken = bool(r.violations) and r.violations == r.violations
    if known is not None and r.method == r.exact_method:
        return out
    for position, (name, value, reference, _) in enumerate(criteria, start=1):
        kind = "optimum"
        if reference is None and known is not None:
            reference, kind = known.get(name), "best known"
        if reference is None or value is None:
            continue
        gap = float(value) - float(reference)
        negative = "" if gap >= 0 else ("traded" if worse_before else "broken" if broken else "unexplained")
        out.append((r.family, r.rule, r.method, r.item_id, position, name, unit_of(name), float(value),
                    float(reference), kind, gap, _relative(gap, reference), negative))
        worse_before = worse_before or gap > 0
    return out


def _single(r: Any) -> list[tuple]:
    optimum, bound = _number(r.optimum), _number(r.bound)
    reference, kind = (optimum, "optimum") if optimum is not None else (bound, "bound")
    if reference is None:
        return []
    gap = float(r.objective) - reference
    broken = bool(r.violations) and r.violations == r.violations
    negative = "" if gap >= 0 else ("broken" if broken else "unexplained")
    name, unit = UNITS[r.rule]
    return [(r.family, r.rule, r.method, r.item_id, 1, name, unit, float(r.objective), reference, kind, gap,
             _relative(gap, reference), negative)]


def _number(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _relative(gap: float, reference: float) -> float | None:
    return gap / float(reference) if reference > 0 else None


def bootstrap_median(values: Any, seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES,
                     confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """The median and its percentile-bootstrap interval (deterministic: a fixed seed per call).

    >>> bootstrap_median([3.0])
    (3.0, 3.0, 3.0)
    >>> median, low, high = bootstrap_median([0, 1, 2, 3, 4, 5, 6, 7, 8, 100])
    >>> median, low <= median <= high, high < 100
    (4.5, True, True)
    """
    import numpy as np
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return math.nan, math.nan, math.nan
    median = float(np.median(x))
    if x.size == 1:
        return median, median, median
    rng = np.random.default_rng(seed)
    medians = np.median(x[rng.integers(0, x.size, size=(resamples, x.size))], axis=1)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(medians, [tail, 100 - tail])
    return median, float(low), float(high)


_KIND_ORDER = ["optimum", "bound", "best known"]


def against_label(reference: str, others: int) -> str:
    """How a criteria row's ``reference`` reads in a table: one kind, or the first and the others' count.

    >>> against_label("optimum", 0), against_label("optimum/best known", 3)
    ('optimum', 'optimum, best known (3)')
    """
    kinds = reference.split("/")
    return reference if len(kinds) == 1 else f"{kinds[0]}, {' or '.join(kinds[1:])} ({others})"


CRITERIA_COLUMNS = ["family", "rule", "method", "position", "criterion", "unit", "reference", "runs",
                    "runs_against_bound", "at_reference", "median_gap", "gap_low", "gap_high", "max_gap",
                    "relative_runs", "median_relative", "relative_low", "relative_high",
                    "negative", "negative_traded", "negative_broken"]


def criteria_gaps(rows: Any) -> Any:
    """Per family, rule, method and criterion: the median gap in its unit with a 95 % bootstrap interval,
    the same relative to the reference (over the runs whose reference is positive), how often the run
    meets the reference, and its negative gaps by cause. ``reference`` says what the gap is measured
    against: ``optimum``, ``bound`` (every reference a bound only), ``best known`` (the unproven exact
    answer's value) or several joined by ``/`` (``runs_against_bound``: the runs not against an optimum)."""
    import pandas as pd
    gaps = natural_gaps(rows)
    records = []
    for key, part in gaps.groupby(["family", "rule", "method", "position", "criterion", "unit"], sort=True):
        median, low, high = bootstrap_median(part["gap"])
        relative = part["relative"].dropna()
        r_median, r_low, r_high = bootstrap_median(relative)
        bound = int((part["reference_kind"] != "optimum").sum())
        kinds = set(part["reference_kind"])
        kind = next(iter(kinds)) if len(kinds) == 1 else "/".join(sorted(kinds, key=_KIND_ORDER.index))
        records.append(dict(zip(["family", "rule", "method", "position", "criterion", "unit"], key),
                            reference=kind, runs=len(part), runs_against_bound=bound,
                            at_reference=float((part["gap"] == 0).mean()), median_gap=median, gap_low=low,
                            gap_high=high, max_gap=float(part["gap"].max()), relative_runs=len(relative),
                            median_relative=r_median, relative_low=r_low, relative_high=r_high,
                            negative=int((part["gap"] < 0).sum()),
                            negative_traded=int((part["negative"] == "traded").sum()),
                            negative_broken=int((part["negative"] == "broken").sum())))
    return pd.DataFrame(records, columns=CRITERIA_COLUMNS)
