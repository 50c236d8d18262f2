"""kipopt reassign: Kafka's files in, an exact plan per topic, files out that Kafka's parser accepts."""

from __future__ import annotations

import json
import random
from pathlib import Path

import jsonschema
import pytest

from kipopt import evaluate
from kipopt.cli import main
from kipopt.instance import from_dict
from kipopt.reassign import kafka_parse_errors, read_assignment, read_log_dirs

from test_cli_errors import assert_one_error_line

SCHEMA = json.loads((Path(__file__).parent / "data" / "kafka_reassignment.schema.json").read_text())


def kafka_current(topics: dict[str, int], brokers: list[int], rf: int, seed: int) -> dict:
    """A current assignment as Kafka prints it: random replica lists over ``brokers``."""
    rnd = random.Random(seed)
    parts = [{"topic": t, "partition": p, "replicas": rnd.sample(brokers, rf), "log_dirs": ["any"] * rf}
             for t, n in topics.items() for p in range(n)]
    return {"version": 1, "partitions": parts}


def run(tmp_path: Path, capsys, current: dict, *options: str, racks: dict | None = None,
        sizes: dict | None = None) -> tuple[int, dict | None, str]:
    cur = tmp_path / "current.json"
    cur.write_text(json.dumps(current))
    argv = ["reassign", "--current", str(cur), "--out", str(tmp_path / "out"), *options]
    if racks is not None:
        (tmp_path / "racks.json").write_text(json.dumps(racks))
        argv += ["--racks", str(tmp_path / "racks.json")]
    if sizes is not None:
        (tmp_path / "sizes.json").write_text(json.dumps(sizes))
        argv += ["--sizes", str(tmp_path / "sizes.json")]
    capsys.readouterr()
    code = main(argv)
    out = capsys.readouterr()
    return code, (json.loads(out.out) if out.out else None), out.err


def written(tmp_path: Path) -> tuple[dict, dict]:
    return (json.loads((tmp_path / "out" / "reassignment.json").read_text()),
            json.loads((tmp_path / "out" / "rollback.json").read_text()))


def apply(current: dict, reassignment: dict) -> dict[tuple[str, int], list[int]]:
    after = {(p["topic"], p["partition"]): p["replicas"] for p in current["partitions"]}
    after.update({(p["topic"], p["partition"]): p["replicas"] for p in reassignment["partitions"]})
    return after


def assert_kafka_accepts(doc: dict, brokers: set[int]) -> None:
    jsonschema.validate(doc, SCHEMA)
    assert kafka_parse_errors(doc, brokers) == []
    parts = [(p["topic"], p["partition"]) for p in doc["partitions"]]
    assert parts == sorted(parts)  # Kafka's formatAsReassignmentJson order


RACKS = {str(b): f"r{b % 3}" for b in range(9)}


@pytest.mark.parametrize("scenario,options,final", [
    ("add brokers", ["--add-brokers", "9:r0,10:r1,11:r2"], set(range(12))),
    ("add a rack", ["--add-rack", "r3=9,10"], set(range(11))),
    ("decommission", ["--decommission", "0,4"], set(range(9)) - {0, 4}),
    ("exclude", ["--exclude-brokers", "8"], set(range(8))),
    ("replication factor", ["--replication-factor", "2"], set(range(9))),
])
def test_scenarios_write_files_kafka_accepts(scenario, options, final, tmp_path, capsys):
    """Each scenario: optimal per topic, the --execute file passes Kafka's parser rules, names only the
    final brokers, lists changed partitions only, and the rollback file restores what was there."""
    current = kafka_current({"orders": 30, "payments": 12, "audit-log": 5}, list(range(9)), 3, seed=1)
    code, summary, err = run(tmp_path, capsys, current, *options, racks=RACKS)
    assert code == 0, err
    assert summary["status"] == "optimal"
    doc, rollback = written(tmp_path)
    assert_kafka_accepts(doc, final)
    assert_kafka_accepts(rollback, set(range(9)))
    before = {(p["topic"], p["partition"]): p["replicas"] for p in current["partitions"]}
    assert all(p["replicas"] != before[(p["topic"], p["partition"])] for p in doc["partitions"])
    assert [(p["topic"], p["partition"], p["replicas"]) for p in rollback["partitions"]] == [
        (p["topic"], p["partition"], before[(p["topic"], p["partition"])]) for p in doc["partitions"]]
    after = apply(current, doc)
    assert {b for reps in after.values() for b in reps} <= final
    assert summary["partitions_changed"] == len(doc["partitions"])
    assert summary["moves"] == sum(len(set(after[k]) - set(before[k])) for k in after)
    for t in summary["per_topic"]:  # every topic meets the rule's hard constraints, at its optimum
        rows = sorted(k for k in after if k[0] == t["topic"])
        inst = from_dict({"format": 1, "family": "replicas", "partitions": len(rows),
                          "replication_factor": t["replication_factor"],
                          "brokers": [{"id": b, "rack": RACKS.get(str(b), {"9": "r0", "10": "r1", "11": "r2"}.get(
                              str(b)) if scenario == "add brokers" else ("r3" if b in (9, 10) else None))}
                                      for b in sorted(final)],
                          "current": {str(i): before[k] for i, k in enumerate(rows)}})
        e = evaluate(inst, {i: tuple(after[k]) for i, k in enumerate(rows)})
        assert not e.violations
        assert e.metrics["moves"] == t["moves"]
        assert t["bound"] == t["objective"]


def test_decommissioned_brokers_lose_every_replica(tmp_path, capsys):
    current = kafka_current({"t": 40}, list(range(6)), 3, seed=2)
    code, summary, _ = run(tmp_path, capsys, current, "--decommission", "5")
    assert code == 0
    held = sum(5 in p["replicas"] for p in current["partitions"])
    assert summary["brokers"]["5"]["replicas_after"] == 0 and summary["brokers"]["5"]["in_cluster"] is False
    assert summary["moves"] >= held


def test_pinned_partitions_stay(tmp_path, capsys):
    current = kafka_current({"a": 10, "b": 10}, list(range(4)), 2, seed=3)
    code, _, _ = run(tmp_path, capsys, current, "--add-brokers", "4,5", "--pin", "a,b:3")
    assert code == 0
    doc, _ = written(tmp_path)
    assert all(p["topic"] == "b" and p["partition"] != 3 for p in doc["partitions"])


def log_dirs(current: dict, sizes: dict[tuple[str, int], int]) -> dict:
    brokers: dict[int, list] = {}
    for p in current["partitions"]:
        for b in p["replicas"]:
            brokers.setdefault(b, []).append({"partition": f"{p['topic']}-{p['partition']}",
                                              "size": sizes[(p["topic"], p["partition"])],
                                              "offsetLag": 0, "isFuture": False})
    return {"version": 1, "brokers": [{"broker": b, "logDirs": [{"logDir": "/var/kafka", "error": None,
                                                                 "partitions": ps}]} for b, ps in brokers.items()]}


def test_bytes_moved_never_above_the_moves_plan(tmp_path, capsys):
    current = kafka_current({"t": 24, "my-topic": 8}, list(range(4)), 2, seed=4)
    rnd = random.Random(5)
    sizes = {(p["topic"], p["partition"]): rnd.choice([10, 10**6, 10**9]) for p in current["partitions"]}
    assert read_log_dirs(log_dirs(current, sizes)) == sizes
    code, by_moves, _ = run(tmp_path, capsys, current, "--add-brokers", "4,5", sizes=log_dirs(current, sizes))
    assert code == 0
    code, by_bytes, _ = run(tmp_path, capsys, current, "--add-brokers", "4,5", "--minimize", "bytes",
                            sizes=log_dirs(current, sizes))
    assert code == 0 and by_bytes["status"] == "optimal"
    assert by_bytes["bytes_moved"] <= by_moves["bytes_moved"]
    assert by_bytes["moves"] >= by_moves["moves"]


GOOD = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [0, 1]}]}


@pytest.mark.parametrize("doc,field", [
    ({"version": 2, "partitions": GOOD["partitions"]}, "--current.version"),
    ({"version": 1, "partitions": []}, "--current.partitions"),
    ({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": []}]}, "--current.partitions[0].replicas"),
    ({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1]}]},
     "--current.partitions[0].replicas"),
    ({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any"]}]},
     "--current.partitions[0].log_dirs"),
    ({"version": 1, "partitions": [{"partition": 0, "replicas": [1]}]}, "--current.partitions[0].topic"),
    ({"version": 1, "partitions": [{"topic": "t", "partition": -1, "replicas": [1]}]},
     "--current.partitions[0].partition"),
    ({"version": 1, "partitions": GOOD["partitions"] * 2}, "--current.partitions[1]"),
    ({"partitions": [{"topic": "t", "partition": 0, "replicas": ["1"]}]}, "--current.partitions[0].replicas[0]"),
    # a topic name Kafka refuses (it could not have printed it) went into the plan
    ({"partitions": [{"topic": "a b", "partition": 0, "replicas": [1]}]}, "--current.partitions[0].topic"),
    ({"partitions": [{"topic": "..", "partition": 0, "replicas": [1]}]}, "--current.partitions[0].topic"),
    ({"partitions": [{"topic": "t" * 250, "partition": 0, "replicas": [1]}]}, "--current.partitions[0].topic"),
])
def test_malformed_current_is_one_line(doc, field, tmp_path, capsys):
    code, _, err = run(tmp_path, capsys, doc)
    assert_one_error_line(code, "", err, field)


@pytest.mark.parametrize("options,field", [
    (["--decommission", "7"], "--decommission"),
    (["--decommission", "0,1"], "--decommission"),
    (["--add-brokers", "1"], "--add-brokers"),
    (["--add-brokers", "x"], "--add-brokers"),
    (["--add-rack", "9,10"], "--add-rack"),
    (["--add-rack", "r9=1"], "--add-rack"),  # a broker already in the cluster, named by the option that added it
    (["--decommission", "0"], "--decommission"),  # too few brokers left for the replication factor
    (["--threads", "0"], "--threads"),
    (["--replication-factor", "3"], "--replication-factor"),
    (["--pin", "nope"], "--pin"),
    (["--topics", "nope"], "--topics"),
    (["--minimize", "bytes"], "--minimize"),
    (["--exclude-brokers", "0,1"], "--exclude-brokers"),  # named --decommission, which was not given
    # an empty value was read as the option left out (exit 0, planned as without it)
    (["--brokers", ""], "--brokers"), (["--pin", ""], "--pin"), (["--topics", ""], "--topics"),
    (["--add-brokers="], "--add-brokers"), (["--sizes", ""], "--sizes"), (["--out", ""], "--out"),
    (["--topics", ","], "--topics"), (["--brokers", "0,,1"], "--brokers"), (["--pin", "t,"], "--pin"),
    (["--time-limit", "inf"], "--time-limit"), (["--time-limit", "1e400"], "--time-limit"),
    (["--threads", "100000"], "--threads"),
])
def test_bad_options_are_one_line(options, field, tmp_path, capsys):
    code, _, err = run(tmp_path, capsys, GOOD, *options)
    assert_one_error_line(code, "", err, field)


@pytest.mark.parametrize("doc,field", [
    ({"0": 5}, "--racks.0"),
    ({"x": "r1"}, "--racks.x"),
    ({"brokers": [{"id": 0, "rack": "a"}, {"id": 0}]}, "--racks.brokers[1].id"),
])
def test_malformed_rack_map_is_one_line(doc, field, tmp_path, capsys):
    code, _, err = run(tmp_path, capsys, GOOD, racks=doc)
    assert_one_error_line(code, "", err, field)


def test_a_size_past_the_formats_bound_names_the_sizes_file(tmp_path, capsys):
    """It named the internal instance path sizes.0."""
    huge = {"version": 1, "brokers": [{"broker": 0, "logDirs": [{"partitions": [
        {"partition": "t-0", "size": 2**63 - 1}]}]}]}
    code, _, err = run(tmp_path, capsys, GOOD, "--add-brokers", "2", "--minimize", "bytes", sizes=huge)
    assert_one_error_line(code, "", err, "--sizes.brokers[0].logDirs[0].partitions[0].size")


def test_malformed_log_dirs_is_one_line(tmp_path, capsys):
    bad = {"version": 1, "brokers": [{"broker": 0, "logDirs": [{"logDir": "/d", "error": None, "partitions": [
        {"partition": "t0", "size": 5, "offsetLag": 0, "isFuture": False}]}]}]}
    code, _, err = run(tmp_path, capsys, GOOD, sizes=bad)
    assert_one_error_line(code, "", err, "--sizes.brokers[0].logDirs[0].partitions[0].partition")


def test_parse_rules_refuse_what_kafka_refuses():
    """The rule list itself: each broken document gets Kafka's own message."""
    assert kafka_parse_errors(GOOD, {0, 1}) == []
    assert kafka_parse_errors({"version": 1, "partitions": []}) == ["Partition reassignment list cannot be empty"]
    assert "Unknown broker id 7" in kafka_parse_errors(
        {"partitions": [{"topic": "t", "partition": 0, "replicas": [7]}]}, {0, 1})
    dup = {"partitions": GOOD["partitions"] * 2}
    assert any("duplicate topic partitions" in e for e in kafka_parse_errors(dup))
    assert any("log dirs" in e for e in kafka_parse_errors(
        {"partitions": [{"topic": "t", "partition": 0, "replicas": [0, 1], "log_dirs": ["any"]}]}))
    assert read_assignment(GOOD)[0].replicas == (0, 1)


def test_readme_commands_run_on_the_shipped_examples(tmp_path, capsys, monkeypatch):
    """The README's kipopt reassign commands, run as written (plan/ in a temporary folder), are optimal
    and write files Kafka's parser rules accept."""
    import re
    import shlex
    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    block = readme.split("### Reassigning a Kafka cluster", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = [re.sub(r"#.*", "", c).strip() for c in block.replace("\\\n", " ").splitlines()]
    commands = [c for c in commands if c.startswith("kipopt reassign")]
    assert len(commands) == 3
    monkeypatch.chdir(root)
    for command in commands:
        argv = [a.replace("plan/", str(tmp_path / "plan")) for a in shlex.split(command)[1:]]
        capsys.readouterr()
        assert main(argv) == 0
        summary = json.loads(capsys.readouterr().out)
        assert summary["status"] == "optimal"
        doc = json.loads((tmp_path / "plan" / "reassignment.json").read_text())
        assert_kafka_accepts(doc, {b for p in doc["partitions"] for b in p["replicas"]})


def test_racks_on_some_brokers_only_are_refused_as_kafka_refuses(tmp_path, capsys):
    """Some brokers racked and others not (a partial --racks, or racked brokers added to a rackless cluster):
    Kafka's rack-aware placement refuses; so does the plan, naming --racks, unless --disable-rack-aware."""
    current = kafka_current({"t": 12}, list(range(6)), 3, seed=4)
    code, _, err = run(tmp_path, capsys, current, racks={"0": "a", "1": "b"})
    assert "4 of the 6 brokers have no rack (2, 3, 4, 5)" in assert_one_error_line(code, "", err, "--racks")
    code, _, err = run(tmp_path, capsys, current, "--add-brokers", "6:c,7:d")
    assert_one_error_line(code, "", err, "--racks")
    code, summary, _ = run(tmp_path, capsys, current, "--add-brokers", "6:c,7:d", "--disable-rack-aware")
    assert code == 0 and summary["status"] == "optimal"
    counts = [summary["brokers"][str(b)]["replicas_after"] for b in range(8)]
    assert max(counts) - min(counts) <= 1  # racks ignored: replicas balanced over all eight


def test_a_topic_of_mixed_replication_factors_needs_one_named(tmp_path, capsys):
    current = kafka_current({"t": 6}, list(range(5)), 3, seed=5)
    current["partitions"][2]["replicas"] = current["partitions"][2]["replicas"][:2]
    current["partitions"][2]["log_dirs"] = ["any", "any"]
    code, _, err = run(tmp_path, capsys, current)
    assert "has partitions of 2 and 3 replicas" in assert_one_error_line(code, "", err, "--replication-factor")
    code, summary, _ = run(tmp_path, capsys, current, "--replication-factor", "3")
    assert code == 0 and all(len(p["replicas"]) == 3 for p in written(tmp_path)[0]["partitions"])


def test_nothing_to_move_writes_no_file_kafka_would_refuse(tmp_path, capsys):
    """A plan that changes nothing writes neither file (Kafka's --execute refuses an empty list) and leaves
    none from an earlier plan in the folder; a balanced cluster keeps every replica list as it is (a
    follower order changed for nothing is no change)."""
    current = {"version": 1, "partitions": [{"topic": "t", "partition": p, "replicas": [p % 3, (p + 1) % 3]}
                                            for p in range(6)]}
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "reassignment.json").write_text("{}")
    code, summary, _ = run(tmp_path, capsys, current)
    assert code == 0 and summary["partitions_changed"] == 0 and summary["files"] == {}
    assert not list((tmp_path / "out").iterdir())
    code, summary, _ = run(tmp_path, capsys, current, "--pin", "t")
    assert code == 0 and summary["files"] == {}


def test_out_that_cannot_be_a_folder_is_one_line(tmp_path, capsys):
    (tmp_path / "out").write_text("")  # run() writes into tmp_path / "out"
    code, _, err = run(tmp_path, capsys, GOOD, "--add-brokers", "2")
    assert "is a file, not a folder" in assert_one_error_line(code, "", err, "--out")


def test_a_follower_order_is_never_changed_for_nothing(tmp_path, capsys):
    """Every partition in the plan gets another broker set or another leader: the rule reads only those, so a
    list with the same leader and brokers stays as it is (on this cluster the model reordered 4 before)."""
    lists = {"orders": [[2, 4, 0], [3, 5, 1], [4, 0, 2], [5, 1, 3], [0, 2, 4], [1, 3, 5], [2, 1, 3], [3, 2, 4],
                        [4, 3, 5], [5, 4, 0], [0, 5, 1], [1, 0, 2]],
             "payments": [[1, 5], [2, 0], [3, 1], [4, 2], [5, 3], [0, 4]]}
    current = {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r}
                                            for t, rows in lists.items() for p, r in enumerate(rows)]}
    racks = {str(b): "rack-" + "abc"[b % 3] for b in range(6)}
    for options in ((), ("--add-brokers", "6:rack-a,7:rack-b")):
        code, summary, _ = run(tmp_path, capsys, current, *options, racks=racks)
        assert code == 0
        doc = written(tmp_path)[0] if summary["files"] else {"partitions": []}
        before = {(p["topic"], p["partition"]): p["replicas"] for p in current["partitions"]}
        assert all(set(p["replicas"]) != set(before[(p["topic"], p["partition"])])
                   or p["replicas"][0] != before[(p["topic"], p["partition"])][0] for p in doc["partitions"])
        assert summary["partitions_changed"] == len(doc["partitions"])


def test_sizes_read_as_kafka_log_dirs_prints_them(tmp_path, capsys):
    """kafka-log-dirs.sh --describe prints two lines of text before its JSON: --sizes takes its output as it
    is; text with no JSON after it is still one error line naming --sizes."""
    current = kafka_current({"t": 8}, list(range(4)), 2, seed=6)
    sizes = {(p["topic"], p["partition"]): 100 * (p["partition"] + 1) for p in current["partitions"]}
    printed = ("Querying brokers for log directories information\n"
               "Received log directory information from brokers 0,1,2,3\n" + json.dumps(log_dirs(current, sizes)))
    (tmp_path / "printed.txt").write_text(printed)
    code, summary, err = run(tmp_path, capsys, current, "--add-brokers", "4", "--sizes", str(tmp_path / "printed.txt"))
    assert code == 0, err
    assert summary["bytes_moved"] > 0
    (tmp_path / "printed.txt").write_text("Querying brokers for log directories information\n")
    code, _, err = run(tmp_path, capsys, current, "--sizes", str(tmp_path / "printed.txt"))
    assert "not valid JSON" in assert_one_error_line(code, "", err, "--sizes")
