"""Reading the benchmark's Parquet results back: the summary tables, ``summary.md`` and ``summary.csv``.

The plots are :mod:`.plots`' (``plot`` is re-exported here); the gaps per
criterion in natural units, with bootstrap intervals, are :mod:`.gaps`'.

>>> import pandas as pd
>>> rows = pd.DataFrame({"family": ["tasks"] * 4, "rule": ["r"] * 4, "method": ["kafka.x"] * 4,
...                      "item_id": ["a", "b", "c", "d"],
...                      "status": ["feasible", "optimal", "error", "not_applicable"], "gap": [0.5, 0.0, None, None],
...                      "optimal": [False, True, False, False], "seconds": [1.0, 2.0, 9.0, 0.0],
...                      "violations": [2, 0, None, None], "beats_bound": [True, False, False, False]})
>>> table = summarize(rows)
>>> row = table.iloc[0]
>>> int(row.instances), round(float(row.optimal_share), 3), float(row.mean_gap), float(row.worst_gap), int(row.broken)
(3, 0.333, 0.25, 0.5, 1)
>>> int(row.errors), int(row.infeasible), int(row.timed_out), int(row.not_applicable)
(1, 0, 0, 1)

A ``not_applicable`` row (the method declares it does not apply to that
instance) counts in ``not_applicable`` only: not as an instance, an error,
or a miss of the optimum.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable

from .pipeline import NOT_APPLICABLE, RESULTS_DIR, TIME_LIMIT_PREFIX, killed_at_limit  # noqa: F401 (re-exported)

from .plots import plot  # noqa: F401 - the plots' public name, as before they had their own module

SUMMARY_COLUMNS = ("family", "rule", "method", "instances", "optimal_share", "mean_gap", "worst_gap",
                   "against_bound", "median_seconds", "errors", "infeasible", "timed_out", "not_applicable", "broken",
                   "beats_bound")


def load_results(out: str, item_ids: Iterable[str] | None = None) -> Any:
    """All result rows under ``out`` (optionally only the given items), size parameters as columns."""
    import pandas as pd
    import pyarrow.parquet as pq
    folder = os.path.join(out, RESULTS_DIR)
    wanted = set(item_ids) if item_ids is not None else None
    names = sorted(n for n in os.listdir(folder) if n.endswith(".parquet") and not n.startswith(".")) \
        if os.path.isdir(folder) else []
    if wanted is not None:
        names = [n for n in names if n[:-len(".parquet")] in wanted]
    if not names:
        return pd.DataFrame(columns=[f.name for f in _schema()])
    frame = pd.concat([pq.read_table(os.path.join(folder, n)).to_pandas() for n in names], ignore_index=True)
    params = pd.DataFrame([json.loads(p) for p in frame["params"]], index=frame.index)
    return pd.concat([frame, params.add_prefix("param_")], axis=1)


def _schema() -> Any:
    from .pipeline import result_schema
    return result_schema()


def summarize(rows: Any) -> Any:
    """Per family, rule and method: instances, optimal share, mean and worst gap, median seconds, errors,
    and the runs on instances the method does not apply to (left out of every other column).
    ``against_bound`` counts the runs whose gap is measured against a bound only (the exact method
    stopped without proving its optimum): there the gap is an upper bound on the true one.

    A method scored on a second rule (a grid's ``score_rules``) has a row per rule.
    """
    import pandas as pd
    if len(rows) == 0:
        return pd.DataFrame(columns=list(SUMMARY_COLUMNS))
    keys = ["family", "rule", "method"]
    skipped = (rows["status"] == NOT_APPLICABLE).groupby([rows[k] for k in keys], dropna=False).sum()
    applicable = rows[rows["status"] != NOT_APPLICABLE]
    grouped = applicable.assign(killed=killed_at_limit(applicable)).groupby(keys, sort=True, dropna=False)
    table = pd.DataFrame({
        "instances": grouped["item_id"].nunique(),
        "optimal_share": grouped["optimal"].mean(),
        "mean_gap": grouped["gap"].mean(),
        "worst_gap": grouped["gap"].max(),
        "against_bound": grouped[["gap", "optimum"]].apply(
            lambda g: int((g["gap"].notna() & g["optimum"].isna()).sum())) if "optimum" in rows else 0,
        "median_seconds": grouped["seconds"].median(),
        "errors": grouped["status"].apply(lambda s: int((s == "error").sum())),
        "infeasible": grouped["status"].apply(lambda s: int((s == "infeasible").sum())),
        "timed_out": grouped["killed"].sum(),
        "broken": grouped["violations"].apply(lambda s: int((s.fillna(0) > 0).sum())),
        "beats_bound": grouped["beats_bound"].apply(lambda s: int(s.fillna(False).astype(bool).sum())),
    }).reindex(skipped.index)
    table["not_applicable"] = skipped.astype(int)
    for column in ("instances", "against_bound", "errors", "infeasible", "timed_out", "broken", "beats_bound"):
        table[column] = table[column].fillna(0).astype(int)
    return table.reset_index()[list(SUMMARY_COLUMNS)]


def format_table(table: Any) -> str:
    """The summary as an aligned plain-text table.

    >>> import pandas as pd
    >>> print(format_table(pd.DataFrame([{"family": "tasks", "rule": "r", "method": "exact.a", "instances": 2,
    ...     "optimal_share": 1.0, "mean_gap": 0.0, "worst_gap": 0.0, "median_seconds": 0.25, "errors": 0,
    ...     "not_applicable": 0, "broken": 0, "beats_bound": 0}])))
    family  rule  method   instances  optimal  mean gap  worst gap  vs bound  median s  errors  infeasible  timed out  n/a  broken  beats bound
    tasks   r     exact.a          2   100.0%    0.0000     0.0000         0     0.250       0           0          0    0       0            0
    """
    headers = ["family", "rule", "method", "instances", "optimal", "mean gap", "worst gap", "vs bound", "median s",
               "errors", "infeasible", "timed out", "n/a", "broken", "beats bound"]
    lines = [[str(r.family), str(r.rule), str(r.method), str(int(r.instances)), _pct(r.optimal_share),
              _num(r.mean_gap, 4), _num(r.worst_gap, 4), str(int(getattr(r, "against_bound", 0))),
              _num(r.median_seconds, 3), str(int(r.errors)), str(int(getattr(r, "infeasible", 0))),
              str(int(getattr(r, "timed_out", 0))),
              str(int(r.not_applicable)), str(int(r.broken)),
              str(int(r.beats_bound))] for r in table.itertuples()]
    widths = [max(len(h), *(len(line[i]) for line in lines)) if lines else len(h) for i, h in enumerate(headers)]

    def fmt(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([fmt(headers)] + [fmt(line) for line in lines])


def criteria_summary(rows: Any) -> Any:
    """Per family, rule, method and criterion of a lexicographic rule: how often the method meets the exact
    optimum's value of that criterion, and its mean and worst own (signed) gap there.

    >>> import pandas as pd
    >>> rows = pd.DataFrame({"family": ["replicas"] * 2, "rule": ["spread"] * 2, "method": ["kafka.x"] * 2,
    ...     "criteria": ['[["imbalance", 3, 1, 0.5], ["moves", 10, 10, 0.0]]', '[["imbalance", 1, 1, 0.0]]']})
    >>> criteria_summary(rows).to_dict("records")[0]
    {'family': 'replicas', 'rule': 'spread', 'method': 'kafka.x', 'criterion': 'imbalance', 'instances': 2, 'at_optimum': 0.5, 'mean_gap': 0.25, 'worst_gap': 0.5}
    """
    import pandas as pd
    columns = ["family", "rule", "method", "criterion", "instances", "at_optimum", "mean_gap", "worst_gap"]
    if len(rows) == 0 or "criteria" not in rows:
        return pd.DataFrame(columns=columns)
    found = []
    for r in rows[rows["criteria"].notna()].itertuples():
        for position, (name, _, _, gap) in enumerate(json.loads(r.criteria)):
            if gap is not None:
                found.append((r.family, r.rule, r.method, position, name, gap))
    if not found:
        return pd.DataFrame(columns=columns)
    frame = pd.DataFrame(found, columns=["family", "rule", "method", "position", "criterion", "gap"])
    grouped = frame.groupby(["family", "rule", "method", "position", "criterion"], sort=True)
    table = pd.DataFrame({"instances": grouped["gap"].size(), "at_optimum": grouped["gap"].apply(lambda g: (g == 0).mean()),
                          "mean_gap": grouped["gap"].mean(), "worst_gap": grouped["gap"].max()}).reset_index()
    return table[columns]


def staging(rows: Any, rule: str = "joint") -> Any:
    """The price of staging: per method scored on ``rule``, how often it first falls short at each
    criterion (stage) of the rule's lexicographic order, and by how much on average there.

    >>> import pandas as pd
    >>> rows = pd.DataFrame({"family": ["tasks"] * 3, "rule": ["joint"] * 3, "method": ["kafka.x"] * 3,
    ...     "metrics": ['{"first_shortfall": "traffic", "shortfall": 20}', '{"first_shortfall": null}',
    ...                 '{"first_shortfall": "traffic", "shortfall": 10}']})
    >>> staging(rows).to_dict("records")
    [{'method': 'kafka.x', 'instances': 3, 'stage': 'traffic', 'times': 2, 'share': 0.6666666666666666, 'mean_shortfall': 15.0}]
    """
    import pandas as pd
    part = rows[(rows["rule"] == rule) & rows["metrics"].notna()] if len(rows) else rows
    records = []
    for method, runs in part.groupby("method", sort=True):
        found = [json.loads(m) for m in runs["metrics"]]
        found = [m for m in found if "first_shortfall" in m]
        stages: dict[str, list[float]] = {}
        for m in found:
            if m["first_shortfall"] is not None:
                stages.setdefault(m["first_shortfall"], []).append(m["shortfall"])
        for stage, by in sorted(stages.items()):
            records.append({"method": method, "instances": len(found), "stage": stage, "times": len(by),
                            "share": len(by) / len(found), "mean_shortfall": sum(by) / len(by)})
    return pd.DataFrame(records, columns=["method", "instances", "stage", "times", "share", "mean_shortfall"])


def _pct(x: Any) -> str:
    return "-" if x is None or x != x else f"{100 * float(x):.1f}%"


def _num(x: Any, digits: int) -> str:
    return "-" if x is None or x != x else f"{float(x):.{digits}f}"
