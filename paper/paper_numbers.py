"""Every number the text cites (:func:`numbers`, by key) and the macro file that holds them
(:func:`numbers_tex`, ``numbers.tex``: ``\\kipnum{key}`` prints one)."""

from __future__ import annotations

import json
from typing import Any

from kipopt.bench.scaling import NOISE_FLOOR_SECONDS, family_scaling, scaling_ratios
from paper_data import GRID, JAVA_REFERENCE, SCALING_FAMILIES
from paper_tables import scaling_frame
from paper_tex import _missing, _optimal_count, count, num, pct, seconds


def numbers(rows: Any) -> dict[str, str]:
    r"""Every number the text cites, by key; ``\kipnum{key}`` prints it (numbers.tex).

    Keys: ``items``, ``runs``, ``methods``, ``rules``, ``errors``, ``<family>/items``, and per
    (rule, method) ``<rule>/<method>/optimal|optimal-count|instances|mean-gap|worst-gap|median-s|broken|timed-out|
    vs-bound|errors`` (``vs-bound``: runs whose gap is against a bound, the exact method unproven);
    ``scaling/<method>/<tasks>`` (median seconds at that size), ``scaling/largest``,
    ``scaling/speedup`` (port / exact at the largest size); ``java/<tasks>`` (the reference times);
    ``mixed/<partitions>/partitions|instances|optimal-count|median-gap|worst-gap`` (``exact.balanced`` on the
    consumer groups with mixed subscriptions, gaps in per cent).
    """
    from kipopt.bench.summary import summarize
    out = {"items": count(rows["item_id"].nunique()), "runs": count(len(rows)),
           "methods": count(rows["method"].nunique()), "rules": count(rows["rule"].nunique()),
           "errors": count(int((rows["status"] == "error").sum())),
           "seeds": count(rows["seed"].nunique())}
    for family, part in rows.groupby("family"):
        out[f"{family}/items"] = count(part["item_id"].nunique())
    for r in summarize(rows).itertuples():
        key = f"{r.rule}/{r.method}"
        out[f"{key}/optimal"] = pct(r.optimal_share)
        out[f"{key}/optimal-count"] = count(_optimal_count(r))
        out[f"{key}/instances"] = count(r.instances)
        out[f"{key}/mean-gap"] = num(r.mean_gap)
        out[f"{key}/worst-gap"] = num(r.worst_gap)
        out[f"{key}/median-s"] = seconds(r.median_seconds)
        out[f"{key}/broken"] = count(r.broken)
        out[f"{key}/timed-out"] = count(r.timed_out)
        out[f"{key}/vs-bound"] = count(r.against_bound)
        out[f"{key}/errors"] = count(r.errors)
    ports = [k for k in out if k.endswith("/optimal") and "/kafka." in k]
    out["ports"] = count(len(ports))
    out.update(_grid_numbers(rows))
    out.update(_mixed_numbers(rows))
    out.update(_scaling_numbers(rows))
    for family in SCALING_FAMILIES:
        out.update(_family_scaling_numbers(rows, family))
    for tasks, clients, secs in JAVA_REFERENCE:
        out[f"java/{tasks}"] = seconds(secs)
        out[f"java/{tasks}/clients"] = count(clients)
        out[f"java/{tasks}/tasks"] = count(tasks)
    return out


def _mixed_numbers(rows: Any) -> dict[str, str]:
    """``exact.balanced`` on mixed subscriptions, per partition count: how many, how many proven, and the
    median and worst gap ``(objective - bound) / objective`` in per cent (rows as :func:`load` reads them:
    with ``param_*`` columns; none without them)."""
    if not {"param_subscriptions", "param_partitions"} <= set(rows.columns):
        return {}
    mixed = rows[(rows["method"] == "exact.balanced") & (rows["param_subscriptions"] == "mixed")]
    out = {}
    for size, part in mixed.groupby("param_partitions"):
        gap = 100.0 * (part["objective"] - part["bound"]) / part["objective"]
        out[f"mixed/{int(size)}/partitions"] = count(int(size))
        out[f"mixed/{int(size)}/instances"] = count(len(part))
        out[f"mixed/{int(size)}/optimal-count"] = count(int((part["status"] == "optimal").sum()))
        out[f"mixed/{int(size)}/median-gap"] = f"{gap.median():.2f}"
        out[f"mixed/{int(size)}/worst-gap"] = f"{gap.max():.2f}"
    return out


GRID_SIZES = {"tasks": (("", "tasks"), ("clients-", "clients")),
              "consumers": (("", "partitions"), ("members-", "members")),
              "replicas": (("", "partitions"), ("brokers-", "brokers"))}
"""Per family, the grid's size ranges the setup paragraph cites: (key prefix, generator parameter)."""


def _grid_numbers(rows: Any) -> dict[str, str]:
    """``grid/time-limit`` and ``grid/grace`` (seconds, the paper grid's defaults) and, per family,
    ``grid/<family>/min|max`` and ``grid/<family>/<nodes>-min|-max`` (the generator's parameters)."""
    import tomllib
    grid = tomllib.loads(GRID.read_text()) if GRID.exists() else {}
    limit = grid.get("time_limit", rows["time_limit"].max())
    out = {"grid/time-limit": count(int(limit)),
           "grid/grace": count(int(grid["grace"])) if "grace" in grid else "--"}
    for family, part in rows.groupby("family"):
        params = [json.loads(p) for p in part["params"].drop_duplicates()]
        for prefix, name in GRID_SIZES.get(family, ()):
            values = [p[name] for p in params if name in p]
            if values:
                out[f"grid/{family}/{prefix}min"] = count(min(values))
                out[f"grid/{family}/{prefix}max"] = count(max(values))
    return out


def _scaling_numbers(rows: Any) -> dict[str, str]:
    frame = scaling_frame(rows)
    if frame.empty:
        return {}
    out = {}
    for (size, _), values in frame.iterrows():
        for method, value in values.items():
            out[f"scaling/{method}/{int(size)}"] = seconds(value)
    (largest, clients), last = frame.index[-1], frame.iloc[-1]
    out["scaling/largest"] = count(largest)
    out["scaling/largest-clients"] = count(clients)
    port, exact = last.get("kafka.rack_active"), last.get("exact.rack_active")
    if not (_missing(port) or _missing(exact)) and exact > 0 and port >= NOISE_FLOOR_SECONDS:
        # below the noise floor the exact time only bounds the ratio: at least port / floor
        ratio, prefix = (port / exact, "") if exact >= NOISE_FLOOR_SECONDS else (port / NOISE_FLOOR_SECONDS, r"$\geq$")
        out["scaling/speedup"] = prefix + f"{ratio:,.0f}".replace(",", "{,}")
    return out


def _family_scaling_numbers(rows: Any, family: str) -> dict[str, str]:
    """``scaling/<family>/largest`` (and ``-nodes``), ``scaling/<family>/<method>/largest-s`` (median seconds at
    the largest size), ``scaling/<family>/<method>/unfinished`` (runs that did not finish in the family),
    ``scaling/<family>/<port>/ratio`` (port / exact at the largest size where both are above the noise floor,
    with ``ratio-size``), and ``scaling/noise-floor``."""
    medians, unfinished = family_scaling(rows, family)
    out = {"scaling/noise-floor": seconds(NOISE_FLOOR_SECONDS)}
    if len(unfinished.index):
        size, nodes = unfinished.index[-1]
        out[f"scaling/{family}/largest"] = count(size)
        out[f"scaling/{family}/largest-nodes"] = count(nodes)
        for method in unfinished.columns:
            out[f"scaling/{family}/{method}/unfinished"] = count(int(unfinished[method].fillna(0).sum()))
            if method in medians.columns and (size, nodes) in medians.index:
                out[f"scaling/{family}/{method}/largest-s"] = seconds(medians.loc[(size, nodes), method])
    for size, _, port, _, ratio in scaling_ratios(rows, family):  # ascending sizes: the largest one stays
        out[f"scaling/{family}/{port}/ratio"] = f"{ratio:,.0f}".replace(",", "{,}") if ratio >= 10 else f"{ratio:.1f}"
        out[f"scaling/{family}/{port}/ratio-size"] = count(size)
    return out


def numbers_tex(values: dict[str, str]) -> str:
    lines = ["% Generated by paper/make_paper.py from paper/data/ (results.parquet, conformance.json, "
             "kafka_python.json): do not edit.",
             r"% \kipnum{key} prints a number; an unknown key stops the build.",
             r"\makeatletter",
             r"\newcommand{\kipnum}[1]{\@ifundefined{kipnum@#1}{\errmessage{kipnum: no number #1}}"
             r"{\@nameuse{kipnum@#1}}}"]
    lines += [r"\@namedef{kipnum@" + key + "}{" + value + "}" for key, value in sorted(values.items())]
    lines += [r"\makeatother", ""]
    return "\n".join(lines)
