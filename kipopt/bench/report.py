"""``summary.md`` and ``summary.csv``: what ``kipopt bench`` writes next to its Parquet.

``summary.csv`` is one tidy table: a row per (family, rule, method,
criterion) with the method's columns of :func:`~.summary.summarize` and the
criterion's gap in its own unit (:func:`~.gaps.criteria_gaps`); a method with
no gap to report (every run an error, or no reference) keeps one row with an
empty criterion. ``summary.md`` shows the same as readable tables, the gaps as
medians with their 95 % bootstrap intervals.
"""

from __future__ import annotations

import math
import os
from typing import Any

from .gaps import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, CONFIDENCE, against_label, criteria_gaps
from .summary import staging, summarize


def summary_frame(rows: Any, methods: Any = None, gaps: Any = None) -> Any:
    """The tidy table of ``summary.csv`` (from ``summarize(rows)`` and ``criteria_gaps(rows)`` when given)."""
    methods = summarize(rows) if methods is None else methods
    gaps = criteria_gaps(rows) if gaps is None else gaps
    keys = ["family", "rule", "method"]
    if len(methods) == 0:
        return methods.reindex(columns=list(methods.columns) + [c for c in gaps.columns if c not in keys])
    return methods.merge(gaps, on=keys, how="left").sort_values(keys + ["position"], kind="stable",
                                                                  na_position="first")


def write_summary(rows: Any, folder: str, source: str | None = None) -> list[str]:
    """Write ``summary.csv`` and ``summary.md`` into ``folder``; return their paths."""
    os.makedirs(folder, exist_ok=True)
    methods, gaps = summarize(rows), criteria_gaps(rows)
    csv_path = os.path.join(folder, "summary.csv")
    summary_frame(rows, methods, gaps).to_csv(csv_path, index=False)
    md_path = os.path.join(folder, "summary.md")
    with open(md_path, "w", encoding="utf-8") as handle:
        handle.write(markdown(rows, source, methods, gaps))
    return [csv_path, md_path]


def markdown(rows: Any, source: str | None = None, methods: Any = None, gaps: Any = None) -> str:
    """The summary as Markdown: the methods, their gaps per criterion, the price of staging."""
    methods = summarize(rows) if methods is None else methods
    gaps = criteria_gaps(rows) if gaps is None else gaps
    items = rows["item_id"].nunique() if len(rows) else 0
    parts = [f"# kipopt bench summary\n\n{items} work items, {len(rows)} result rows"
             + (f", grid {source}" if source else "") + ".\n",
             "## Methods\n\n" + _methods_table(methods) + "\n\n" + _METHODS_NOTE,
             "## Gaps per criterion, in natural units\n\n" + _criteria_table(gaps) + "\n\n"
             + _CRITERIA_NOTE.format(level=round(100 * CONFIDENCE), resamples=BOOTSTRAP_RESAMPLES,
                                     seed=BOOTSTRAP_SEED)]
    price = staging(rows) if len(rows) else []
    if len(price):
        parts.append("## Price of staging (joint rule)\n\n" + _staging_table(price) + "\n\n" + _STAGING_NOTE)
    return "\n\n".join(p.rstrip() for p in parts) + "\n"


_METHODS_NOTE = (
    "*optimal*: share of runs at the proven optimum of the rule with no broken rule. *gap*: relative gap of "
    "the rule's scalar objective; on a lexicographic rule it jumps to about 1 whenever the first criterion "
    "differs, so read the criteria below. *gap against*: `optimum` when every exact run proved its optimum, "
    "else how many gaps are against a bound only (an upper bound on the true gap). A method listed under a "
    "rule that is not its own is scored on that rule (the grid's `score_rules`); its status there is its own. "
    "*infeasible*: runs the method answered infeasible (it says which rule it cannot meet; no gap). "
    "*timed out*: errors that are runs killed at their time limit (for a port of Kafka's algorithm, which has "
    "no limit of its own, a finding: it did not finish). *n/a*: runs on instances the method declares it does "
    "not apply to (e.g. a KIP-848 server assignor on a partition claimed twice), outside every other column.")

_CRITERIA_NOTE = (
    "Each criterion's gap is `value - reference` in the criterion's unit, relative as `gap / reference` where "
    "the reference is positive. *against*: the proven optimum, or where the exact method proved none its "
    "bound (single-criterion rules; the gap shown is then at most `≤` that much) or its best answer "
    "(*best known*, lexicographic rules; on the first criterion the true gap is then at least that much). "
    "Medians with "
    "{level} % percentile-bootstrap intervals ({resamples} resamples, seed {seed}). A negative gap is a run "
    "better than the optimum on that criterion: *traded* when it is worse on an earlier criterion (the "
    "optimum gave this one up for a higher one), *broken* when it breaks a hard rule the exact model keeps.")

_STAGING_NOTE = "Where each method first falls short of the joint optimum, and by how much there (that stage's unit)."


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(headers: list[str], body: list[list[str]], align: str) -> str:
    rule = ["---:" if a == "r" else "---" for a in align]
    return "\n".join([_row(headers), _row(rule)] + [_row(cells) for cells in body])


def _methods_table(table: Any) -> str:
    body = [[r.family, f"`{r.rule}`", f"`{r.method}`", str(int(r.instances)), _pct(r.optimal_share),
             _num(r.mean_gap, 4), _num(r.worst_gap, 4), _against(r.against_bound, r.mean_gap),
             _num(r.median_seconds, 3), str(int(r.errors)), str(int(getattr(r, "infeasible", 0))),
             str(int(getattr(r, "timed_out", 0))), str(int(r.not_applicable)), str(int(r.broken)),
             str(int(r.beats_bound))] for r in table.itertuples()]
    return _table(["family", "rule", "method", "runs", "optimal", "mean gap", "worst gap", "gap against",
                   "median s", "errors", "infeasible", "timed out", "n/a", "broken", "beats bound"], body,
                  "lllrrrrlrrrrrrr")


def _against(bound: int, gap: Any) -> str:
    if gap != gap or gap is None:
        return "-"
    return "optimum" if not bound else f"bound ({int(bound)})"


def _criteria_table(table: Any) -> str:
    body = []
    for r in table.itertuples():
        prefix = "≤ " if r.reference == "bound" else ""
        against = against_label(r.reference, r.runs_against_bound)
        body.append([f"`{r.rule}`", f"`{r.method}`", f"{r.position}. {r.criterion}", r.unit, against,
                     str(r.runs), _pct(r.at_reference),
                     prefix + _interval(r.median_gap, r.gap_low, r.gap_high, _count),
                     prefix + _count(r.max_gap),
                     _interval(r.median_relative, r.relative_low, r.relative_high, _signed_pct)
                     + (f" (of {r.relative_runs})" if 0 < r.relative_runs < r.runs else ""),
                     _negative(r)])
    return _table(["rule", "method", "criterion", "unit", "against", "runs", "at reference",
                   "median gap [95 % CI]", "largest gap", "median relative [95 % CI]", "negative gaps"],
                  body, "llllrrrrrrl")


def _negative(r: Any) -> str:
    if not r.negative:
        return "-"
    causes = [f"{n} {what}" for n, what in ((r.negative_traded, "traded for an earlier criterion"),
                                            (r.negative_broken, "breaking a rule"))
              if n]
    other = r.negative - r.negative_traded - r.negative_broken
    if other:
        causes.append(f"{other} unexplained")
    return f"{r.negative}: " + ", ".join(causes)


def _staging_table(table: Any) -> str:
    body = [[f"`{r.method}`", str(r.instances), r.stage, str(r.times), _pct(r.share), _count(r.mean_shortfall)]
            for r in table.itertuples()]
    return _table(["method", "runs", "first short at", "times", "share", "mean shortfall"], body, "lrlrrr")


def _interval(value: Any, low: Any, high: Any, fmt: Any) -> str:
    if value is None or value != value:
        return "-"
    if low == high == value:
        return fmt(value)
    return f"{fmt(value)} [{fmt(low)}, {fmt(high)}]"


def _count(x: Any) -> str:
    """A gap in natural units: integers as integers, else three significant digits.

    >>> _count(3.0), _count(-2.5), _count(0.3333333), _count(float("nan"))
    ('3', '-2.5', '0.333', '-')
    """
    if x is None or x != x:
        return "-"
    x = float(x)
    return f"{int(x)}" if x.is_integer() else f"{x:.3g}"


def _signed_pct(x: float) -> str:
    return f"{100 * x:.1f}%" if math.isfinite(x) else "-"


def _pct(x: Any) -> str:
    return "-" if x is None or x != x else f"{100 * float(x):.1f}%"


def _num(x: Any, digits: int) -> str:
    return "-" if x is None or x != x else f"{float(x):.{digits}f}"
