"""Build the paper from the benchmark: ``data`` (Spark run → compact Parquet), ``tables``, ``pdf``.

    python paper/make_paper.py data  [--grid paper/grid.toml] [--out paper-bench-out]
    python paper/make_paper.py tables [--data paper/data/results.parquet] [--into paper/generated]
    python paper/make_paper.py pdf    (tables and figures first, then latexmk)

``data`` runs ``kipopt bench`` (resumable: rerun the same command after an
interruption and only the missing items run) and keeps the columns the paper
reads in ``paper/data/results.parquet`` (zstd). ``tables`` writes every
LaTeX table, the macro file ``numbers.tex`` (every number the text cites) and
the figures (PDF and PNG) from that Parquet alone; ``pdf`` then builds
``paper/kipopt.pdf`` with latexmk and pdflatex, or names the Debian package
that is missing and exits 2. The tables are a pure function of the Parquet
and of two small JSON files beside it: ``conformance.json`` (written by
``paper/conformance.py``, every committed Java vector replayed on its port)
and ``kafka_python.json`` (written by ``paper/case_kafka_python.py``, the
client-library case study), whose tables and numbers live in
``paper/paper_extras.py``; tests/test_paper.py regenerates them all and
compares with the committed ones.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

from kipopt.bench.scaling import NOISE_FLOOR_SECONDS, SCALING_AXES, family_scaling, scaling_ratios

PAPER = Path(__file__).resolve().parent
ROOT = PAPER.parent
if str(PAPER) not in sys.path:
    sys.path.insert(0, str(PAPER))  # paper_extras.py, which imports this module's helpers back by name
if __name__ == "__main__":
    sys.modules.setdefault("make_paper", sys.modules[__name__])  # one copy when run as a script
GRID = PAPER / "grid.toml"
DATA = PAPER / "data" / "results.parquet"
GENERATED = PAPER / "generated"
BENCH_OUT = ROOT / "paper-bench-out"

COLUMNS = ("item_id", "family", "params", "seed", "size", "nodes", "method", "rule", "exact_method", "status",
           "objective", "bound", "optimum", "gap", "optimal", "violations", "beats_bound", "seconds",
           "time_limit", "criteria", "metrics", "error")
"""The result columns the paper reads; ``metrics`` keeps only :data:`METRIC_KEYS`, ``error`` its first line
(what tells a run killed at its time limit from one that failed)."""
METRIC_KEYS = ("first_shortfall", "shortfall")

SCALING_FAMILIES = ("tasks", "consumers", "replicas")
TABLES = ("grid", "summary", "criteria", "staging", "scaling",
          *(f"scaling-{family}" for family in SCALING_FAMILIES), "findings", "conformance", "clients", "numbers")
"""The generated ``.tex`` files (``numbers.tex`` holds the macros the text cites)."""

JAVA_REFERENCE = ((120, 30, 0.58), (300, 30, 6.2), (500, 50, 51.5), (1000, 100, 2053.0))
"""Kafka's Java cycle canceling on the KIP-925 active problem: (tasks, clients, seconds), quoted from
../shared/reference/solver-notes.md (measured there, not by this benchmark); the paper cites it as such.
The scaling figure draws it only at the shapes (tasks, clients) the grid has too: never on other shapes."""

TEX_PACKAGES = {
    "latexmk": "latexmk", "pdflatex": "texlive-latex-base", "amsmath.sty": "texlive-latex-base",
    "amssymb.sty": "texlive-base", "hyperref.sty": "texlive-latex-base", "graphicx.sty": "texlive-latex-base",
    "geometry.sty": "texlive-latex-base", "booktabs.sty": "texlive-latex-recommended",
    "microtype.sty": "texlive-latex-recommended", "lmodern.sty": "lmodern",
    "ptmr7t.tfm": "texlive-fonts-recommended", "placeins.sty": "texlive-latex-extra",
}
"""What ``make paper`` needs from TeX, and the Debian package that provides it."""


# --------------------------------------------------------------------------- data


def run_data(grid: Path, out: Path, data: Path, kipopt: str, run: bool = True) -> int:
    """``kipopt bench`` on the paper grid (resumes from ``out``), then compact its rows into ``data``.

    With ``run=False`` only the compaction runs, over whatever part files ``out`` holds (after a
    bench that could not finish); the items still missing are named on stderr.
    """
    if run:
        _note_commit(out)
        command = [kipopt, "bench", str(grid), "--out", str(out), "--no-plots"]
        print("make_paper: " + " ".join(command), file=sys.stderr)
        done = subprocess.run(command)
        if done.returncode != 0:
            print(f"make_paper: kipopt bench failed (exit {done.returncode}); rerun to resume, or compact "
                  f"what finished with `{Path(sys.argv[0]).name} data --no-run`", file=sys.stderr)
            return done.returncode
    found = grid_rows(grid, out)
    missing = _missing_items(grid, set(found["item_id"]))
    if missing:
        print(f"make_paper: {len(missing)} items of {grid} have no results in {out}: "
              + ", ".join(missing[:8]) + (" ..." if len(missing) > 8 else ""), file=sys.stderr)
    if not len(found):
        return 1
    rows = compact(found)
    data.parent.mkdir(parents=True, exist_ok=True)
    rows.to_parquet(data, compression="zstd", index=False)
    print(f"make_paper: {len(rows)} rows of {rows['item_id'].nunique()} items -> {data}", file=sys.stderr)
    return 0


def grid_rows(grid: Path, out: Path) -> Any:
    """The result rows of ``grid``'s items under ``out`` (other grids' items there are ignored)."""
    from kipopt.bench.grid import load_grid
    from kipopt.bench.pipeline import expand
    from kipopt.bench.summary import load_results
    return load_results(str(out), [item.item_id for item in expand(load_grid(str(grid)))])


def _note_commit(out: Path) -> None:
    """Warn when ``out`` holds results of other code: resuming reuses items by id, whatever code made them."""
    found = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    head = found.stdout.strip() or "unknown"
    stamp = out / "COMMIT"
    before = stamp.read_text().strip() if stamp.exists() else None
    if before is not None and before != head:
        print(f"make_paper: warning: {out} holds results of commit {before[:12]}, HEAD is {head[:12]}; finished "
              f"items are reused as they are. For data of this code, remove {out} (or pass a new --out).",
              file=sys.stderr)
    elif before is None:
        out.mkdir(parents=True, exist_ok=True)
        stamp.write_text(head + "\n")


def _missing_items(grid: Path, present: set[str]) -> list[str]:
    from kipopt.bench.grid import load_grid
    from kipopt.bench.pipeline import expand
    return [item.item_id for item in expand(load_grid(str(grid))) if item.item_id not in present]


def compact(rows: Any) -> Any:
    """Only the paper's columns, ``metrics`` cut to the staging keys, rows in a canonical order."""
    frame = rows[list(COLUMNS)].copy()
    frame["metrics"] = [_slim_metrics(m) for m in frame["metrics"]]
    frame["error"] = [e.splitlines()[0][:160] if isinstance(e, str) and e else None for e in frame["error"]]
    return frame.sort_values(["family", "item_id", "rule", "method"], kind="stable").reset_index(drop=True)


def _slim_metrics(text: Any) -> Any:
    if not isinstance(text, str):
        return None
    found = json.loads(text)
    kept = {k: found[k] for k in METRIC_KEYS if k in found}
    return json.dumps(kept, sort_keys=True) if kept else None


def load(data: Path = DATA) -> Any:
    import pandas as pd
    rows = pd.read_parquet(data)
    params = pd.DataFrame([json.loads(p) for p in rows["params"]], index=rows.index)
    return pd.concat([rows, params.add_prefix("param_")], axis=1)


# --------------------------------------------------------------------------- LaTeX helpers


def tex_escape(text: Any) -> str:
    r"""Text safe inside a LaTeX table cell.

    >>> tex_escape("kafka.rack_active 10% & more")
    'kafka.rack\\_active 10\\% \\& more'
    """
    out = str(text)
    for char, escaped in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#"),
                          ("$", r"\$"), ("{", r"\{"), ("}", r"\}")):
        out = out.replace(char, escaped)
    return out


def code(name: Any) -> str:
    return r"\texttt{" + tex_escape(name) + "}"


def pct(x: Any) -> str:
    return "--" if _missing(x) else f"{100 * float(x):.1f}\\%"


def num(x: Any, digits: int = 3) -> str:
    return "--" if _missing(x) else f"{float(x):.{digits}f}"


def count(x: Any) -> str:
    return "--" if _missing(x) else f"{int(x):,}".replace(",", "{,}")


def seconds(x: Any) -> str:
    """Seconds with three significant digits (times span five orders of magnitude)."""
    if _missing(x):
        return "--"
    value = float(x)
    return f"{value:.3g}" if value < 1000 else f"{value:,.0f}".replace(",", "{,}")


def _optimal_count(r: Any) -> int | None:
    """Runs at the optimum: the optimal share times the instances (None when no run was scored)."""
    return None if _missing(r.optimal_share) else round(r.optimal_share * r.instances)


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and x != x)


def tabular(columns: str, header: Iterable[str], body: Iterable[Iterable[str]], groups: Iterable[int] = ()) -> str:
    """A booktabs ``tabular``; a ``\\midrule`` before each body row index in ``groups``."""
    breaks = set(groups)
    lines = [r"\begin{tabular}{" + columns + "}", r"\toprule", " & ".join(header) + r" \\", r"\midrule"]
    for i, row in enumerate(body):
        if i in breaks and i:
            lines.append(r"\midrule")
        lines.append(" & ".join(row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(lines)


def _groups(keys: list[Any]) -> list[int]:
    return [i for i in range(1, len(keys)) if keys[i] != keys[i - 1]]


# --------------------------------------------------------------------------- tables


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
    port killed at its time limit, a finding), runs on instances the method does not apply to, broken runs."""
    from kipopt.bench.summary import summarize
    table = summarize(rows)
    body = [[r.family, code(r.rule), code(r.method), count(r.instances), pct(r.optimal_share), num(r.mean_gap),
             num(r.worst_gap), count(r.against_bound), seconds(r.median_seconds), count(r.errors),
             count(r.timed_out), count(r.not_applicable), count(r.broken)]
            for r in table.itertuples()]
    return tabular("lllrrrrrrrrrr", ["family", "rule", "method", "items", "optimal", "mean gap", "worst gap",
                                     "vs bound", "median s", "errors", "timed out", "n/a", "broken"], body,
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


# --------------------------------------------------------------------------- numbers the text cites


def numbers(rows: Any) -> dict[str, str]:
    r"""Every number the text cites, by key; ``\kipnum{key}`` prints it (numbers.tex).

    Keys: ``items``, ``runs``, ``methods``, ``rules``, ``errors``, ``<family>/items``, and per
    (rule, method) ``<rule>/<method>/optimal|optimal-count|instances|mean-gap|worst-gap|median-s|broken|timed-out|
    vs-bound|errors`` (``vs-bound``: runs whose gap is against a bound, the exact method unproven);
    ``scaling/<method>/<tasks>`` (median seconds at that size), ``scaling/largest``,
    ``scaling/speedup`` (port / exact at the largest size); ``java/<tasks>`` (the reference times).
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
    out.update(_scaling_numbers(rows))
    for family in SCALING_FAMILIES:
        out.update(_family_scaling_numbers(rows, family))
    for tasks, clients, secs in JAVA_REFERENCE:
        out[f"java/{tasks}"] = seconds(secs)
        out[f"java/{tasks}/clients"] = count(clients)
        out[f"java/{tasks}/tasks"] = count(tasks)
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


# --------------------------------------------------------------------------- figures


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


# --------------------------------------------------------------------------- build


def render(rows: Any, data_dir: Path = DATA.parent) -> dict[str, str]:
    """Every generated ``.tex`` file's text, by name: a pure function of the rows and, for the conformance
    and case-study tables, of the JSON files of :mod:`paper_extras` in ``data_dir``."""
    from paper_extras import (CLIENTS, CONFORMANCE, clients_table, conformance_table, exact_numbers,
                              largest_scaling_numbers, side_numbers)
    makers: dict[str, Callable[[Any], str]] = {
        "grid": grid_table, "summary": summary_table, "criteria": criteria_table, "staging": staging_table,
        "scaling": scaling_table, "findings": findings_table,
        **{f"scaling-{f}": (lambda r, f=f: scaling_family_table(r, f)) for f in SCALING_FAMILIES},
        "conformance": lambda r: conformance_table(data_dir), "clients": lambda r: clients_table(data_dir),
        "numbers": lambda r: numbers_tex(numbers(r) | exact_numbers(r) | largest_scaling_numbers(r)
                                               | side_numbers(data_dir))}
    sources = {"conformance": f"paper/data/{CONFORMANCE} (paper/conformance.py)",
               "clients": f"paper/data/{CLIENTS} (paper/case_kafka_python.py)"}
    return {name: (text if name == "numbers" else
                   f"% Generated by paper/make_paper.py from {sources.get(name, 'paper/data/results.parquet')}: "
                   "do not edit.\n" + text)
            for name, text in ((name, makers[name](rows)) for name in TABLES)}


def write_tables(data: Path, into: Path, with_figures: bool = True) -> list[Path]:
    rows = load(data)
    into.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in render(rows, data.parent).items():
        path = into / f"{name}.tex"
        path.write_text(text, encoding="utf-8")
        written.append(path)
    if with_figures:
        written += figures(rows, into)
    return written


def missing_tex() -> list[tuple[str, str]]:
    """(file, Debian package) for every piece of the TeX toolchain this machine lacks."""
    missing = [(tool, TEX_PACKAGES[tool]) for tool in ("latexmk", "pdflatex") if shutil.which(tool) is None]
    if shutil.which("kpsewhich") is None:
        return missing or [("kpsewhich", "texlive-binaries")]
    for name, package in TEX_PACKAGES.items():
        if "." in name and not subprocess.run(["kpsewhich", name], capture_output=True, text=True).stdout.strip():
            missing.append((name, package))
    return missing


def build_pdf() -> int:
    missing = missing_tex()
    if missing:
        packages = sorted({p for _, p in missing})
        print("make_paper: tables and figures are written, but the PDF needs TeX: missing "
              + ", ".join(f"{name} ({package})" for name, package in missing)
              + f"; install with: sudo apt-get install {' '.join(packages)}", file=sys.stderr)
        return 2
    command = ["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "-file-line-error", "kipopt.tex"]
    done = subprocess.run(command, cwd=PAPER, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        print(done.stdout[-4000:], file=sys.stderr)
        print(f"make_paper: latexmk failed (exit {done.returncode}); log in paper/kipopt.log", file=sys.stderr)
        return 1
    print(f"make_paper: wrote {PAPER / 'kipopt.pdf'}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make_paper.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    data = sub.add_parser("data", help="run the paper grid with kipopt bench and compact its Parquet")
    data.add_argument("--grid", type=Path, default=GRID)
    data.add_argument("--out", type=Path, default=BENCH_OUT)
    data.add_argument("--data", type=Path, default=DATA)
    data.add_argument("--kipopt", default=str(Path(sys.executable).with_name("kipopt")))
    data.add_argument("--no-run", dest="run", action="store_false",
                      help="do not run the bench; compact the part files already in --out")
    for name in ("tables", "pdf"):
        p = sub.add_parser(name, help="write tables and figures" + (", then build the PDF" if name == "pdf" else ""))
        p.add_argument("--data", type=Path, default=DATA)
        p.add_argument("--into", type=Path, default=GENERATED)
    args = parser.parse_args(argv)
    if args.command == "data":
        return run_data(args.grid, args.out, args.data, args.kipopt, args.run)
    if not args.data.exists():
        print(f"make_paper: no data at {args.data}; run `make paper-data` first", file=sys.stderr)
        return 2
    for path in write_tables(args.data, args.into):
        print(f"make_paper: wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}", file=sys.stderr)
    return build_pdf() if args.command == "pdf" else 0


if __name__ == "__main__":
    sys.exit(main())
