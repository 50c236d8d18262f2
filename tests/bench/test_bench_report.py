"""``summary.md`` and ``summary.csv``: natural-unit gaps per criterion, bootstrap intervals, labelled negatives."""

from __future__ import annotations

import math

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_rows import results
from kipopt.bench import gaps as G
from kipopt.bench import report as R


def test_summary_writes_both_files(tmp_path):
    paths = R.write_summary(results(), str(tmp_path), "synthetic")
    assert sorted(p.rsplit("/", 1)[1] for p in paths) == ["summary.csv", "summary.md"]
    table = pd.read_csv(tmp_path / "summary.csv")
    assert {"family", "rule", "method", "criterion", "unit", "median_gap", "gap_low", "gap_high",
            "median_relative", "reference", "against_bound", "negative_traded"} <= set(table.columns)
    text = (tmp_path / "summary.md").read_text()
    assert "## Methods" in text and "## Gaps per criterion, in natural units" in text
    assert "95 % CI" in text


def test_every_criterion_has_its_gap_in_its_own_unit():
    table = R.summary_frame(results()).set_index(["rule", "method", "criterion"])
    moves = table.loc[("spread", "kafka.adminutils", "moves")]
    assert moves.unit == "replica moves" and moves.median_gap == -10 and moves.reference == "optimum"
    imbalance = table.loc[("spread", "kafka.adminutils", "replica_imbalance")]
    assert imbalance.unit == "replicas over the fair share" and imbalance.median_gap == 3
    assert math.isclose(imbalance.median_relative, 3.0)      # 4 extra over an optimum of 1, median of 2..4
    cost = table.loc[("rack_active", "kafka.rack_active", "cost")]
    assert cost.unit == "traffic + non-overlap cost" and cost.median_gap == 1
    assert cost.max_gap == 47 - 38                         # the unproven item, against its bound


def test_bootstrap_interval_contains_the_median_and_is_deterministic():
    table = R.summary_frame(results())
    solved = table[table["median_gap"].notna()]
    assert len(solved) >= 6
    assert (solved["gap_low"] <= solved["median_gap"]).all() and (solved["median_gap"] <= solved["gap_high"]).all()
    again = R.summary_frame(results())
    pd.testing.assert_frame_equal(table.reset_index(drop=True), again.reset_index(drop=True))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=40))
def test_bootstrap_median_brackets_the_sample_median(values):
    median, low, high = G.bootstrap_median(values)
    assert median == float(pd.Series(values, dtype=float).median())
    assert min(values) <= low <= median <= high <= max(values)


def test_negative_gaps_are_labelled_by_cause():
    frame = G.natural_gaps(results())
    moves = frame[(frame["method"] == "kafka.adminutils") & (frame["criterion"] == "moves")]
    assert (moves["gap"] < 0).all() and (moves["negative"] == "traded").all()
    traffic = frame[(frame["rule"] == "joint") & (frame["criterion"] == "traffic") & (frame["gap"] < 0)]
    assert len(traffic) and (traffic["negative"] == "traded").all()
    text = R.markdown(results())
    assert "8: 8 traded for an earlier criterion" in text


def test_a_negative_gap_without_an_earlier_loss_is_not_called_traded():
    rows = results().head(2).copy()
    rows.loc[1, "criteria"] = '[["replica_imbalance", 1, 1, 0.0], ["moves", 5, 20, -0.7]]'
    rows.loc[1, "violations"] = 3
    found = G.natural_gaps(rows)
    assert found.loc[found["criterion"] == "moves", "negative"].tolist() == ["", "broken"]


def test_a_gap_against_a_bound_is_labelled_as_a_bound():
    table = R.summary_frame(results()).set_index(["rule", "method", "criterion"])
    cost = table.loc[("rack_active", "kafka.rack_active", "cost")]
    assert cost.reference == "optimum/bound" and cost.against_bound == 1 and cost.runs == 6
    port = R.summary_frame(results())
    port = port[(port["rule"] == "rack_active") & (port["method"] == "kafka.rack_active")].iloc[0]
    assert port.against_bound == 1
    only_bound = results()
    only_bound = only_bound[(only_bound["item_id"] == "t5") & (only_bound["rule"] == "rack_active")]
    text = R.markdown(only_bound)
    criteria = text.split("## Gaps")[1].split("\n\n")[1]
    assert "| bound |" in criteria and "≤ 9" in criteria and "optimum" not in criteria
    assert "bound (1)" in text.split("## Gaps")[0]


def test_an_unproven_lexicographic_rule_is_compared_with_the_best_known_answer():
    """Where the exact method proved nothing, a lexicographic rule's criteria are compared with its answer,
    labelled ``best known`` (never ``optimum``); the exact method's own row gives no gap."""
    base = dict(family="consumers", rule="balanced", item_id="c1", exact_method="exact.balanced", violations=0,
                bound=0.0, optimum=None)
    rows = pd.DataFrame([
        dict(base, method="exact.balanced", status="feasible", objective=1117.0,
             criteria='[["cross_rack", 0, null, null], ["revoked", 1117, null, null]]'),
        dict(base, method="kafka.cooperative_sticky", status="feasible", objective=1500.0,
             criteria='[["cross_rack", 2, null, null], ["revoked", 900, null, null]]'),
    ])
    found = G.natural_gaps(rows)
    assert found["method"].tolist() == ["kafka.cooperative_sticky"] * 2
    assert found["reference_kind"].tolist() == ["best known", "best known"]
    assert found["gap"].tolist() == [2.0, -217.0] and found["negative"].tolist() == ["", "traded"]
    table = G.criteria_gaps(rows)
    assert set(table["reference"]) == {"best known"} and table["runs_against_bound"].tolist() == [1, 1]


def test_joint_rule_rows_keep_their_own_status_in_the_summary():
    rows = results()
    joint = rows[(rows["rule"] == "joint") & (rows["method"] == "kafka.rack_active")]
    assert (joint["status"] == "feasible").all() and not joint["optimal"].any()
    table = R.summary_frame(rows)
    row = table[(table["rule"] == "joint") & (table["method"] == "kafka.rack_active")].iloc[0]
    assert row.optimal_share == 0.0


def test_an_empty_run_still_writes_both_files(tmp_path):
    empty = results().iloc[0:0]
    paths = R.write_summary(empty, str(tmp_path))
    assert all((tmp_path / name).exists() for name in ("summary.csv", "summary.md")) and len(paths) == 2


def test_a_run_killed_at_its_time_limit_is_counted_as_timed_out_not_dropped():
    """A port that does not finish is a finding: an error row, counted in ``timed_out`` and in the Markdown."""
    from kipopt.bench.summary import summarize
    rows = results()
    port = rows.index[(rows["method"] == "kafka.adminutils")][:2]
    rows.loc[port[0], ["status", "objective", "gap", "error"]] = [
        "error", None, None, "time limit: killed after 40.0 s (limit 30 s, not honoured)"]
    rows.loc[port[1], ["status", "objective", "gap", "error"]] = ["error", None, None, "ValueError: boom"]
    table = summarize(rows).set_index(["rule", "method"])
    assert table.loc[("spread", "kafka.adminutils"), "errors"] == 2
    assert table.loc[("spread", "kafka.adminutils"), "timed_out"] == 1
    assert table.loc[("spread", "exact.spread"), "timed_out"] == 0
    assert "timed out" in R.markdown(rows)


def test_single_criterion_replica_rules_have_units():
    """peer_reassign's objective is its moves; spread_bytes counts bytes moved (not a bare column name)."""
    assert G.UNITS["peer_reassign"] == ("moves", "replica moves")
    assert G.unit_of("bytes_moved") == "bytes moved"
    rows = pd.DataFrame({"family": ["replicas"], "rule": ["peer_reassign"], "method": ["proposal.x"],
                         "item_id": ["a"], "status": ["feasible"], "objective": [7.0], "bound": [5.0],
                         "optimum": [5.0], "violations": [0], "criteria": [None]})
    gap = G.natural_gaps(rows).iloc[0]
    assert (gap.criterion, gap.unit, gap.gap, gap.reference_kind) == ("moves", "replica moves", 2.0, "optimum")


def test_infeasible_runs_are_counted_not_hidden():
    """A method infeasible on every instance it applies to had "4 instances, 0.0 %, gap -, errors 0" and the
    word nowhere in the summary; now its own column, in the table and in the printed text."""
    import pandas as pd
    from kipopt.bench.summary import format_table, summarize
    rows = pd.DataFrame({"family": ["replicas"] * 3, "rule": ["spread"] * 3, "method": ["proposal.x"] * 3,
                         "item_id": ["a", "b", "c"], "status": ["infeasible", "infeasible", "not_applicable"],
                         "gap": [None] * 3, "optimal": [False] * 3, "seconds": [0.1] * 3,
                         "violations": [None] * 3, "beats_bound": [False] * 3})
    table = summarize(rows)
    assert int(table.iloc[0].infeasible) == 2 and int(table.iloc[0].instances) == 2
    header, line = format_table(table).splitlines()
    at = header.index("infeasible") + len("infeasible")
    assert line[:at].split()[-1] == "2"  # right-aligned under its header
