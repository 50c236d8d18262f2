"""The oracle reads what ``solve`` writes (issue 19, items 4 and 5).

A cooperative answer's ``target`` is scored as ``solve`` scores it, in
``check``, ``evaluate``, both ``--batch`` modes and :mod:`kipopt.testing`;
``check`` takes the rule of the solution's ``method``; criteria are printed
beside the optimum's and ``--tolerance`` may name them; a bare assignment is
refused with how to wrap it; ``generate`` creates its ``--out`` folder and
lists one family's parameters with their defaults.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from kipopt import api
from kipopt.batch import Oracle, Outcome
from kipopt.cli import main
from kipopt.datasets import generate
from kipopt.instance import to_dict
from kipopt.testing import assert_feasible, assert_optimal, assert_same_as_kafka


def _group(seed: int):
    return generate("consumers", seed, members=4, topics=2, partitions=12, subscriptions="equal")


@pytest.fixture(scope="module")
def cooperative(tmp_path_factory):
    """Seed 1: Kafka's cooperative answer is optimal and withholds 2 partitions; seed 2: it is one
    cross-rack partition above the optimum, with fewer revocations."""
    folder = tmp_path_factory.mktemp("cooperative")
    out = {}
    for seed in (1, 2):
        inst = _group(seed)
        solution = api.solve(inst, "kafka.cooperative_sticky")
        assert solution.metrics["withheld"] > 0, "fixture: the partial answer must withhold partitions"
        (folder / f"i{seed}.json").write_text(json.dumps(to_dict(inst)))
        (folder / f"s{seed}.json").write_text(json.dumps(solution.to_dict()))
        partial = {"assignment": solution.to_dict()["assignment"]}
        (folder / f"p{seed}.json").write_text(json.dumps(partial))
        out[seed] = (inst, solution, str(folder / f"i{seed}.json"), str(folder / f"s{seed}.json"),
                     str(folder / f"p{seed}.json"))
    return out


def _run(argv, capsys):
    status = main(argv)
    captured = capsys.readouterr()
    return status, (json.loads(captured.out) if captured.out.strip() else None), captured.err


# --------------------------------------------------------------------------- target and rule


def test_check_scores_the_target_on_the_methods_rule(cooperative, capsys):
    _, solution, inst, sol, _ = cooperative[1]
    status, verdict, err = _run(["check", inst, sol], capsys)
    assert status == 0 and verdict["ok"] and verdict["rule"] == "balanced"
    assert verdict["violations"] == [] and verdict["metrics"]["withheld"] == solution.metrics["withheld"]
    assert verdict["criteria"] == solution.metrics["criteria"] == verdict["optimum_criteria"]
    assert "cross_rack 0 (optimum 0), revoked" in err


def test_the_partial_alone_is_not_feasible(cooperative, capsys):
    _, _, inst, _, partial = cooperative[1]
    status, verdict, err = _run(["check", inst, partial, "--rule", "balanced"], capsys)
    assert status == 1 and not verdict["feasible"]
    assert verdict["violations"][0]["rule"] == "unassigned_partition"


def _broken_partial(solution, how: str) -> dict:
    """``solution``'s document with its partial assignment broken one way (the target left as it is)."""
    doc = solution.to_dict()
    partial, target = doc["assignment"], doc["target"]
    first, second = [m for m in partial if partial[m]][:2]
    if how == "twice":  # a partition of the first member's target also given to the second
        partial[second] = partial[second] + [partial[first][0]]
    elif how == "missing":
        del partial[first]
    elif how == "one round":  # the target itself as the partial: withheld partitions move without a revocation
        doc["assignment"] = {m: list(ps) for m, ps in target.items()}
    else:  # "beyond target": a withheld partition given to a member whose target does not hold it
        withheld = next(p for m in target for p in target[m] if p not in partial[m])
        partial[next(m for m in partial if withheld not in target[m])].append(withheld)
    return doc


@pytest.mark.parametrize("how, rules", [("twice", {"partial_duplicate_partition", "partial_not_in_target"}),
                                        ("missing", {"partial_missing_member"}),
                                        ("beyond target", {"partial_not_in_target"}),
                                        ("one round", {"partial_not_revoked"})])
def test_the_partial_beside_a_target_is_checked_too(cooperative, tmp_path, capsys, how, rules):
    """A target does not excuse its partial assignment: what the partial breaks on its own (a partition
    given twice, a member left out, a partition its member's target does not hold, a partition moved from
    its owner without the revocation round: the whole target passed as the partial) is reported as
    ``partial_*`` by evaluate, check, both batch modes and kipopt.testing; withholding alone is not."""
    inst_obj, solution, inst, _, _ = cooperative[1]
    path = tmp_path / "broken.json"
    doc = _broken_partial(solution, how)
    path.write_text(json.dumps(doc))
    status, evaluation, _ = _run(["evaluate", inst, str(path)], capsys)
    assert status == 1 and rules <= {v["rule"] for v in evaluation["violations"]}
    assert all(v["rule"].startswith("partial_") for v in evaluation["violations"])
    status, verdict, _ = _run(["check", inst, str(path)], capsys)
    assert status == 1 and not verdict["feasible"] and not verdict["ok"]
    for mode in ("evaluate", "check"):
        line = {"id": 7, "instance": to_dict(inst_obj), "solution": doc}
        verdict = Oracle(mode).answer(json.dumps(line))[0]
        assert verdict["id"] == 7 and not verdict["ok"] and rules <= {v["rule"] for v in verdict["violations"]}
    with pytest.raises(AssertionError, match="partial_"):
        assert_feasible(inst_obj, doc)
    with pytest.raises(AssertionError, match="partial_"):
        assert_optimal(inst_obj, doc)


def test_evaluate_reports_the_methods_rule_as_solve_did(capsys, tmp_path):
    """A solution naming a kipopt method is evaluated on that method's rule too: ``kafka.round_robin``'s
    balance breaks (its rule is ``balanced``) are in ``evaluate``, as in the solution ``solve`` wrote."""
    found = 0
    for seed in range(6):
        inst = generate("consumers", seed, members=6, topics=3, partitions=20, subscriptions="mixed")
        (tmp_path / "i.json").write_text(json.dumps(to_dict(inst)))
        for method in ("kafka.round_robin", "kafka.range", "kafka.cooperative_sticky", "exact.balanced"):
            solution = api.solve(inst, method)
            (tmp_path / "s.json").write_text(json.dumps(solution.to_dict()))
            status, evaluation, _ = _run(["evaluate", str(tmp_path / "i.json"), str(tmp_path / "s.json")], capsys)
            assert evaluation["violations"] == solution.metrics["violations"]
            assert status == (1 if solution.metrics["violations"] else 0)
            found += bool(solution.metrics["violations"])
    assert found, "fixture: some round-robin answer must break balance"


def test_the_python_api_takes_what_solve_returns(cooperative):
    """``kipopt.check`` and ``kipopt.evaluate`` take a :class:`~kipopt.solution.Solution` as ``solve`` returns
    it (its target, method and rule read as the command line reads its document)."""
    import kipopt
    inst, solution, _, _, _ = cooperative[1]
    verdict = kipopt.check(inst, solution)
    assert verdict.rule == "balanced" and verdict.ok and verdict.evaluation.metrics["withheld"] > 0
    assert kipopt.evaluate(inst, solution).to_dict() == kipopt.evaluate(inst, solution.to_dict()).to_dict()
    assert kipopt.evaluate(inst, solution).feasible and not kipopt.evaluate(inst, solution.assignment).feasible


@pytest.mark.parametrize("family, method", [("tasks", "kafka.ha"), ("replicas", "kafka.adminutils")])
def test_a_target_outside_consumers_is_refused(family, method, tmp_path, capsys):
    inst = generate(family, 1)
    doc = api.solve(inst, method).to_dict()
    (tmp_path / "i.json").write_text(json.dumps(to_dict(inst)))
    (tmp_path / "s.json").write_text(json.dumps(dict(doc, target=doc["assignment"])))
    status, _, err = _run(["evaluate", str(tmp_path / "i.json"), str(tmp_path / "s.json")], capsys)
    assert status == 2 and err.startswith("kipopt: error: SOLUTION target: only a consumers solution")


def test_an_unknown_method_lists_the_instances_family_only(cooperative, capsys):
    inst = cooperative[1][2]
    status, _, err = _run(["solve", inst, "--method", "kafka.nope"], capsys)
    assert status == 2 and "available for family 'consumers'" in err and "kafka.cooperative_sticky" in err
    assert "kafka.ha" not in err and "kafka.adminutils" not in err


def test_a_cooperative_answer_without_its_target_gets_a_hint(cooperative, tmp_path, capsys):
    """A solution naming kafka.cooperative_sticky without the target it answers: the failed verdict says to
    pass the full assignment as "target" (check, evaluate, kipopt.testing)."""
    inst_obj, solution, inst, _, _ = cooperative[1]
    path = tmp_path / "no_target.json"
    path.write_text(json.dumps({k: v for k, v in solution.to_dict().items() if k != "target"}))
    for command in ("check", "evaluate"):
        status, _, err = _run([command, inst, str(path)], capsys)
        assert status == 1 and 'give its full assignment as "target"' in err and len(err.splitlines()) == 1
    for assertion in (assert_feasible, assert_optimal):
        with pytest.raises(AssertionError, match='give its full assignment as "target"'):
            assertion(inst_obj, str(path))


def test_check_without_rule_or_method_refuses_naming_the_choices(cooperative, capsys):
    _, _, inst, _, partial = cooperative[1]
    status, verdict, err = _run(["check", inst, partial], capsys)
    assert status == 2 and verdict is None
    assert err.startswith("kipopt: error: --rule: ") and "balanced, range" in err and len(err.splitlines()) == 1


def test_unknown_method_names_the_rules(cooperative, tmp_path, capsys):
    _, solution, inst, _, _ = cooperative[1]
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(dict(solution.to_dict(), method="mylib.sticky")))
    status, _, err = _run(["check", inst, str(path)], capsys)
    assert status == 2 and "mylib.sticky" in err and "balanced, range" in err


@pytest.mark.parametrize("command", ["evaluate", "check"])
def test_a_method_of_another_family_is_refused_alike(cooperative, tmp_path, capsys, command):
    """A consumers solution naming a tasks method: check refused it while evaluate scored it without the
    method's rule (exit 0); both refuse it now, naming the field, as a solution of another family is."""
    _, solution, inst, _, _ = cooperative[1]
    path = tmp_path / "other.json"
    path.write_text(json.dumps(dict(solution.to_dict(), method="kafka.rack_active")))
    status, out, err = _run([command, inst, str(path)], capsys)
    assert status == 2 and out is None
    assert err.strip() == ("kipopt: error: SOLUTION method: kafka.rack_active is a kipopt method of family 'tasks', "
                           "the instance is 'consumers'")


def test_evaluate_exits_alike_alone_and_in_batch(cooperative, capsys):
    inst_obj, _, inst, sol, partial = cooperative[1]
    for path, status_expected in ((sol, 0), (partial, 1)):
        status, evaluation, err = _run(["evaluate", inst, path], capsys)
        assert status == status_expected and evaluation["feasible"] is (status_expected == 0)
        # exit 1 is said on stderr, one line naming each rule broken (as check and solve say theirs)
        rules = [v["rule"] for v in evaluation["violations"]]
        assert (err.strip().splitlines() == []) if status == 0 else \
            (len(err.strip().splitlines()) == 1 and all(r in err for r in rules) and "NOT feasible" in err)
        line = {"id": 1, "instance": to_dict(inst_obj), "solution": json.load(open(path))}
        oracle = Oracle("evaluate")
        out = io.StringIO()
        worst = oracle.run(io.BytesIO((json.dumps(line) + "\n").encode()), out)
        assert int(worst) == status_expected
        batch = json.loads(out.getvalue())
        assert {k: batch[k] for k in evaluation} == evaluation


# --------------------------------------------------------------------------- criteria and tolerance


@pytest.mark.parametrize("tolerance, status", [(None, 1), ("cross_rack=1", 0), ("revoked=5", 1),
                                               ("cross_rack=1,revoked=0", 0), ("cross_rack=100%", 0)])
def test_tolerance_per_criterion(cooperative, capsys, tolerance, status):
    _, _, inst, sol, _ = cooperative[2]
    argv = ["check", inst, sol] + ([] if tolerance is None else ["--tolerance", tolerance])
    got, verdict, _ = _run(argv, capsys)
    assert got == status and verdict["criteria_excess"]["cross_rack"] == 1
    assert verdict["criteria_excess"]["revoked"] < 0  # a cross-rack partition bought one revocation less


@pytest.mark.parametrize("tolerance, words", [("bogus=1", "balanced has no criterion 'bogus'; its criteria: "
                                                          "cross_rack, revoked"),
                                              ("revoked=-1", "--tolerance"), ("revoked", "NAME=V"),
                                              ("revoked=1,revoked=2", "twice")])
def test_bad_tolerance_is_exit_2(cooperative, capsys, tolerance, words):
    _, _, inst, sol, _ = cooperative[2]
    status, verdict, err = _run(["check", inst, sol, "--tolerance", tolerance], capsys)
    assert status == 2 and verdict is None and words in err and len(err.splitlines()) == 1


def test_rule_without_criteria_refuses_a_per_criterion_tolerance(capsys, tmp_path):
    inst = generate("tasks", 5, tasks=12, clients=4)
    (tmp_path / "i.json").write_text(json.dumps(to_dict(inst)))
    (tmp_path / "s.json").write_text(json.dumps(api.solve(inst, "kafka.rack_active").to_dict()))
    status, _, err = _run(["check", str(tmp_path / "i.json"), str(tmp_path / "s.json"),
                           "--tolerance", "traffic=1"], capsys)
    assert status == 2 and "rule rack_active has no criteria" in err


def test_batch_lines_take_the_same_tolerances(cooperative):
    inst, solution, *_ = cooperative[2]
    base = {"instance": to_dict(inst), "solution": solution.to_dict()}
    lines = [dict(base, id=0), dict(base, id=1, tolerance="cross_rack=1"),
             dict(base, id=2, tolerance={"cross_rack": 1, "revoked": "0%"}), dict(base, id=3, tolerance={"x": 1}),
             dict(base, id=4, tolerance=0.8)]  # gap (9 - 2) / 9
    oracle = Oracle("check")
    verdicts = [oracle.answer(json.dumps(x))[0] for x in lines]
    assert [v["ok"] for v in verdicts] == [False, True, True, False, True]
    assert verdicts[2]["tolerance"] == {"cross_rack": 1, "revoked": "0%"}
    assert verdicts[3]["field"] == "tolerance" and "cross_rack, revoked" in verdicts[3]["error"]
    assert all(v.get("rule", "balanced") == "balanced" for v in verdicts) and oracle.stats.exact_solved == 1


def test_range_reports_its_criterion(cooperative):
    inst = cooperative[1][0]
    solution = api.solve(inst, "kafka.range")
    assert solution.metrics["criteria"] == {"cross_rack": solution.objective}


def test_revoked_has_one_meaning(cooperative):
    """The rule counts a unique highest-generation owner's partitions; the evaluator's claim count is
    ``claims_revoked``."""
    inst, solution, *_ = cooperative[2]
    assert "revoked" not in solution.metrics
    assert solution.metrics["claims_revoked"] > solution.metrics["criteria"]["revoked"]


# --------------------------------------------------------------------------- inputs


def test_bare_assignment_says_how_to_wrap_it(cooperative, tmp_path, capsys):
    _, solution, inst, _, _ = cooperative[1]
    path = tmp_path / "bare.json"
    path.write_text(json.dumps(solution.to_dict()["assignment"]))
    for command in ("check", "evaluate"):
        status, _, err = _run([command, inst, str(path)] + (["--rule", "balanced"] if command == "check" else []),
                              capsys)
        assert status == 2 and '{"assignment": {...}}' in err and len(err.splitlines()) == 1


def test_generate_out_creates_the_folder(tmp_path, capsys):
    out = tmp_path / "new" / "deeper" / "g.json"
    assert main(["generate", "consumers", "--seed", "3", "--members", "3", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["family"] == "consumers"
    capsys.readouterr()
    blocked = tmp_path / "file"
    blocked.write_text("")
    status = main(["generate", "consumers", "--seed", "3", "--out", str(blocked / "g.json")])
    assert status == 2 and capsys.readouterr().err.endswith(f"{blocked} is a file, not a folder\n")


@pytest.mark.parametrize("existing", [False, True])
def test_generate_out_naming_a_folder_is_refused_before_anything_is_made(tmp_path, capsys, existing):
    """--out new/ made the folder and then failed on it ("Is a directory"), leaving it behind."""
    folder = tmp_path / "new"
    if existing:
        folder.mkdir()
    status = main(["generate", "consumers", "--seed", "3", "--out", f"{folder}/"])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith(f"kipopt: error: --out: {folder}/ is a folder") and err.count("\n") == 1
    assert folder.exists() is existing and (not existing or not any(folder.iterdir()))


def test_generate_family_help_lists_its_options_with_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["generate", "consumers", "--help"])
    text = capsys.readouterr().out
    assert "--members" in text and "(default: 5)" in text and "--clients" not in text
    assert main(["generate", "consumers", "--seed", "1", "--clients", "3"]) == 2
    assert "--clients: does not apply to family consumers" in capsys.readouterr().err


# --------------------------------------------------------------------------- kipopt.testing


def test_testing_reads_targets_and_methods(cooperative):
    inst, solution, _, sol, partial = cooperative[1]
    assert_optimal(inst, solution)  # the rule of its method, its target scored
    assert_optimal(inst, sol)
    assert_feasible(inst, solution.to_dict(), rule="balanced")
    with pytest.raises(AssertionError, match="unassigned_partition"):
        assert_feasible(inst, partial)
    assert_same_as_kafka(inst, solution, "kafka.cooperative_sticky")
    assert_same_as_kafka(inst, json.load(open(sol)), "kafka.cooperative_sticky")


def test_same_as_kafka_compares_like_with_like(cooperative):
    inst, solution, *_ = cooperative[1]
    with pytest.raises(AssertionError, match="equals kafka.cooperative_sticky's target"):
        assert_same_as_kafka(inst, solution.target, "kafka.cooperative_sticky")
    wrong = solution.to_dict()
    members = list(wrong["target"])
    wrong["target"][members[0]], wrong["target"][members[1]] = wrong["target"][members[1]], wrong["target"][members[0]]
    with pytest.raises(AssertionError, match="target: member"):
        assert_same_as_kafka(inst, wrong, "kafka.cooperative_sticky")
    # a port without a target answers its full assignment: a given target is compared with it
    ranged = api.solve(inst, "kafka.range").to_dict()
    assert_same_as_kafka(inst, dict(ranged, target=ranged["assignment"]), "kafka.range")


def test_assert_feasible_checks_the_rules_hard_constraints():
    inst = generate("consumers", 4, members=3, topics=1, partitions=6, subscriptions="equal")
    members = [m.id for m in inst.members]
    skewed = {members[0]: tuple(f"{inst.members[0].topics[0]}-{p}" for p in range(4)),
              members[1]: (f"{inst.members[0].topics[0]}-4",), members[2]: (f"{inst.members[0].topics[0]}-5",)}
    assert_feasible(inst, skewed)
    with pytest.raises(AssertionError, match="range_quota"):
        assert_feasible(inst, skewed, rule="range")
    with pytest.raises(AssertionError, match="balance"):
        assert_feasible(inst, skewed, rule="balanced")


def test_no_solver_warning_reaches_the_caller(tmp_path):
    """PuLP's deprecation warnings (the small-group range model) stay inside kipopt under ``-W error``."""
    script = (
        "from kipopt import api\n"
        "from kipopt.datasets import generate\n"
        "from kipopt.testing import assert_optimal\n"
        "inst = generate('consumers', 3)\n"
        "assert_optimal(inst, api.solve(inst, 'exact.range'), 'range')\n"
        "api.solve(inst, 'exact.balanced')\n"
        "print('quiet')\n")
    run = subprocess.run([sys.executable, "-W", "error", "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "quiet", run.stderr[-2000:]


_SOLVES_IN_THREADS = """
import sys, threading, warnings
sys.setswitchinterval(1e-6)  # threads switch inside the blocks, as they may on a busy machine
from kipopt.api import own_warnings_silenced
warnings.simplefilter("error", UserWarning)   # the caller's own filter
before = list(warnings.filters)

start = threading.Barrier(3)

def solves():
    start.wait()
    for _ in range(10000):
        with own_warnings_silenced():
            warnings.warn("a solver's warning")   # stays inside
threads = [threading.Thread(target=solves) for _ in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(warnings.filters == before)
"""


def test_the_callers_warning_filters_survive_solves_in_threads():
    """Three threads running methods at once (each inside ``own_warnings_silenced``): every solver warning
    stays inside, and afterwards the caller's filters are exactly as before (a ``catch_warnings`` per call
    left "ignore" in place for good in most runs)."""
    run = subprocess.run([sys.executable, "-c", _SOLVES_IN_THREADS], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "True", run.stderr[-2000:]


def test_check_says_best_found_when_the_exact_model_proved_nothing(monkeypatch, capsys, tmp_path):
    """A check under a limit too short for a proof printed the exact model's answer as "optimum" (and each
    criterion's too): a user read a stopped model's leader imbalance, 8, as the best possible."""
    import json as _json
    from kipopt import api, cli
    from kipopt.datasets import generate
    from kipopt.instance import to_dict
    from kipopt.solution import Status
    x = generate("replicas", 13, partitions=67, brokers=7, added_brokers=2, racks=2)
    path = tmp_path / "x.json"
    path.write_text(_json.dumps(to_dict(x)))
    best = api.solve(x, "exact.spread")
    (tmp_path / "s.json").write_text(_json.dumps(best.to_dict()))
    real = api.exact_optimum

    def unproven(*args, **kwargs):
        found = real(*args, **kwargs)
        found.status = Status.FEASIBLE
        found.bound = found.objective - 100
        return found

    monkeypatch.setattr(api, "exact_optimum", unproven)
    cli.main(["check", str(path), str(tmp_path / "s.json")])
    captured = capsys.readouterr()
    line = captured.err
    assert "best found" in line and "exact.spread feasible" in line and "optimum" not in line, line
    verdict = _json.loads(captured.out)  # the JSON said "optimum" too: an answer worse than the one checked
    assert verdict["optimum"] is None and verdict["optimum_criteria"] is None
    assert verdict["best_found"] == best.objective and verdict["best_found_criteria"] == best.metrics["criteria"]


def test_kafkas_cooperative_answers_never_move_an_owned_partition_in_one_round():
    """``partial_not_revoked`` is the part of Kafka's withholding both of its paths keep (generations
    resolved as Kafka resolves them): the port, identical to Java's CooperativeStickyAssignor on thousands
    of groups, never breaks it, on either path, with conflicting and stale claims (3,000 groups measured)."""
    import random
    paths = set()
    for seed in range(120):
        rnd = random.Random(seed)
        x = generate("consumers", seed, partitions=rnd.choice([12, 30, 60]), members=rnd.choice([3, 5, 8]),
                     topics=rnd.choice([1, 2, 4]), subscriptions=rnd.choice(["equal", "mixed"]),
                     conflicts=rnd.choice([0.0, 0.2, 0.6]), static_members=rnd.choice([0.0, 0.5]))
        solution = api.solve(x, "kafka.cooperative_sticky")
        if solution.status.value not in ("optimal", "feasible"):
            continue
        paths.add(solution.metrics.get("sticky_builder"))
        rules = {v.rule for v in api.evaluate(x, solution).violations}
        assert "partial_not_revoked" not in rules, seed
    assert paths == {"constrained", "general"}
