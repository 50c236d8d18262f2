"""The benchmark's two plots: ``gaps.png`` (one panel per rule) and ``time_vs_size.png`` (one per family).

Every method keeps one colour and marker in both plots (:func:`styles`): a
20-colour qualitative palette crossed with 7 markers, so up to 140 methods
stay distinct. Legends sit outside the axes, never on the data.
"""

from __future__ import annotations

import os
from typing import Any

SIZE_AXIS = {"tasks": "tasks", "consumers": "partitions (all subscribed topics)", "replicas": "partitions"}
"""What the x axis of ``time_vs_size`` counts per family (see :func:`size_of`)."""

MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def styles(methods: Any) -> dict[str, tuple[Any, str]]:
    """Method → (colour, marker): tab20 colours, markers cycling with a period prime to 20.

    >>> s = styles([f"m{i}" for i in range(30)])
    >>> len(set(s.values())) == 30 and len({c for c, _ in list(s.values())[:20]}) == 20
    True
    """
    import matplotlib
    palette = matplotlib.colormaps["tab20"].colors
    return {m: (palette[i % len(palette)], MARKERS[i % len(MARKERS)]) for i, m in enumerate(sorted(set(methods)))}


def size_of(rows: Any) -> Any:
    """The natural size of each row's instance: tasks; subscribed partitions; partitions (the ``size``
    column counts replicas for the replicas family, partitions × replication factor)."""
    import pandas as pd
    size = pd.to_numeric(rows["size"], errors="coerce").astype(float)
    if "param_partitions" in rows.columns:
        replicas = (rows["family"] == "replicas") & rows["param_partitions"].notna()
        size = size.where(~replicas, pd.to_numeric(rows["param_partitions"], errors="coerce"))
    return size


def plot(rows: Any, folder: str) -> list[str]:
    """Write ``gaps.png`` and ``time_vs_size.png`` into ``folder``; return their paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(folder, exist_ok=True)
    paths = []
    for name, draw in (("gaps.png", draw_gaps), ("time_vs_size.png", draw_times)):
        fig = draw(rows)
        path = os.path.join(folder, name)
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)
    return paths


def _panels(count: int, width: float, height: float, columns: int = 3) -> tuple[Any, list[Any]]:
    import matplotlib.pyplot as plt
    ncols = max(1, min(columns, count))
    nrows = max(1, -(-count // ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[count:]:
        ax.set_visible(False)
    return fig, flat[:max(1, count)]


def draw_gaps(rows: Any) -> Any:
    """One panel per (family, rule), stacked: a horizontal box and the points of every method's relative
    gap on that rule, the method's name and optimal share as its label. Own-rule and ``score_rules``
    rows never share a panel. A gap against a bound (the exact method did not prove its optimum) is a
    hollow point."""
    import matplotlib.pyplot as plt
    keys = sorted({(f, r) for f, r in zip(rows["family"], rows["rule"]) if isinstance(r, str)}) if len(rows) else []
    if not keys:
        fig, ax = plt.subplots(figsize=(6, 2))
        ax.text(0.5, 0.5, "no results", ha="center", va="center")
        return fig
    parts = [rows[(rows["family"] == family) & (rows["rule"] == rule)] for family, rule in keys]
    heights = [0.32 * part["method"].nunique() + 0.9 for part in parts]
    fig, axes = plt.subplots(len(keys), 1, figsize=(7.5, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    style = styles(rows["method"])
    for ax, (family, rule), part in zip(axes[:, 0], keys, parts):
        _gap_panel(ax, part, style)
        ax.set_title(f"{family}: {rule}", fontsize=9)
    axes[-1, 0].set_xlabel("relative gap of the rule's objective to the exact optimum (or bound)", fontsize=8)
    fig.tight_layout()
    _legend_bound(fig)
    return fig


def _gap_panel(ax: Any, part: Any, style: dict) -> None:
    methods = sorted(part["method"].unique(), reverse=True)  # top to bottom in name order
    data, labels = [], []
    for i, method in enumerate(methods, start=1):
        mine = part[(part["method"] == method) & (part["status"] != "not_applicable")]
        solved = mine[mine["gap"].notna()]
        data.append(solved["gap"].to_numpy(dtype=float))
        proven = solved["optimum"].notna() if "optimum" in solved else solved["gap"].notna()
        colour, marker = style[method]
        for flag, face in ((True, colour), (False, "none")):
            values = solved.loc[proven == flag, "gap"].to_numpy(dtype=float)
            jitter = [i + 0.06 * ((k % 7) - 3) for k in range(len(values))]
            ax.scatter(values, jitter, s=12, marker=marker, facecolors=face, edgecolors=colour, alpha=0.7,
                       linewidths=0.8, zorder=3)
        share = mine["optimal"].mean() if len(mine) else float("nan")
        labels.append(f"{method} ({_share(share)} optimal)")
    try:
        ax.boxplot(data, orientation="horizontal", showfliers=False, widths=0.5)
    except TypeError:  # matplotlib before 3.10 has no orientation (and 3.11 deprecates vert)
        ax.boxplot(data, vert=False, showfliers=False, widths=0.5)
    ax.set_yticks(range(1, len(methods) + 1), labels, fontsize=7)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlim(min(-0.05, ax.get_xlim()[0]), max(1.05, ax.get_xlim()[1]))
    ax.grid(True, axis="x", linewidth=0.4, alpha=0.5)


def _share(x: float) -> str:
    return "-" if x != x else f"{100 * x:.0f}%"


def _legend_bound(fig: Any) -> None:
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], marker="o", linestyle="", color="0.3", label="against the proven optimum"),
               Line2D([], [], marker="o", linestyle="", markerfacecolor="none", color="0.3",
                      label="against a bound (exact not proven optimal)")]
    fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8, frameon=False,
               title="relative gap (objective)", title_fontsize=8)


def draw_times(rows: Any) -> Any:
    """One panel per family: median seconds of every method against the family's natural size
    (:data:`SIZE_AXIS`), log-log, one colour and marker per method, the legend right of the panels.
    Each run counts once (a run scored on a second rule has a row per rule). A cross at a method's time limit
    marks a size where some of its runs did not finish (killed at the limit): the curve stops short there."""
    families = sorted(rows["family"].unique()) if len(rows) else []
    fig, axes = _panels(len(families), 4.8, 3.8)
    if not families:
        axes[0].text(0.5, 0.5, "no results", ha="center", va="center")
        return fig
    runs = rows[rows["status"].isin(["optimal", "feasible"]) & rows["seconds"].notna()]
    runs = runs.drop_duplicates(["item_id", "method"])
    runs = runs.assign(natural_size=size_of(runs))
    style = styles(rows["method"])
    handles: dict[str, Any] = {}
    for ax, family in zip(axes, families):
        part = runs[(runs["family"] == family) & runs["natural_size"].notna()]
        for method in sorted(part["method"].unique()):
            medians = part[part["method"] == method].groupby("natural_size")["seconds"].median()
            colour, marker = style[method]
            (line,) = ax.plot(medians.index, medians.to_numpy(), marker=marker, color=colour, markersize=5,
                              linewidth=1.2, label=method)
            handles[method] = line
        for method, size, limit in _unfinished(rows, family):
            colour, _ = style[method]
            ax.plot([size], [limit], marker="x", color=colour, markersize=6, linestyle="none")
        log_axes(ax)
        ax.set_xlabel(SIZE_AXIS.get(family, "instance size"), fontsize=8)
        ax.set_ylabel("median seconds", fontsize=8)
        ax.set_title(family, fontsize=9)
    fig.tight_layout()
    fig.legend(handles=[handles[m] for m in sorted(handles)], loc="center left", bbox_to_anchor=(1.0, 0.5),
               fontsize=7, frameon=False, title="method", title_fontsize=8)
    return fig


def _unfinished(rows: Any, family: str) -> list[tuple[str, float, float]]:
    """(method, natural size, time limit) wherever a run of ``family`` was killed at its time limit."""
    from .pipeline import killed_at_limit
    if "time_limit" not in rows.columns:
        return []
    part = rows[(rows["family"] == family) & killed_at_limit(rows)].drop_duplicates(["item_id", "method"])
    part = part.assign(natural_size=size_of(part))
    found = part.groupby(["method", "natural_size"])["time_limit"].max()
    return [(m, float(size), float(limit)) for (m, size), limit in found.items() if size == size]


def log_axes(ax: Any) -> None:
    """Log scales, labelled at 1, 2 and 5 times the decades when the data span less than two decades
    and at the decades only otherwise (10, 100, 1k, ...), so labels never crowd; other ticks unlabelled."""
    import math
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    ax.set_xscale("log")
    ax.set_yscale("log")
    limits = ax.dataLim
    for axis, (low, high) in ((ax.xaxis, limits.intervalx), (ax.yaxis, limits.intervaly)):
        narrow = low > 0 and math.isfinite(high) and math.log10(high / low) < 2
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if narrow else (1.0,), numticks=12))
        axis.set_minor_locator(LogLocator(base=10, subs=tuple(range(2, 10)), numticks=12))
        axis.set_minor_formatter(NullFormatter())
        axis.set_major_formatter(FuncFormatter(_decade))
    ax.tick_params(labelsize=7)
    ax.grid(True, which="major", linewidth=0.4, alpha=0.5)


def _decade(value: float, _: Any = None) -> str:
    """A tick's label: ``0.01``, ``1``, ``200``, ``10k``, ``1M``.

    >>> [_decade(v) for v in (0.001, 0.1, 1, 50, 100, 1000, 2000, 10**5, 10**6)]
    ['0.001', '0.1', '1', '50', '100', '1k', '2k', '100k', '1M']
    """
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"
