"""The paper's figures, as PDF and PNG: gap distributions, the KIP-925 scaling curve (with the quoted Java
times), each family's scaling and the price of staging."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from kipopt.bench.scaling import SCALING_AXES, family_scaling
from paper_data import JAVA_REFERENCE, SCALING_FAMILIES
from paper_tables import scaling_frame


def figures(rows: Any, into: Path) -> list[Path]:
    """Gap distributions, the KIP-925 scaling curve and the price of staging, as PDF and PNG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    written = []
    draws = [("gaps", _draw_gaps), ("scaling", _draw_scaling), ("staging", _draw_staging)]
    draws += [(f"scaling-{family}", _family_drawer(family)) for family in SCALING_FAMILIES]
    for name, draw in draws:
        fig = draw(plt, rows)
        for suffix in ("pdf", "png"):
            path = into / f"{name}.{suffix}"
            fig.savefig(path, dpi=130, metadata={"CreationDate": None} if suffix == "pdf" else {})
            written.append(path)
        plt.close(fig)
    return written


def _draw_gaps(plt: Any, rows: Any) -> Any:
    scored = rows[rows["gap"].notna() & ~rows["method"].str.startswith("exact.")]
    rules = sorted(scored["rule"].unique()) or ["(none)"]
    ncols = min(3, len(rules))
    nrows = -(-len(rules) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(8.0, 2.9 * nrows), squeeze=False, sharey=True)
    for ax in axes.flat[len(rules):]:
        ax.set_visible(False)
    for ax, rule in zip(axes.flat, rules):
        part = scored[scored["rule"] == rule]
        methods = sorted(part["method"].unique())
        ax.boxplot([part.loc[part["method"] == m, "gap"].to_numpy(float) for m in methods] or [[]],
                   showfliers=True)
        ax.set_xticks(range(1, len(methods) + 1), methods, rotation=35, ha="right", fontsize=7)
        ax.set_title(rule, fontsize=9)
    for row in axes:
        row[0].set_ylabel("relative gap", fontsize=8)
    fig.tight_layout()
    return fig


def _draw_scaling(plt: Any, rows: Any) -> Any:
    frame = scaling_frame(rows)
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    sizes = [size for size, _ in frame.index]
    for method in frame.columns:
        ax.plot(sizes, frame[method].to_numpy(float), marker="o", label=f"{method} (this grid)")
    same_shape = [(t, s) for t, c, s in JAVA_REFERENCE if (t, c) in set(frame.index)]
    if same_shape:
        ax.plot([t for t, _ in same_shape], [s for _, s in same_shape], marker="s", linestyle="--",
                color="gray", label="Kafka Java cycle canceling (solver notes, same shapes)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("tasks")
    ax.set_ylabel("median seconds")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig


def _family_drawer(family: str) -> Callable[[Any, Any], Any]:
    return lambda plt, rows: _draw_family_scaling(plt, rows, family)


def _draw_family_scaling(plt: Any, rows: Any, family: str) -> Any:
    """Median seconds of each method of ``family`` against its size, log-log; exact methods solid, ports and
    proposals dashed; a cross at the time limit where some runs at that size were killed there."""
    from kipopt.bench.plots import log_axes, styles
    medians, unfinished = family_scaling(rows, family)
    limit = float(rows.loc[rows["family"] == family, "time_limit"].max()) if len(rows) else 0.0
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    style = styles(list(unfinished.columns))
    for method in unfinished.columns:
        colour, marker = style[method]
        series = medians[method].dropna() if method in medians.columns else medians.iloc[:0, 0]
        ax.plot([k[0] for k in series.index], series.to_numpy(float), marker=marker, color=colour, markersize=4,
                linewidth=1.1, linestyle="-" if method.startswith("exact.") else "--", label=method)
        late = [k[0] for k in unfinished.index if unfinished.loc[k, method] > 0]
        if late:  # killed at the limit: drawn at the limit, where they stopped
            ax.plot(late, [limit] * len(late), marker="x", color=colour, markersize=6, linestyle="none")
    if len(unfinished.columns):
        log_axes(ax)
        ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    ax.set_xlabel(SCALING_AXES[family][0] if family != "consumers" else "partitions (all subscribed topics)")
    ax.set_ylabel("median seconds")
    ax.set_title(family, fontsize=9)
    fig.tight_layout()
    return fig


def _draw_staging(plt: Any, rows: Any) -> Any:
    from kipopt.bench.summary import staging
    table = staging(rows)
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    methods = sorted(table["method"].unique()) if len(table) else []
    stages = list(dict.fromkeys(table["stage"])) if len(table) else []
    left = [0.0] * len(methods)
    for stage in stages:
        shares = [float(table[(table.method == m) & (table.stage == stage)]["share"].sum()) for m in methods]
        ax.barh(methods, shares, left=left, label=stage)
        left = [a + b for a, b in zip(left, shares)]
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of items: first stage short of exact.joint")
    if stages:
        # beside the axes: the bars fill the whole [0, 1] range, so any legend inside covers some
        ax.legend(fontsize=7, title="stage", title_fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  borderaxespad=0.0)
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    return fig
