"""The two plots, inspected as matplotlib objects: panels, axis labels, sizes, colours, legend placement."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from bench_rows import results  # noqa: E402
from kipopt.bench import plots as PL  # noqa: E402


@pytest.fixture
def rows():
    return results()


def _visible(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def _overlaps(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_gaps_has_a_panel_per_rule_so_own_and_scored_rows_never_mix(rows):
    fig = PL.draw_gaps(rows)
    panels = {ax.get_title(): ax for ax in _visible(fig)}
    assert set(panels) == {"replicas: spread", "tasks: joint", "tasks: rack_active"}
    own = [t.get_text() for t in panels["tasks: rack_active"].get_yticklabels()]
    joint = [t.get_text() for t in panels["tasks: joint"].get_yticklabels()]
    assert own == ["kafka.rack_active (50% optimal)", "exact.rack_active (83% optimal)"]
    assert joint == ["kafka.rack_active (0% optimal)", "exact.joint (100% optimal)"]
    assert fig.axes[-1].get_xlabel().startswith("relative gap of the rule's objective")
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert "against a bound (exact not proven optimal)" in labels
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    assert not any(_overlaps(box, ax.get_window_extent(renderer)) for ax in _visible(fig))
    plt.close(fig)


def test_gaps_draws_a_bound_gap_hollow(rows):
    fig = PL.draw_gaps(rows)
    panel = next(ax for ax in fig.axes if ax.get_title() == "tasks: rack_active")
    hollow = [c for c in panel.collections if len(c.get_offsets()) and len(c.get_facecolors()) == 0]
    assert sum(len(c.get_offsets()) for c in hollow) == 2       # item t5: the port and the exact run, vs a bound
    plt.close(fig)


def test_time_vs_size_counts_each_familys_own_size(rows):
    fig = PL.draw_times(rows)
    panels = {ax.get_title(): ax for ax in _visible(fig)}
    assert panels["replicas"].get_xlabel() == "partitions"
    assert panels["tasks"].get_xlabel() == "tasks"
    assert PL.SIZE_AXIS["consumers"].startswith("partitions")
    xs = {x for line in panels["replicas"].get_lines() for x in line.get_xdata()}
    assert xs == {12, 24}                                       # partitions, not partitions x RF (36, 72)
    assert all(ax.get_xscale() == ax.get_yscale() == "log" for ax in panels.values())
    plt.close(fig)


def test_time_vs_size_legend_is_off_the_data_and_every_method_is_distinct(rows):
    fig = PL.draw_times(rows)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert all(ax.get_legend() is None for ax in fig.axes)
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    assert not any(_overlaps(box, ax.get_window_extent(renderer)) for ax in _visible(fig))
    lines = [line for ax in _visible(fig) for line in ax.get_lines()]
    looks = {line.get_label(): (tuple(line.get_color()), line.get_marker()) for line in lines}
    assert len(set(looks.values())) == len(looks) == rows["method"].nunique()
    assert sorted(t.get_text() for t in legend.get_texts()) == sorted(looks)
    plt.close(fig)


def test_log_ticks_label_decades_only(rows):
    fig = PL.draw_times(rows)
    fig.canvas.draw()
    ax = next(ax for ax in fig.axes if ax.get_title() == "tasks")
    assert all(t.get_text() == "" for t in ax.xaxis.get_minorticklabels())
    shown = [t.get_text() for t in ax.yaxis.get_majorticklabels() if t.get_text()]
    assert shown and set(shown) <= {f"{m}{z}" for m in ("1", "2", "5") for z in ("", "0", "00")} | {"0.01", "0.02", "0.05", "0.1", "0.2", "0.5"}
    plt.close(fig)


def test_styles_stay_distinct_beyond_twenty_methods():
    found = PL.styles([f"kafka.m{i:02d}" for i in range(24)])
    assert len(set(found.values())) == 24


def test_plot_writes_both_pngs(rows, tmp_path):
    paths = PL.plot(rows, str(tmp_path))
    for path in paths:
        with open(path, "rb") as handle:
            assert handle.read(8) == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.rsplit("/", 1)[1] for p in paths) == ["gaps.png", "time_vs_size.png"]


def test_times_mark_a_run_killed_at_its_limit_with_a_cross_at_the_limit(rows):
    """A port that did not finish at some size is not dropped silently: a cross at its time limit there."""
    rows = rows.copy()
    port = rows.index[rows["method"] == "kafka.adminutils"][0]
    rows.loc[port, ["status", "error", "seconds"]] = ["error", "time limit: killed after 31.0 s (limit 30 s)", 31.0]
    fig = PL.draw_times(rows)
    crosses = [line for ax in _visible(fig) for line in ax.get_lines() if line.get_marker() == "x"]
    plt.close(fig)
    assert len(crosses) == 1 and list(crosses[0].get_ydata()) == [30.0]
