"""The printed solution is ``json.dumps(solution.to_dict(), indent=2)`` byte for byte, for every family.

``kipopt solve`` writes :meth:`Solution.to_document` with :func:`kipopt._write.dumps_indented`: a
replicas assignment as a :class:`~kipopt._write.Table` over the assignment's tuples, the objects of
lists (every family's assignment but tasks') in one pass of C-level maps. These tests hold that text
to the standard library's on the old dict, with ids that carry control characters, non-ASCII and
astral letters, ragged and empty lists, and values the fast paths must refuse (bools, floats, mixed).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from kipopt._write import TABLE_MIN, Table, dumps_indented, json_default
from kipopt.solution import Solution, TaskRoles

ODD_IDS = ["\x00", "c\n1", "\t", "\x7f\x85", "ü", "Ωmega", "🙂", "a🙂b", "{}", " ", "\\", '"', "\u2028", "é"]


def reference(obj) -> str:
    return json.dumps(obj, indent=2, allow_nan=False, default=json_default)


items = st.one_of(st.integers(), st.text(max_size=4), st.booleans(), st.floats(allow_nan=False,
                                                                              allow_infinity=False), st.none())
uniform_rows = st.one_of(st.lists(st.integers(-5, 2**70), max_size=4), st.lists(st.text(max_size=4), max_size=4))
rows = st.one_of(uniform_rows, st.lists(items, max_size=4), uniform_rows.map(tuple))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.one_of(st.text(max_size=5), st.sampled_from(ODD_IDS)), rows,
                       min_size=TABLE_MIN, max_size=14))
def test_table_objects_as_json_dumps(d):
    assert dumps_indented({"assignment": d, "n": 1}, json_default) == reference({"assignment": d, "n": 1})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**40), unique=True, max_size=12), st.data())
def test_int_keyed_table_as_its_dict(keys, data):
    k = data.draw(st.integers(0, 4))
    body = data.draw(st.one_of(
        st.lists(st.tuples(*[st.integers(0, 10**6)] * k), min_size=len(keys), max_size=len(keys)),
        st.lists(rows, min_size=len(keys), max_size=len(keys))))
    table = Table(keys, body)
    assert dumps_indented({"a": table}, json_default) == reference({"a": table.as_dict()})


def test_table_falls_back_for_numpy_and_string_keys():
    for table in (Table([np.int64(3), np.int64(4)], [(np.int64(1),), [2]]), Table(["é", "\x00"], [(1, 2), ("x",)]),
                  Table([], []), Table([1, 2], [np.array([1, 2]), (3,)])):
        assert dumps_indented(table, json_default) == reference(table.as_dict())


def _replicas(n: int, rf: int) -> dict:
    return {2**31 - 1 - p: tuple((p * 7 + j) % 1000 for j in range(rf)) for p in range(n)}


CASES = [
    Solution("replicas", "exact.spread", _replicas(30, 3), "optimal", 4, 4, metrics={"x": {"0": 1}}),
    Solution("replicas", "kafka.adminutils", {**_replicas(9, 2), 5: (), 6: (1,)}, "feasible", seconds=0.25),
    Solution("replicas", "exact.spread", {}, "infeasible", message="replication_factor 3 exceeds the 2 brokers"),
    Solution("replicas", "proposal.sticky_reassign", _replicas(3, 1), "feasible", target=_replicas(12, 3)),
    Solution("consumers", "kafka.cooperative_sticky",
             {m: tuple(f"{t}-{p}" for t in ("orders", "a" * 249, "x.y") for p in range(j))
              for j, m in enumerate(ODD_IDS)}, "feasible",
             target={m: (f"orders-{j}",) for j, m in enumerate(ODD_IDS)}, seed=3, seconds_reading=0.5),
    Solution("consumers", "exact.range", {"c1": ("t-0",), "🙂": ()}, "optimal", 1.0, 1.0),
    Solution("tasks", "exact.rack_active",
             {c: TaskRoles(("0_0", f"1_{j}"), ("2_2",) if j % 2 else (), ()) for j, c in enumerate(ODD_IDS)},
             "optimal", 12.5, 12.5, metrics={"per_client": {c: j for j, c in enumerate(ODD_IDS)}}),
]


@pytest.mark.parametrize("solution", CASES, ids=lambda s: f"{s.family}-{s.method}")
def test_solution_text_is_json_dumps_of_to_dict(solution):
    assert dumps_indented(solution.to_document(), json_default) == reference(solution.to_dict())


def test_solve_prints_the_old_text_for_every_family(tmp_path, capsys):
    from kipopt.cli import main
    from examples import CONSUMERS_SPEC_EXAMPLE, TASKS_SPEC_EXAMPLE
    replicas = {"format": 1, "family": "replicas", "partitions": 20, "replication_factor": 3,
                "brokers": [{"id": i, "rack": ODD_IDS[i % 4]} for i in range(6)],
                "current": {str(p): [p % 6, (p + 1) % 6, (p + 2) % 6] for p in range(20)}}
    for instance, method in ((replicas, "exact.spread"), (replicas, "kafka.adminutils"),
                             (CONSUMERS_SPEC_EXAMPLE, "kafka.cooperative_sticky"),
                             (TASKS_SPEC_EXAMPLE, "exact.rack_active")):
        path = tmp_path / "instance.json"
        path.write_text(json.dumps(instance))
        assert main(["solve", str(path), "--method", method]) == 0
        printed = capsys.readouterr().out
        assert printed == reference(json.loads(printed)) + "\n"
