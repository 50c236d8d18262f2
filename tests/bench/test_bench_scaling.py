"""The paper's scaling per family (paper/make_paper.py): sizes in the family's unit, unfinished runs counted,
ratios only above the noise floor."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pandas as pd

from bench_rows import _row

PAPER = Path(__file__).resolve().parents[2] / "paper"


def _make_paper():
    spec = importlib.util.spec_from_file_location("make_paper_scaling", PAPER / "make_paper.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_paper_scaling"] = module
    spec.loader.exec_module(module)
    return module


M = _make_paper()


def _rows() -> pd.DataFrame:
    """rack_active at two sizes: 100 tasks (exact 0.05 s, port 5 s) and 1,000 tasks (exact 2 s, port 40 s on
    two items, and a third port run killed at its 30 s limit)."""
    rows = []
    for k, (size, exact_s, port_s) in enumerate([(100, 0.05, 5.0), (100, 0.05, 5.0), (1000, 2.0, 40.0),
                                                  (1000, 2.0, 40.0), (1000, 2.0, None)]):
        item = f"t{k}"
        rows.append(_row("tasks", "rack_active", "exact.rack_active", item, "optimal", 10.0, 10.0, 10.0, exact_s,
                         size))
        status = "feasible" if port_s is not None else "error"
        rows.append(_row("tasks", "rack_active", "kafka.rack_active", item, status,
                         12.0 if port_s else None, 10.0, 10.0, port_s if port_s else 41.0, size))
    frame = pd.DataFrame(rows)
    killed = frame["status"] == "error"
    frame.loc[killed, "error"] = "time limit: killed after 41.0 s (limit 30 s, not honoured)"
    return frame.assign(param_tasks=frame["size"])


def test_an_error_that_is_not_a_kill_at_the_limit_is_not_unfinished():
    """A run that fails past its limit (an exception, not the kill) is an error, never a time-out."""
    rows = _rows()
    rows.loc[rows["status"] == "error", "error"] = "NotImplementedError: something"
    _, unfinished = M.family_scaling(rows, "tasks")
    assert unfinished.loc[(1000, 3), "kafka.rack_active"] == 0


def test_family_scaling_counts_unfinished_runs_apart_from_the_medians():
    medians, unfinished = M.family_scaling(_rows(), "tasks")
    assert medians.loc[(1000, 3), "kafka.rack_active"] == 40.0 and medians.loc[(100, 3), "exact.rack_active"] == 0.05
    assert unfinished.loc[(1000, 3), "kafka.rack_active"] == 1 and unfinished.loc[(100, 3), "kafka.rack_active"] == 0
    table = M.scaling_family_table(_rows(), "tasks")
    assert "tasks & clients" in table and "40 (+1)" in table


def test_ratios_only_where_both_times_clear_the_noise_floor():
    ratios = M.scaling_ratios(_rows(), "tasks")
    assert ratios == [(1000, 3, "kafka.rack_active", "exact.rack_active", 20.0)]
    found = M.numbers(_rows())
    assert found["scaling/tasks/kafka.rack_active/ratio"] == "20" and found["scaling/tasks/largest"] == "1{,}000"
    assert found["scaling/tasks/kafka.rack_active/unfinished"] == "1"


def test_a_ratio_over_an_exact_time_below_the_floor_is_only_a_lower_bound():
    rows = _rows()
    rows = rows[rows["size"] == 100]
    assert M.scaling_ratios(rows, "tasks") == []
    assert M.numbers(rows)["scaling/speedup"] == r"$\geq$5"


def test_java_reference_is_drawn_only_on_the_grids_own_shapes():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = M._draw_scaling(plt, _rows())
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    plt.close(fig)
    assert not any("Java" in label for label in labels)


def test_paper_criteria_table_gives_natural_units_intervals_bounds_and_causes():
    """Each criterion in its unit with a 95 % interval; the port's negative moves gap is labelled traded;
    the rule whose exact method proved no optimum on one item says it is measured partly against a bound."""
    from bench_rows import results
    table = M.criteria_table(results())
    assert "median gap [95\\,\\% CI]" in table and "replica moves" in table and "traded" in table
    moves = next(line for line in table.splitlines() if "kafka.adminutils" in line and "moves" in line)
    assert "-10" in moves and "8 traded" in moves
    cost = next(line for line in table.splitlines() if "kafka.rack\\_active" in line and "cost" in line)
    assert "optimum, bound (1)" in cost and "traffic + non-overlap cost" in cost
    summary = M.summary_table(results())
    assert "timed out" in summary and "n/a" in summary
