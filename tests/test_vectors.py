"""``kipopt vectors``: generated and curated conformance vectors.

Round trip: re-running the port on each vector's instance reproduces its
``expected``. The curated set is declared as (case, method) pairs: methods
not registered are skipped with a note, and a port registered later (here a
throwaway ``kafka.range`` with a ``target``) shows up without any change.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kipopt import api, curated, methods as registry
from kipopt.cli import main
from kipopt.datasets import generate
from kipopt.instance import from_dict, to_dict
from kipopt.methods import KAFKA_COMMIT, Method, MethodResult, Rule, Status
from kipopt.vectors import curated_pairs, expected_of

# The ports the spec (cli.md) names, per family: every one must be exercised by the curated set.
SPEC_PORTS = {"consumers": {"kafka.range", "kafka.cooperative_sticky", "kafka.server_uniform", "kafka.server_range",
                            "kafka.round_robin", "kafka.eager_sticky"},
              "tasks": {"kafka.ha", "kafka.rack_active", "kafka.rack_standby", "kafka.tag_standby", "kafka.sticky"},
              "replicas": {"kafka.adminutils", "kafka.striped"}}


def read_folder(folder: Path) -> tuple[dict, dict[str, dict]]:
    manifest = json.loads((folder / "manifest.json").read_text())
    vectors = {e["file"]: json.loads((folder / e["file"]).read_text()) for e in manifest["vectors"]}
    assert sorted(p.name for p in folder.iterdir()) == sorted([*vectors, "manifest.json"])
    return manifest, vectors


def assert_round_trip(vector: dict) -> None:
    """The port, run again on the vector's instance, answers exactly ``expected``."""
    instance = from_dict(vector["instance"])
    assert to_dict(instance) == vector["instance"]
    assert expected_of(api.solve(instance, vector["method"])) == vector["expected"], vector["name"]
    m = registry.get_method(vector["method"])
    assert (vector["kafka_class"], vector["kafka_commit"], vector["rule"]) == (m.kafka_class, KAFKA_COMMIT, m.rule)


# --------------------------------------------------------------------------- the curated declarations


def test_curated_cases_are_valid_and_cover_every_port_of_the_spec():
    names = [c.name for c in curated.CASES]
    assert len(names) == len(set(names))
    declared: dict[str, set] = {f: set() for f in SPEC_PORTS}
    for c in curated.CASES:
        instance = curated.load_case(c)
        assert instance.family == c.family, c.name
        assert set(c.methods) <= SPEC_PORTS[c.family], c.name
        declared[c.family] |= set(c.methods)
        m = registry.methods()
        assert all(m[x].family == c.family for x in c.methods if x in m)
    assert declared == SPEC_PORTS


def test_curated_edge_cases_are_what_they_say():
    """The edge cases the issue asks for exist and have the stated shape."""
    load = lambda name: curated.load_case(curated.case(name))  # noqa: E731
    assert all(m.rack is None for m in load("consumers_no_racks").members)
    assert {m.rack for m in load("consumers_one_rack").members} == {"r1"}
    assert {m.rack is None for m in load("consumers_members_without_racks").members} == {True, False}
    missing = load("consumers_partitions_missing_from_rack")
    assert any("r3" not in racks for racks in missing.partition_racks.values())
    assert len(load("consumers_one_member").members) == 1
    conflicts = load("consumers_generation_conflicts")
    claims = [p for m in conflicts.members for p in m.owned]
    assert len(claims) > len(set(claims)) and len({m.generation for m in conflicts.members}) > 1
    assert len(load("tasks_one_client").clients) == 1 and len(load("replicas_one_broker").brokers) == 1
    assert {b.rack is None for b in load("replicas_brokers_without_racks").brokers} == {True, False}


def test_unknown_curated_case():
    with pytest.raises(Exception, match="unknown curated vector"):
        curated.case("nope")


# --------------------------------------------------------------------------- curated vectors


def test_curated_round_trip(tmp_path, capsys):
    """Every available curated pair is written, reproduced by its port, and the rest is reported skipped."""
    assert main(["vectors", "--curated", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    manifest, vectors = read_folder(tmp_path)
    assert json.loads(captured.out) == manifest
    run, skipped = curated_pairs()
    assert len(vectors) == len(run) > 0
    assert {(s["name"], s["method"]) for s in manifest["skipped"]} == {(s.name, s.method) for s in skipped}
    for s in skipped:
        assert f"note: {s.method} is not registered" in captured.err
    assert all(s["reason"].endswith("is not registered in this kipopt") for s in manifest["skipped"]), \
        "a registered port failed on a curated case"
    for vector in vectors.values():
        assert_round_trip(vector)
    statuses = {(v["name"], v["method"]): v["expected"]["status"] for v in vectors.values()}
    assert statuses[("replicas_brokers_without_racks", "kafka.adminutils")] == "infeasible"  # Kafka refuses


def test_list_marks_unregistered_methods(capsys, monkeypatch):
    monkeypatch.setattr(registry, "_methods", {k: v for k, v in registry.methods().items() if k != "kafka.striped"})
    assert main(["vectors", "--list", "replicas"]) == 0
    captured = capsys.readouterr()
    listing = json.loads(captured.out)
    assert listing["kafka_commit"] == KAFKA_COMMIT and listing["kipopt_version"]
    available = {(v["name"], v["method"]): v["available"] for v in listing["vectors"]}
    assert available[("kip36_six_brokers", "kafka.adminutils")] is True
    assert available[("kip36_six_brokers", "kafka.striped")] is False
    assert {v["family"] for v in listing["vectors"]} == {"replicas"}
    assert "kafka.striped is not registered in this kipopt" in captured.err


def _toy_range(instance, options):
    """Round robin over the subscribed partitions; withholds owned-elsewhere partitions into ``target``."""
    members = [m.id for m in instance.members]
    target = {m: [] for m in members}
    for i, p in enumerate(instance.subscribed_partitions):
        target[members[i % len(members)]].append(p)
    target = {m: tuple(ps) for m, ps in target.items()}
    partial = {m: ps[:1] for m, ps in target.items()}
    return MethodResult(partial, Status.FEASIBLE, target=target)


def test_a_port_registered_later_appears_without_change(tmp_path, capsys, monkeypatch):
    """A new consumer port (with a target) gets its curated vectors by registration alone."""
    toy = Method("kafka.range", "consumers", "toy_count", _toy_range, "toy", kafka_class="org.example.ToyAssignor")
    rule = Rule("toy_count", "consumers", "exact.none", lambda i, a: sum(map(len, a.values())),
                lambda i, a: [], "partitions handed out")
    monkeypatch.setattr(registry, "_methods", {**registry.methods(), toy.name: toy})
    monkeypatch.setattr(registry, "_rules", {**registry.rules(), rule.name: rule})
    assert main(["vectors", "--curated", "consumers", "--method", "kafka.range", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    manifest, vectors = read_folder(tmp_path)
    expected_names = [c.name for c in curated.CASES if "kafka.range" in c.methods]
    assert [v["name"] for v in vectors.values()] == expected_names and manifest["skipped"] == []
    for v in vectors.values():
        assert v["kafka_class"] == "org.example.ToyAssignor" and "target" in v["expected"]
        assert_round_trip(v)


# --------------------------------------------------------------------------- generated vectors


def test_generated_vectors(tmp_path, capsys):
    argv = ["vectors", "tasks", "--method", "kafka.rack_active", "--count", "4", "--seed", "11",
            "--tasks", "10", "--clients", "3", "--out", str(tmp_path)]
    assert main(argv) == 0
    capsys.readouterr()
    manifest, vectors = read_folder(tmp_path)
    assert (manifest["kind"], manifest["count"], manifest["seed"], manifest["params"]) == (
        "generated", 4, 11, {"tasks": 10, "clients": 3})
    assert len(vectors) == 4
    for seed, v in zip(range(11, 15), vectors.values()):
        assert v["generator"] == {"family": "tasks", "seed": seed, "params": {"tasks": 10, "clients": 3}}
        assert v["instance"] == to_dict(generate("tasks", seed, tasks=10, clients=3))
        assert_round_trip(v)


def test_a_seed_the_port_refuses_is_skipped_and_the_rest_written(tmp_path, capsys):
    """The server-side assignors refuse a partition two members claim: such a seed is listed under
    ``skipped`` with its reason and the others are written with their manifest (the command stopped at the
    first, exit 2, leaving vector files without a manifest)."""
    out = tmp_path / "v"
    assert main(["vectors", "consumers", "--method", "kafka.server_uniform", "--count", "3", "--seed", "1",
                 "--out", str(out)]) == 0
    err = capsys.readouterr().err
    manifest, written = read_folder(out)
    skipped = {s["name"]: s["reason"] for s in manifest["skipped"]}
    assert len(written) + len(skipped) == 3 and written and skipped
    assert all("refuses the instance of seed" in r and "also claimed" in r for r in skipped.values())
    assert all(f"warning: {name}" in err for name in skipped)


def test_vectors_written_again_replace_the_earlier_ones(tmp_path, capsys):
    """--out into a folder of earlier vectors: the files its manifest listed go, a file of the user's stays."""
    (tmp_path / "notes.json").write_text("{}")
    for seed in (1, 20):
        assert main(["vectors", "tasks", "--method", "kafka.rack_active", "--count", "2", "--seed", str(seed),
                     "--tasks", "6", "--clients", "2", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "manifest.json", "notes.json", "tasks.kafka.rack_active.seed-20.json", "tasks.kafka.rack_active.seed-21.json"]


def test_generated_replica_vectors_record_the_seed(tmp_path, capsys):
    assert main(["vectors", "replicas", "--method", "kafka.striped", "--count", "2", "--seed", "3",
                 "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    for v in read_folder(tmp_path)[1].values():
        assert v["expected"]["seed"] == 0
        assert_round_trip(v)


@pytest.mark.parametrize("argv,field", [
    (["vectors", "tasks", "--method", "exact.rack_active", "--seed", "1", "--out", "OUT"], "--method"),
    (["vectors", "replicas", "--method", "kafka.rack_active", "--seed", "1", "--out", "OUT"], "--method"),
    (["vectors", "tasks", "--method", "kafka.nope", "--seed", "1", "--out", "OUT"], "--method"),
    (["vectors", "tasks", "--method", "kafka.rack_active", "--seed", "1", "--members", "3", "--out", "OUT"],
     "--members"),
    (["vectors", "tasks", "--method", "kafka.rack_active", "--seed", "1"], None),
    (["vectors", "tasks", "--method", "kafka.rack_active", "--out", "OUT"], None),
    (["vectors", "--curated", "--seed", "1", "--out", "OUT"], None),
    (["vectors", "--curated", "--method", "kafka.nope", "--out", "OUT"], "--method"),
    (["vectors", "--list", "--method", "exact.spread"], "--method"),
    (["vectors", "tasks", "--method", "kafka.rack_active", "--seed", "1", "--count", "0", "--out", "OUT"], None),
])
def test_vectors_usage_errors(argv, field, tmp_path, capsys):
    argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    if field:
        assert captured.err.startswith(f"kipopt: error: {field}: ")
    assert not (tmp_path / "out").exists()


def test_a_port_failing_on_one_case_costs_only_that_vector(tmp_path, capsys, monkeypatch):
    """A registered port that raises on one curated case: that pair is skipped with its reason, the rest
    are written."""
    from kipopt.errors import MethodError
    real = registry.methods()["kafka.adminutils"]

    def picky(instance, options):
        if len(instance.brokers) == 1:
            raise MethodError("one broker is not supported")
        return real.run(instance, options)

    monkeypatch.setattr(registry, "_methods", {**registry.methods(), "kafka.adminutils": Method(
        "kafka.adminutils", "replicas", real.rule, picky, "picky", kafka_class=real.kafka_class)})
    assert main(["vectors", "--curated", "replicas", "--method", "kafka.adminutils", "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    manifest, vectors = read_folder(tmp_path)
    assert [s["name"] for s in manifest["skipped"]] == ["replicas_one_broker"]
    assert "one broker is not supported" in manifest["skipped"][0]["reason"] and "warning: replicas_one_broker" in err
    assert len(vectors) == sum("kafka.adminutils" in c.methods and c.family == "replicas" for c in curated.CASES) - 1


@pytest.mark.parametrize("argv, words", [
    # --list printed the list and ignored every other option, bad values included
    (["vectors", "--list", "--seed", "5", "--count", "3"], "--list takes only FAMILY and --method"),
    # another family's method filtered the list (or the curated set) down to nothing, exit 0
    (["vectors", "replicas", "--list", "--method", "kafka.ha"], "--method: kafka.ha is for family 'tasks'"),
    (["vectors", "consumers", "--curated", "--method", "kafka.adminutils", "--out", "d"],
     "--method: kafka.adminutils is for family 'replicas'"),
])
def test_vectors_options_that_would_be_ignored_are_refused(argv, words, capsys, tmp_path, monkeypatch):
    from kipopt.cli import main
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and words in captured.err and captured.err.count("\n") == 1
    assert not (tmp_path / "d").exists()


def test_an_interrupted_run_leaves_no_vector_beside_the_next_runs_manifest(tmp_path):
    """Vectors were written into --out one by one before the manifest: an interrupted run left hundreds of
    files no later run removed. They are written aside and moved into place once all are made."""
    from kipopt.vectors import PARTIAL, write_vectors

    def interrupted():
        for seed in range(3):
            yield from write_ready(seed)
        raise KeyboardInterrupt

    def write_ready(seed):
        inst = generate("consumers", seed, members=3, topics=2, partitions=4)
        solution = api.solve(inst, "kafka.range")
        yield f"v{seed}.json", {"name": f"v{seed}", "method": "kafka.range", "instance": to_dict(inst),
                                "expected": {"status": solution.status.value}}

    out = tmp_path / "vectors"
    with pytest.raises(KeyboardInterrupt):
        write_vectors(str(out), interrupted(), [], "generated")
    assert sorted(p.name for p in out.iterdir()) == []
    (out / f"{PARTIAL}dead").mkdir()   # as a SIGKILLed run leaves it
    (out / f"{PARTIAL}dead" / "v9.json").write_text("{}")
    manifest = write_vectors(str(out), write_ready(5), [], "generated")
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "v5.json"]
    assert [v["file"] for v in manifest["vectors"]] == ["v5.json"]
