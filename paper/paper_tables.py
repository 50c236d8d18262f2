"""The paper's benchmark tables: what the grid covers, the summary per rule and method, every criterion's gap,
the price of staging, the scaling tables and the findings (one line per Kafka port)."""

from __future__ import annotations

from typing import Any, Callable

from kipopt.bench.scaling import SCALING_AXES, family_scaling
from paper_tex import _groups, _missing, _optimal_count, code, count, num, pct, seconds, tabular, tex_escape


def grid_table(rows: Any) -> str:
    """What the data covers: per family, its rules and methods, items, sizes and seeds."""
    body, keys = [], []
    for family, part in rows.groupby("family", sort=True):
        for rule, runs in part.groupby("rule", sort=True):
            methods = ", ".join(code(m) for m in sorted(runs["method"].unique()))
            body.append([family, code(rule), methods, count(runs["item_id"].nunique()),
                         f"{count(runs['size'].min())}--{count(runs['size'].max())}",
                         count(runs["seed"].nunique())])
            keys.append(family)
    return tabular(r"ll>{\raggedright\arraybackslash}p{6.2cm}rrr", ["family", "rule", "methods", "items", "size", "seeds"], body, _groups(keys))


def summary_table(rows: Any) -> str:
    """Per rule and method: runs, optimal share, scalar gaps (``vs bound``: how many against an unproven exact
    method's bound, an upper bound on the true gap), median seconds, errors (of which timed out: a
    port killed at its time limit, a finding), infeasible answers, runs on instances the method does not apply
    to, broken runs."""
    from kipopt.bench.summary import summarize
    table = summarize(rows)
    body = [[r.family, code(r.rule), code(r.method), count(r.instances), pct(r.optimal_share), num(r.mean_gap),
             num(r.worst_gap), count(r.against_bound), seconds(r.median_seconds), count(r.errors),
             count(r.infeasible), count(r.timed_out), count(r.not_applicable), count(r.broken)]
            for r in table.itertuples()]
    return tabular("lllrrrrrrrrrrr", ["family", "rule", "method", "items", "optimal", "mean gap", "worst gap",
                                      "vs bound", "median s", "errors", "infeasible", "timed out", "n/a", "broken"],
                   body,
                   _groups(list(zip(table.family, table.rule))))


def criteria_table(rows: Any) -> str:
    """Every criterion's gap in its own unit, each method on its own rule: median with its 95 % bootstrap
    interval, relative to the reference where that is positive, against the optimum, (marked $\\leq$) a
    bound or the unproven exact method's best answer (``best known``), and the negative gaps with their
    cause (traded for an earlier criterion, a broken rule)."""
    from kipopt.bench.gaps import against_label, criteria_gaps
    table = criteria_gaps(_own_rule_rows(rows))
    table = table[~table["method"].str.startswith("exact.") | (table["max_gap"] != 0)]
    body = []
    for r in table.itertuples():
        bound = r"$\leq$" if r.reference == "bound" else ""
        against = tex_escape(against_label(r.reference, r.runs_against_bound))
        body.append([code(r.rule), code(r.method), f"{r.position}. {code(r.criterion)}", tex_escape(r.unit), against,
                     count(r.runs), pct(r.at_reference),
                     bound + _interval(r.median_gap, r.gap_low, r.gap_high, _natural),
                     _interval(r.median_relative, r.relative_low, r.relative_high, pct)
                     + (f" (of {count(r.relative_runs)})" if 0 < r.relative_runs < r.runs else ""),
                     _negative_causes(r)])
    return tabular(r"lll>{\raggedright\arraybackslash}p{3cm}lrrrrl",
                   ["rule", "method", "criterion", "unit", "against", "runs", "at ref.", "median gap [95\\,\\% CI]",
                    "relative [95\\,\\% CI]", "negative"], body, _groups(list(zip(table.rule, table.method))))


def _natural(x: Any) -> str:
    """A gap in its unit: integers as integers, else three significant digits (to the unit from 1,000 up:
    never an exponent)."""
    if _missing(x):
        return "--"
    x = float(x)
    if x.is_integer() or abs(x) >= 1000:
        return count(round(x))
    return f"{x:.3g}"


def _interval(value: Any, low: Any, high: Any, fmt: Callable[[Any], str]) -> str:
    if _missing(value):
        return "--"
    if low == high == value:
        return fmt(value)
    return f"{fmt(value)} [{fmt(low)}, {fmt(high)}]"


def _negative_causes(r: Any) -> str:
    if not r.negative:
        return "--"
    parts = [f"{count(n)} {what}" for n, what in ((r.negative_traded, "traded"), (r.negative_broken, "broken")) if n]
    other = r.negative - r.negative_traded - r.negative_broken
    if other:
        parts.append(f"{count(other)} unexplained")
    return ", ".join(parts)


def _own_rule_rows(rows: Any) -> Any:
    """Each method on the rule it was built for (its ``score_rules`` rows are the staging table's)."""
    from kipopt import methods as registry
    known = registry.methods()
    own = [known[m].rule == r if m in known else True for m, r in zip(rows["method"], rows["rule"])]
    return rows[own]


def staging_table(rows: Any) -> str:
    from kipopt.bench.summary import staging
    table = staging(rows)
    body = [[code(r.method), count(r.instances), code(r.stage), count(r.times), pct(r.share),
             num(r.mean_shortfall, 1)] for r in table.itertuples()]
    return tabular("lrlrrr", ["method", "items", "first short at", "times", "share", "mean shortfall"], body,
                   _groups(list(table.method)))


def scaling_frame(rows: Any) -> Any:
    """Median seconds per instance size of every method of the KIP-925 ``rack_active`` rule."""
    part = rows[(rows["rule"] == "rack_active") & rows["seconds"].notna() & rows["status"].isin(["optimal", "feasible"])]
    return part.groupby(["size", "nodes", "method"])["seconds"].median().unstack("method").sort_index()


def scaling_table(rows: Any) -> str:
    frame = scaling_frame(rows)
    methods = list(frame.columns)
    body = [[count(size), count(nodes)] + [seconds(frame.loc[(size, nodes), m]) for m in methods]
            for size, nodes in frame.index]
    return tabular("rr" + "r" * len(methods), ["tasks", "clients"] + [code(m) for m in methods], body)


def scaling_family_table(rows: Any, family: str) -> str:
    """Median seconds per size of every method of ``family``; ``+n``: n runs did not finish (not in the median)."""
    medians, unfinished = family_scaling(rows, family)
    if medians.empty and unfinished.empty:
        return tabular("l", ["no runs of " + family], [])
    index = unfinished.index
    medians = medians.reindex(index=index, columns=unfinished.columns)
    methods = list(unfinished.columns)
    body = []
    for key in index:
        cells = []
        for m in methods:
            late = int(unfinished.loc[key, m]) if not _missing(unfinished.loc[key, m]) else 0
            cells.append(seconds(medians.loc[key, m]) + (f" (+{late})" if late else ""))
        body.append([count(key[0]), count(key[1])] + cells)
    size, nodes = SCALING_AXES[family]
    return tabular("rr" + "r" * len(methods), [size, nodes] + [code(m) for m in methods], body)


def findings_table(rows: Any) -> str:
    """One line per Kafka port: the rule it is measured on, how often it is optimal, its gaps."""
    from kipopt.bench.summary import summarize
    table = summarize(rows)
    ports = table[table["method"].str.startswith("kafka.")]
    body = [[code(r.method), code(r.rule), f"{count(_optimal_count(r))}/{count(r.instances)}",
             pct(r.optimal_share), num(r.mean_gap), num(r.worst_gap), count(r.broken)]
            for r in ports.sort_values(["family", "method", "rule"]).itertuples()]
    return tabular("llrrrrr", ["Kafka port", "rule", "optimal", "share", "mean gap", "worst gap", "broken"], body)
