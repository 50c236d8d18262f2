"""What ``validate`` accepts, ``solve`` answers and ``evaluate``/``check`` read back (issue 21, item 3).

Hypothesis builds small instances of every family whose ids and numbers sit
at the edges of the contract of ``docs/instance-format.md`` ("Identifiers and
numbers"): topic names of 1 and 249 characters, ids of exactly 32,767 UTF-8
bytes, control characters, non-ASCII and astral letters, Java ``int`` and
``long`` maxima, no topics at all. Each instance goes through the command
line's own entry point, in process: ``validate`` (exit 0), ``solve`` with
every method of its family (exit 0, or 1 where Kafka's own code fails), then ``evaluate`` (exit 0) and ``check``
(0 or 1) of the solution ``solve`` printed. And what lies just beyond the
contract is refused by ``validate`` with exit 2 naming the field.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kipopt._read import JAVA_INT_MAX, JAVA_LONG_MAX, MAX_STRING_BYTES
from kipopt.cli import main
from kipopt.instance import from_dict
from kipopt.methods import methods

INT_EDGES = [0, 1, JAVA_INT_MAX - 1, JAVA_INT_MAX]
LONG_EDGES = [0, 1, 10_000, 10_001, JAVA_LONG_MAX]
EDGE_IDS = [
    "a", "x" * MAX_STRING_BYTES, "é" * (MAX_STRING_BYTES // 2), "日" * (MAX_STRING_BYTES // 3),
    "\x00", "c\n1", "\t", "\x7f\x85", "ü", "Ωmega", "🙂", "a🙂b", "-", "_", "0_0", "{}", " ", "\\", '"',
]
ids = st.one_of(st.sampled_from(EDGE_IDS),
                st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=6))
topic_names = st.one_of(st.sampled_from(["t", "a" * 249, "-", "_", "a-0", "x.y", "...", "0"]),
                        st.from_regex(r"[a-zA-Z0-9._-]{1,12}", fullmatch=True).filter(lambda n: n not in (".", "..")))
racks = st.one_of(st.none(), ids)
SWEEP = int(os.environ.get("KIPOPT_ROUNDTRIP_EXAMPLES", "0"))
"""Examples per family for a longer sweep (e.g. 200); CI runs the few below (every method of a family
runs on each example: a tasks example is eleven solves and eleven checks)."""


def _settings(examples: int):
    return settings(max_examples=SWEEP or examples, deadline=None, derandomize=not SWEEP,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def topics(draw, least: int) -> dict:
    names = draw(st.lists(topic_names, min_size=least, max_size=2, unique=True))
    rack_pool = draw(st.lists(ids, min_size=1, max_size=3, unique=True))
    return {n: {"racks": [draw(st.lists(st.sampled_from(rack_pool), max_size=2, unique=True))
                          for _ in range(draw(st.integers(1, 3)))]} for n in names}


def _partitions(topic_map: dict) -> list[str]:
    return [f"{t}-{p}" for t, spec in topic_map.items() for p in range(len(spec["racks"]))]


@st.composite
def replicas(draw) -> dict:
    broker_ids = draw(st.lists(st.sampled_from(INT_EDGES + [7, 1000]), min_size=1, max_size=4, unique=True))
    brokers = [{"id": b, "rack": draw(racks)} for b in broker_ids]
    partitions = draw(st.integers(1, 4))
    start_pid = draw(st.sampled_from([0, JAVA_INT_MAX - partitions + 1]))
    d = {"format": 1, "family": "replicas", "brokers": brokers, "partitions": partitions,
         "replication_factor": draw(st.integers(1, len(brokers))),
         "start_index": draw(st.sampled_from(INT_EDGES)), "start_partition_id": start_pid}
    if draw(st.booleans()):
        d["current"] = {str(start_pid + p): draw(st.lists(st.sampled_from(broker_ids), min_size=1, unique=True))
                        for p in range(partitions) if draw(st.booleans())}
    return d


@st.composite
def consumers(draw) -> dict:
    topic_map = draw(topics(least=0))
    names = list(topic_map)
    member_ids = draw(st.lists(ids, min_size=1, max_size=3, unique=True))
    free = _partitions(topic_map)
    members = []
    for mid in member_ids:
        subscribed = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
        mine = [p for p in free if p.rpartition("-")[0] in subscribed and draw(st.booleans())]
        free = [p for p in free if p not in mine]  # owned partitions are disjoint: the KIP-848 ports need it
        members.append({"id": mid, "rack": draw(racks), "topics": subscribed, "owned": mine,
                        "generation": draw(st.sampled_from([-1, 0, JAVA_INT_MAX]))})
    return {"format": 1, "family": "consumers", "topics": topic_map, "members": members}


@st.composite
def tasks(draw) -> dict:
    topic_map = draw(topics(least=1))
    parts = _partitions(topic_map)
    task_ids = draw(st.lists(st.sampled_from(["0_0", "0_1", "1_0", f"{JAVA_INT_MAX}_{JAVA_INT_MAX}", "3_7"]),
                             min_size=1, max_size=4, unique=True))
    specs = {}
    for tid in task_ids:
        changelogs = draw(st.lists(st.sampled_from(parts), max_size=1, unique=True))
        specs[tid] = {"inputs": draw(st.lists(st.sampled_from(parts), min_size=1, max_size=2, unique=True)),
                      "changelogs": changelogs, "end_offset": draw(st.sampled_from(LONG_EDGES))}
    stateful = [t for t, s in specs.items() if s["changelogs"]]
    tag_keys = draw(st.lists(ids, max_size=2, unique=True))
    client_ids = draw(st.lists(ids, min_size=1, max_size=3, unique=True))
    clients = {}
    owners = {t: draw(st.sampled_from(client_ids)) for t in task_ids}  # the KIP-925 methods need one owner each
    for cid in client_ids:
        active = [t for t in task_ids if owners[t] == cid]
        clients[cid] = {"rack": draw(racks), "capacity": draw(st.sampled_from([1, 2, JAVA_INT_MAX])),
                        "tags": {k: draw(ids) for k in tag_keys}, "active": active,
                        "standby": [t for t in stateful if t not in active and draw(st.booleans())],
                        "lags": {t: draw(st.sampled_from(LONG_EDGES)) for t in stateful if draw(st.booleans())}}
    config = {"num_standby_replicas": draw(st.integers(0, 2)),
              "acceptable_recovery_lag": draw(st.sampled_from(LONG_EDGES)),
              "rack_aware_assignment_strategy": draw(st.sampled_from(["none", "min_traffic", "balance_subtopology"])),
              "rack_aware_assignment_tags": tag_keys}
    return {"format": 1, "family": "tasks", "topics": topic_map, "tasks": specs, "clients": clients,
            "config": config}


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _round_trip(instance: dict, folder: Path, names: list[str]) -> None:
    path = folder / "instance.json"
    path.write_text(json.dumps(instance), encoding="utf-8")
    code, _, err = _run("validate", str(path))
    assert code == 0, err
    parsed = from_dict(instance)
    for method in names:
        requires = methods()[method].requires
        if requires is not None and requires(parsed) is not None:  # refused with exit 2 naming the field
            continue
        solved, out, err = _run("solve", str(path), "--method", method, "--time-limit", "20")
        # 1: no solution, as Kafka's own code would fail (e.g. its int overflow at start_index near 2**31);
        # the solution object is printed all the same and must read back
        assert solved in (0, 1), f"solve --method {method}: exit {solved}: {err}"
        solution = folder / "solution.json"
        solution.write_text(out, encoding="utf-8")
        code, evaluation, err = _run("evaluate", str(path), str(solution))
        # evaluate says "no" (exit 1) exactly when the answer breaks a rule; a solved answer breaks none
        assert code in (0, 1), f"evaluate after {method}: exit {code}: {err}"
        assert (code == 1) == bool(json.loads(evaluation)["violations"]), f"evaluate after {method}"
        # Kafka's own answer may break a rule (the sticky assignors' allSubscriptionsEqual skips a member with
        # an empty subscription and then deals it partitions); an exact answer never does
        assert solved == 1 or code == 0 or method.startswith("kafka."), f"evaluate after {method}: broken rule"
        code, _, err = _run("check", str(path), str(solution))
        assert code in (0, 1), f"check after {method}: exit {code}: {err}"


def _methods(family: str) -> list[str]:
    return sorted(name for name, m in methods().items() if m.family == family)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("roundtrip")


@_settings(8)
@given(replicas())
def test_replicas_round_trip(folder, instance):
    _round_trip(instance, folder, _methods("replicas"))


@_settings(8)
@given(consumers())
def test_consumers_round_trip(folder, instance):
    _round_trip(instance, folder, _methods("consumers"))


@_settings(4)
@given(tasks())
def test_tasks_round_trip(folder, instance):
    _round_trip(instance, folder, _methods("tasks"))


def test_no_topics_at_all(folder):
    _round_trip({"format": 1, "family": "consumers", "topics": {},
                 "members": [{"id": "m1", "topics": []}, {"id": "m2", "rack": "r", "topics": []}]},
                folder, _methods("consumers"))


BEYOND = [
    ("consumers", ["topics"], {"t" * 250: {"racks": [[]]}}, "topics."),
    ("consumers", ["topics"], {"..": {"racks": [[]]}}, "topics..."),
    ("consumers", ["topics"], {"ü": {"racks": [[]]}}, "topics.ü"),
    ("consumers", ["members", 0, "id"], "x" * (MAX_STRING_BYTES + 1), "members[0].id"),
    ("consumers", ["members", 0, "id"], "é" * (MAX_STRING_BYTES // 2 + 1), "members[0].id"),
    ("consumers", ["members", 0, "id"], "m\ud800", "members[0].id"),
    ("consumers", ["members", 0, "rack"], "\udfff", "members[0].rack"),
    ("consumers", ["members", 0, "generation"], JAVA_INT_MAX + 1, "members[0].generation"),
    ("replicas", ["brokers", 0, "id"], JAVA_INT_MAX + 1, "brokers[0].id"),
    ("replicas", ["partitions"], 10 ** 30, "partitions"),
    ("tasks", ["tasks", "0_0", "end_offset"], JAVA_LONG_MAX + 1, "tasks.0_0.end_offset"),
    ("tasks", ["clients", "c", "tags"], {"k": "v\udc00"}, "clients.c.tags.k"),
    ("tasks", ["clients", "c", "rack"], "r" * (MAX_STRING_BYTES + 1), "clients.c.rack"),
]


def _base(family: str) -> dict:
    return {
        "replicas": {"format": 1, "family": "replicas", "brokers": [{"id": 0}], "partitions": 1,
                     "replication_factor": 1},
        "consumers": {"format": 1, "family": "consumers", "topics": {"t": {"racks": [["r"]]}},
                      "members": [{"id": "m", "topics": ["t"]}]},
        "tasks": {"format": 1, "family": "tasks", "topics": {"t": {"racks": [["r"]]}},
                  "tasks": {"0_0": {"inputs": ["t-0"]}}, "clients": {"c": {}}},
    }[family]


@pytest.mark.parametrize("family, where, value, field", BEYOND, ids=[b[3][:30] for b in BEYOND])
def test_beyond_the_contract_is_refused_naming_the_field(folder, family, where, value, field):
    d = _base(family)
    target = d
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    path = folder / "beyond.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    code, _, err = _run("validate", str(path))
    assert code == 2 and err.startswith("kipopt: error: ") and len(err.splitlines()) == 1, err
    assert err[len("kipopt: error: "):].startswith(field[:40].encode("unicode_escape").decode()
                                                   if not field.isprintable() else field[:40]), err


@pytest.mark.parametrize("digits", [101, 5_000, 100_000])
@pytest.mark.parametrize("command", ["validate", "solve", "evaluate", "check"])
def test_a_number_of_thousands_of_digits_is_bad_input_never_internal(folder, command, digits):
    path = folder / "huge.json"
    path.write_text('{"format": 1, "family": "replicas", "brokers": [{"id": 0}], "partitions": '
                    + "9" * digits + ', "replication_factor": 1}')
    args = {"validate": [str(path)], "solve": [str(path), "--method", "kafka.adminutils"],
            "evaluate": [str(path), str(path)], "check": [str(path), str(path)]}[command]
    code, _, err = _run(command, *args)
    assert code == 2 and err == f"kipopt: error: partitions: must be an integer, got a number of {digits:,} digits\n"
