"""Grid parsing: per-size seed counts (fewer seeds for the largest cells) and the work items they give."""

import pytest

from kipopt.bench import grid as G
from kipopt.bench.pipeline import expand as work_items

METHODS = ["exact.rack_active", "kafka.rack_active"]


def _grid(sizes, seeds=4):
    return G.parse_grid({"families": {"tasks": {"seeds": seeds, "methods": METHODS, "sizes": sizes}}})


def test_a_size_with_its_own_seeds_overrides_the_family_count():
    grid = _grid([{"tasks": 12, "clients": 3}, {"tasks": 48, "clients": 6, "seeds": 2},
                  {"tasks": 60, "clients": 6, "seeds": [7, 9, 11]}])
    cells = grid.families[0].cells()
    assert [seeds for _, seeds in cells] == [(0, 1, 2, 3), (0, 1), (7, 9, 11)]
    assert grid.size == 9
    items = work_items(grid)
    assert len(items) == 9 and len({it.item_id for it in items}) == 9
    seeds_of = {}
    for it in items:
        seeds_of.setdefault(dict(it.params)["tasks"], []).append(it.seed)
    assert {k: sorted(v) for k, v in seeds_of.items()} == {12: [0, 1, 2, 3], 48: [0, 1], 60: [7, 9, 11]}


def test_own_seeds_are_not_a_generator_parameter_and_keep_item_ids():
    """An entry's seeds key leaves its parameters (and so the ids of the items both grids share) alone."""
    plain = work_items(_grid([{"tasks": 48, "clients": 6}]))
    fewer = work_items(_grid([{"tasks": 48, "clients": 6, "seeds": 2}]))
    assert all("seeds" not in dict(it.params) for it in fewer)
    assert {it.item_id for it in fewer} == {it.item_id for it in plain if it.seed < 2}


@pytest.mark.parametrize("seeds, field", [(0, "grid: families.tasks.sizes[0].seeds"),
                                          ([1, 1], "grid: families.tasks.sizes[0].seeds"),
                                          (["a"], "grid: families.tasks.sizes[0].seeds[0]"),
                                          # Random(-1) is Random(1): two items, one instance
                                          ([-1, 1], "grid: families.tasks.sizes[0].seeds[0]"),
                                          (10_000_000, "grid: families.tasks.sizes[0].seeds")])
def test_bad_own_seeds_name_the_entry(seeds, field):
    with pytest.raises(G.GridError) as info:
        _grid([{"tasks": 48, "clients": 6, "seeds": seeds}])
    assert info.value.field == field


@pytest.mark.parametrize("family, size, field", [
    ("replicas", {"partitions": 10**9, "brokers": 6}, "partitions"),
    ("consumers", {"partitions": 20_000_000, "members": 5}, "partitions"),
    ("tasks", {"tasks": 20_000_000, "clients": 3}, "tasks")])
def test_a_size_past_the_validators_cap_is_refused_before_spark(family, size, field):
    """The grid is vetted with the validator's size caps (a billion partitions passed the dry run, then
    every item of it was an error row that a rerun never retried)."""
    methods = {"replicas": ["kafka.adminutils"], "consumers": ["kafka.range"], "tasks": ["kafka.ha"]}[family]
    with pytest.raises(G.GridError) as info:
        G.parse_grid({"families": {family: {"seeds": 1, "methods": methods, "sizes": [size]}}})
    assert info.value.field == f"grid: families.{family}.sizes[0].{field}"
    assert "at most 10,000,000" in str(info.value)


def test_a_grid_that_is_not_text_or_an_out_that_is_a_file_is_one_line(tmp_path, capsys):
    from kipopt.cli import main
    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe[families]\n")
    assert main(["bench", str(tmp_path / "binary.toml"), "--dry-run"]) == 2
    assert capsys.readouterr().err.startswith("kipopt: error: GRID: cannot read")
    (tmp_path / "afile").write_text("")
    for out in ("afile", "afile/sub"):  # refused before Spark would start
        assert main(["bench", "--out", str(tmp_path / out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("kipopt: error: --out: cannot write results to") and err.count("\n") == 1


@pytest.mark.parametrize("grid, field", [
    ({"threads": 257, "families": {"tasks": {"seeds": 1, "methods": ["kafka.ha"]}}}, "grid: threads"),
    ({"families": {}}, "grid: families"),
    ({}, "grid: families"),
])
def test_grid_threads_are_bounded_and_a_grid_names_a_family(grid, field):
    with pytest.raises(G.GridError) as info:
        G.parse_grid(grid)
    assert info.value.field == field


def test_a_grid_that_is_a_fifo_is_refused_without_waiting(tmp_path, capsys):
    """Reading a FIFO nobody writes blocked bench --dry-run for good."""
    import os
    from kipopt.cli import main
    fifo = tmp_path / "grid.toml"
    os.mkfifo(fifo)
    assert main(["bench", str(fifo), "--dry-run"]) == 2
    assert "not a regular file" in capsys.readouterr().err
