"""Issue 21: a time limit is a promise at every size, and a model that cannot fit is refused up front.

Fast checks of the mechanisms; the sizes themselves are measured by ``benchmarks/bench_limits.py``.
Every exact tasks method, with its deadline already passed and with it passing mid-build, answers
with an assignment that breaks no rule, a valid bound and status ``feasible`` or ``optimal``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
import pytest

from kipopt import api
from kipopt.datasets import generate
from kipopt.errors import InstanceError
from kipopt.formulations import highs
from kipopt.formulations.tasks import guard, joint, joint_realize, lag_active, tag_standby
from kipopt.formulations.tasks.rack import rules as rack_rules
from kipopt.instance import from_dict, to_dict
from kipopt.methods import SolveOptions
from kipopt.solution import Status, TaskRoles

TASK_METHODS = ("exact.rack_active", "exact.balanced_subtopology", "exact.rack_standby", "exact.lag_active",
                "exact.tag_standby", "exact.joint")

BUILD_STEP = {  # a phase of each method that runs in the guarded child, before HiGHS
    "exact.rack_active": (rack_rules, "choose_model"),
    "exact.balanced_subtopology": (rack_rules, "choose_model"),
    "exact.rack_standby": (rack_rules, "place_standbys"),
    "exact.lag_active": (lag_active, "build_model"),
    "exact.tag_standby": (tag_standby, "profiles"),
    "exact.joint": (joint_realize, "build"),
}


def _instance(method: str):
    strategy = "balance_subtopology" if method == "exact.rack_active" else "min_traffic"
    return generate("tasks", 21, tasks=60, clients=8, subtopologies=4, tags=2, num_standby_replicas=1,
                    strategy=strategy)


def _answers_within_the_rule(solution, exact_objective: float) -> None:
    assert solution.status in (Status.FEASIBLE, Status.OPTIMAL), solution.message
    assert solution.assignment and solution.metrics["violations"] == []
    assert solution.bound is not None and solution.bound <= exact_objective + 1e-9 <= solution.objective + 2e-9


@pytest.fixture(scope="module")
def optima():
    return {m: api.solve(_instance(m), m).objective for m in TASK_METHODS}


@pytest.mark.parametrize("method", TASK_METHODS)
def test_a_deadline_already_passed_answers_with_the_start_and_a_valid_bound(method, optima):
    x = _instance(method)
    m = api.get_method(method, "tasks")
    result = m.run(x, SolveOptions(deadline_at=time.perf_counter() - 1.0))
    assert result.status is Status.FEASIBLE and result.info["model"] == "start" and "time limit" in result.message
    scored = api.score(x, result.assignment, m.rule)
    assert scored["violations"] == 0 and result.objective is None  # the façade computes it
    assert result.bound is not None and result.bound <= optima[method] <= scored["objective"]


def test_a_read_longer_than_the_limit_still_leaves_the_method_half_of_it():
    """The promise is the limit plus reading plus evaluating: a small model still finishes after a long read."""
    x = _instance("exact.rack_active")
    solution = api.solve(x, "exact.rack_active", time_limit=20.0, started=time.perf_counter() - 100)
    assert solution.status is Status.OPTIMAL and solution.seconds_reading >= 100


@pytest.mark.parametrize("method", TASK_METHODS)
def test_a_deadline_passing_mid_build_kills_the_model_and_answers_in_time(method, optima, monkeypatch):
    module, name = BUILD_STEP[method]
    original = getattr(module, name)

    def slow(*args, **kwargs):
        time.sleep(30)  # a phase that never looks at the clock
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, slow)
    x = _instance(method)
    began = time.perf_counter()
    solution = api.solve(x, method, time_limit=1.5)
    assert time.perf_counter() - began < 1.5 + 1.0
    _answers_within_the_rule(solution, optima[method])
    assert solution.metrics["killed_at_deadline"] is True


@pytest.mark.parametrize("method", TASK_METHODS)
def test_with_time_the_guarded_method_answers_as_the_model_does(method, optima):
    solution = api.solve(_instance(method), method, time_limit=60)
    assert solution.status is Status.OPTIMAL and solution.objective == optima[method]


def test_memory_exhaustion_is_reported_as_memory_never_as_a_time_limit(monkeypatch):
    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(joint_realize, "build", exhausted)
    solution = api.solve(_instance("exact.joint"), "exact.joint", time_limit=30)
    assert solution.status is Status.FEASIBLE and solution.metrics["violations"] == []
    assert solution.message.startswith("out of memory") and "time limit" not in solution.message


def test_an_error_in_the_guarded_child_is_raised_as_without_it(monkeypatch):
    def broken(*args, **kwargs):
        raise InstanceError("tasks", "broken on purpose")

    monkeypatch.setattr(joint_realize, "build", broken)
    with pytest.raises(InstanceError, match="broken on purpose"):
        api.solve(_instance("exact.joint"), "exact.joint", time_limit=30)


def test_a_small_lp_is_solved_even_after_the_deadline():
    lp = highs.ArrayLP(cost=np.array([1.0, 2.0]), lower=np.zeros(2), upper=np.ones(2),
                       row_lower=np.array([1.0]), row_upper=np.array([1.0]),
                       start=np.array([0, 1, 2]), index=np.array([0, 0]), value=np.array([1.0, 1.0]))
    res = highs.solve_lp(lp, deadline=highs.Deadline.after(-5.0))
    assert res.status == "optimal" and res.x.tolist() == [1.0, 0.0]
    assert highs.solve_lp(lp, integer=True, deadline=highs.Deadline.after(-5.0)).status == "time_limit"


def test_starts_meet_their_rules():
    x = generate("tasks", 5, tasks=300, clients=17, subtopologies=6, tags=2, num_standby_replicas=2)
    for method, start in (("exact.lag_active", guard.caught_up_actives), ("exact.tag_standby", tag_standby.start),
                          ("exact.joint", joint.joint_start)):
        rule = api.get_rule(api.get_method(method, "tasks").rule, "tasks")
        assignment = start(x)
        assert rule.violations(x, assignment) == [], method
        assert api.score(x, assignment, rule.name)["violations"] == 0, method


@pytest.mark.parametrize("tags", [0, 1, 3])
def test_spread_and_tagged_standbys_meet_tag_standby(tags):
    x = generate("tasks", 6, tasks=200, clients=9, num_standby_replicas=3, tags=tags, rackless_clients=0.3)
    actives = {c: TaskRoles(x.clients[c].active) for c in x.client_ids}
    for make in (guard.spread_standbys, guard.tagged_standbys):
        assert api.score(x, make(x, actives, 3), "tag_standby")["violations"] == 0, make.__name__


def test_tagged_standbys_reach_every_tag_value_when_there_is_room():
    """Three values of one key and two standbys: each task's three hosts carry all three values."""
    x = generate("tasks", 8, tasks=90, clients=12, num_standby_replicas=2, tags=1, tag_values=3)
    actives = {c: TaskRoles(x.clients[c].active) for c in x.client_ids}
    assert len({x.clients[c].tags["zone"] for c in x.client_ids}) == 3
    assert api.score(x, guard.tagged_standbys(x, actives, 2), "tag_standby")["criteria"]["tag_shortfall"] == 0


def test_a_start_with_no_time_left_spreads_its_standbys_and_still_meets_the_rule():
    """A guarded run's start past its instant (the guard's ``START_BY``): the tag greedy (12 s at 60,000 tasks
    and 2,000 clients, far past a 2 s limit) gives way to the round robin, which meets the rule too; the
    guard says which start it answered with."""
    import time
    x = generate("tasks", 6, tasks=200, clients=9, num_standby_replicas=2, tags=2)
    actives = {c: TaskRoles(x.clients[c].active) for c in x.client_ids}
    token = guard.START_BY.set(time.perf_counter() - 1)
    try:
        late = guard.tagged_standbys(x, actives, 2)
    finally:
        guard.START_BY.reset(token)
    assert "no time was left" in late.pop("\x00start")
    assert late == guard.spread_standbys(x, actives, 2)
    assert api.score(x, late, "tag_standby")["violations"] == 0
    assert guard.tagged_standbys(x, actives, 2) != late  # with time, the tags decide
    solution = api.solve(x, "exact.tag_standby", time_limit=0.001)  # no time at all: the round robin, said so
    assert solution.status.value == "feasible" and "no time was left" in solution.message


def test_the_start_instant_binds_the_guards_start_only_not_the_model(monkeypatch):
    """The model's child calls the same start functions (``exact.joint`` starts from its greedy): with the
    guard's instant visible there, a start past it came back carrying its name, and ``exact.joint`` under a
    0.1 s limit ended in ``KeyError: '\\x00start'`` (exit 3). The instant is the guard's start's alone."""
    from kipopt.methods import MethodResult, SolveOptions
    from kipopt.solution import Status
    x = generate("tasks", 6, tasks=20, clients=3)
    seen: dict[str, object] = {}

    def start(instance):
        seen["start"] = guard.START_BY.get()
        return {c: TaskRoles(instance.clients[c].active) for c in instance.client_ids}

    def run(instance, options):  # in the child: what it sees travels back in the message
        return MethodResult(start(instance), Status.FEASIBLE, message=repr(guard.START_BY.get()))

    result = guard.run_guarded(x, SolveOptions(30.0, None, None, None), run, start, None)
    assert result.message == "None" and isinstance(seen["start"], float)
    assert guard.START_BY.get() is None


# --------------------------------------------------------------------------- size caps


def test_a_joint_model_too_large_for_memory_is_refused_naming_the_field(monkeypatch):
    monkeypatch.setattr(guard, "MODEL_MEMORY_BYTES", 1_000_000)
    with pytest.raises(InstanceError) as caught:
        api.solve(_instance("exact.joint"), "exact.joint")
    assert caught.value.field == "tasks" and "GB" in caught.value.message


def test_a_lag_model_too_large_for_memory_is_refused_naming_the_field(monkeypatch):
    monkeypatch.setattr(guard, "MODEL_MEMORY_BYTES", 10_000)
    with pytest.raises(InstanceError) as caught:
        api.solve(_instance("exact.lag_active"), "exact.lag_active")
    assert caught.value.field == "clients"


def test_the_command_line_refuses_a_joint_model_too_large_with_exit_2(tmp_path):
    """20,000 tasks x 1,100 clients of 120 types (3 zones x 40 clusters): the model by client types has a
    column pair per (task, type), about 5 million columns, above the 4 GB cap."""
    x = generate("tasks", 1, tasks=20_000, clients=1_100, subtopologies=200, stateless_share=0.0, tags=2,
                 tag_values=40)
    path = tmp_path / "big.json"
    path.write_text(json.dumps(to_dict(x)))
    run = subprocess.run([sys.executable, "-m", "kipopt", "solve", str(path), "--method", "exact.joint"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stdout == ""
    line = run.stderr.strip()
    assert "\n" not in line and "tasks:" in line and "GB" in line


@pytest.mark.parametrize("family", ["tasks", "consumers"])
def test_instances_above_the_family_cap_are_refused_at_validation(family, monkeypatch):
    import kipopt.instance as instance_module
    data = to_dict(generate(family, 2))
    monkeypatch.setattr(instance_module, "MAX_TASK_COPIES", 10)
    monkeypatch.setattr(instance_module, "MAX_CONSUMER_PARTITIONS", 10)
    with pytest.raises(InstanceError) as caught:
        from_dict(data)
    assert caught.value.field == {"tasks": "tasks", "consumers": "topics"}[family]
    assert "would not fit in memory" in caught.value.message


def test_solve_prints_its_reading_time(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps(to_dict(_instance("exact.joint"))))
    run = subprocess.run([sys.executable, "-m", "kipopt", "solve", str(path), "--method", "exact.lag_active",
                          "--time-limit", "30"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    solution = json.loads(run.stdout)
    assert 0 <= solution["seconds_reading"] < 30


def _exhausted(*args, **kwargs):
    raise MemoryError


def test_memory_exhausted_outside_the_guard_is_exit_2_saying_so_never_an_internal_error(tmp_path, monkeypatch, capsys):
    """A method without a child (``exact.range``) or the evaluation of its answer running out of memory."""
    from kipopt import cli
    from kipopt.formulations.consumers import range as range_model

    path = tmp_path / "group.json"
    path.write_text(json.dumps(to_dict(generate("consumers", 3, partitions=40, members=5))))
    monkeypatch.setattr(range_model, "range_problem", _exhausted)
    monkeypatch.setattr(range_model, "PULP_MAX_PAIRS", 0)
    assert cli.main(["solve", str(path), "--method", "exact.range", "--time-limit", "5"]) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and "out of memory" in line and "time limit" not in line
    monkeypatch.undo()
    monkeypatch.setattr(api, "evaluate_answer", _exhausted)
    with pytest.raises(InstanceError, match="out of memory"):
        api.solve(from_dict(json.loads(path.read_text())), "kafka.range")


def test_a_stopped_model_worse_than_the_start_answers_the_start_with_the_models_bound():
    from kipopt.formulations.tasks.rack.rules import active_objective
    from kipopt.methods import MethodResult

    x = _instance("exact.rack_active")
    start = rack_rules.current_assignment(x)
    mine = active_objective(x, start)
    worse = MethodResult(start, Status.FEASIBLE, mine + 5, 1.0, message="time limit", info={"model": "m"})
    kept = guard.better_of(x, worse, (start, "the current assignment"), active_objective)
    assert kept.objective == mine and kept.bound == min(1.0, mine) and kept.info["model"] == "start"
    assert "the current assignment" in kept.message and kept.info["incumbent"] == mine + 5
    better = MethodResult(start, Status.FEASIBLE, mine, 0.0)
    assert guard.better_of(x, better, (start, None), active_objective) is better
    optimal = MethodResult(start, Status.OPTIMAL, mine + 5, mine + 5)  # never second-guessed
    assert guard.better_of(x, optimal, (start, None), active_objective) is optimal


def test_the_guard_keeps_the_better_start_end_to_end(monkeypatch):
    """A model stopped with a poor incumbent: the answer is the start, scored as such by the façade."""
    from kipopt.methods import MethodResult

    x = _instance("exact.tag_standby")
    bad = tag_standby.start(x)
    def poor(instance, options):
        return MethodResult(bad, Status.FEASIBLE, 10 ** 9, 0.0, message="time limit")

    runner = guard.guarded(poor, tag_standby.start, lambda instance, a: 3.0)
    result = runner(x, SolveOptions(time_limit=30, deadline_at=time.perf_counter() + 30))
    assert result.objective == 3.0 and result.info["model"] == "start" and result.bound == 0.0


def test_a_member_milp_past_its_limit_is_killed_at_the_deadline(monkeypatch):
    """exact.balanced's member MILP runs in a child the deadline kills (HiGHS' MIP passed its own limit
    by seconds at 100,000 x 5,000): a MILP that would sleep past the limit costs only the limit, and
    the dec-min answer comes back with a valid bound."""
    from kipopt.formulations.consumers import balanced

    inst = generate("consumers", 3, members=40, topics=16, partitions=40, subscriptions="mixed")

    def slow(*args, **kwargs):
        time.sleep(30)

    monkeypatch.setattr(balanced, "solve_members", slow)
    monkeypatch.setattr(balanced, "search_tree", lambda *a, **k: None)
    t0 = time.perf_counter()
    result = balanced.run_balanced(inst, SolveOptions(time_limit=2.0))
    assert time.perf_counter() - t0 < 4.0
    assert not balanced.balanced_violations(inst, result.assignment)
    assert result.bound <= result.objective
    assert result.status is Status.FEASIBLE and result.info.get("milp_status") == "stopped at the deadline"


def test_memory_running_out_in_another_guise_is_exit_2_saying_so(tmp_path, monkeypatch, capsys):
    """A library that cannot be mapped (a late import under ``ulimit -v``), no memory for a thread: the
    memory line, exit 2, never an internal error."""
    from kipopt import cli, instance as instance_module

    path = tmp_path / "group.json"
    path.write_text(json.dumps(to_dict(generate("consumers", 3, partitions=40, members=5))))
    for failure in (ImportError("libopenblas.so: failed to map segment from shared object"),
                    RuntimeError("can't start new thread"), OSError(12, "Cannot allocate memory")):
        def fail(*args, failure=failure, **kwargs):
            raise failure
        monkeypatch.setattr(instance_module, "load_instance", fail)
        assert cli.main(["validate", str(path)]) == 2
        line = capsys.readouterr().err.strip()
        assert line.startswith("kipopt: error: INSTANCE: out of memory") and "\n" not in line


def test_one_blas_thread_unless_the_caller_chose(tmp_path):
    """The console script keeps OpenBLAS to one thread (under a memory cap its thread buffers failed: a
    raise(SIGINT), or malloc retried for ever holding the GIL, past every limit and signal); a value the
    caller set is kept."""
    import os
    import subprocess
    import sys
    probe = ("import os, sys; sys.argv = ['kipopt', 'schema', 'tasks']; import kipopt.cli as c; "
             "c._exit_now = lambda code: print(os.environ.get('OPENBLAS_NUM_THREADS'), file=sys.stderr); c.main()")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    for given, seen in ((None, "1"), ("3", "3")):
        run_env = env if given is None else dict(env, OPENBLAS_NUM_THREADS=given)
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=run_env, timeout=60)
        assert done.stderr.strip().splitlines()[-1] == seen


def test_a_capped_address_space_ends_with_an_answer_or_the_memory_line(tmp_path):
    """``ulimit -v`` at 450 MB on 100,000 partitions: ``exact.spread`` under a 5 s limit hung for good before
    (OpenBLAS retrying malloc in a late import, holding the GIL); now it answers or says memory ran out,
    in seconds."""
    import resource
    import subprocess
    import sys
    import time
    from pathlib import Path
    path = tmp_path / "r.json"
    path.write_text(json.dumps(to_dict(generate("replicas", 9, partitions=100_000, brokers=250, racks=5))))
    kipopt = Path(sys.executable).with_name("kipopt")

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (450_000 * 1024, 450_000 * 1024))

    started = time.monotonic()
    done = subprocess.run([str(kipopt), "solve", str(path), "--method", "exact.spread", "--time-limit", "5"],
                          capture_output=True, text=True, timeout=120, preexec_fn=cap,
                          env={k: v for k, v in __import__("os").environ.items() if k != "OPENBLAS_NUM_THREADS"})
    assert time.monotonic() - started < 60
    assert done.returncode in (0, 2), done.stderr[-500:]
    if done.returncode == 2:
        assert "out of memory" in done.stderr
    else:
        assert json.loads(done.stdout)["status"] in ("optimal", "feasible")


def test_a_port_under_a_time_limit_says_the_limit_is_not_its(tmp_path, capsys):
    """Kafka's algorithms have no limit of their own: a port runs to its end and solve says so on stderr
    (the docs promised the limit bounded every run; ports ran 25 s past a 3 s limit, silently)."""
    from kipopt import cli
    path = tmp_path / "t.json"
    path.write_text(json.dumps(to_dict(generate("tasks", 1, tasks=12, clients=3))))
    assert cli.main(["solve", str(path), "--method", "kafka.ha", "--time-limit", "3"]) == 0
    err = capsys.readouterr().err
    assert "kafka.ha runs Kafka's algorithm to its end" in err and "exact methods only" in err
    assert cli.main(["solve", str(path), "--method", "exact.lag_active", "--time-limit", "30"]) == 0
    assert capsys.readouterr().err == ""


def test_highs_out_of_memory_in_exact_balanced_is_memory_not_a_greedy_answer(monkeypatch):
    """HiGHS ending its dec-min LP with kMemoryLimit: exit 2 saying memory ran out, as every method but the
    exact tasks ones reports it (it answered a greedy assignment, status feasible, exit 0)."""
    from kipopt.formulations.consumers import balanced
    monkeypatch.setattr(balanced, "solve_balanced", lambda *args, **kwargs: (None, "out_of_memory", {}))
    with pytest.raises(InstanceError, match="out of memory"):
        api.solve(generate("consumers", 2, members=6, topics=3, partitions=30, subscriptions="mixed"),
                  "exact.balanced", time_limit=10)


@pytest.mark.parametrize("cap_mb", [150, 250])
def test_reading_under_a_capped_address_space_never_crashes(tmp_path, cap_mb):
    """orjson ends the process with SIGSEGV when an allocation fails: ``validate`` of a 300,000-partition
    group under ``ulimit -v`` 150-250 MB died with exit 139 and no message. Under a cap the reader uses
    Python's own parser, which reads it (or says memory ran out)."""
    import resource
    import subprocess
    import sys
    from pathlib import Path
    path = tmp_path / "c.json"
    path.write_text(json.dumps(to_dict(generate("consumers", 1, partitions=300_000, members=1000, topics=50,
                                                owner_draw="direct"))))
    kipopt = Path(sys.executable).with_name("kipopt")

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap_mb * 2**20, cap_mb * 2**20))

    done = subprocess.run([str(kipopt), "validate", str(path)], capture_output=True, text=True, timeout=120,
                          preexec_fn=cap)
    assert done.returncode in (0, 2), (done.returncode, done.stderr[-500:])
    if done.returncode == 2:
        assert "out of memory" in done.stderr


@pytest.mark.parametrize("cap_mb", [155, 170])
def test_numpy_without_room_is_the_memory_line_not_openblas_exit_1(tmp_path, cap_mb):
    """numpy's OpenBLAS maps about 80 MB when it loads; short of it, it printed "Memory allocation still failed
    after 10 retries, giving up" and exited 1 (kipopt's "no"), or a C extension raised SystemError (exit 3).
    Now the import is a MemoryError first: the one memory line, exit 2."""
    import resource
    import subprocess
    import sys
    from pathlib import Path
    x = generate("replicas", 1, partitions=40, added_brokers=2)
    (tmp_path / "r.json").write_text(json.dumps(to_dict(x)))
    (tmp_path / "s.json").write_text(json.dumps(api.solve(x, "exact.spread").to_dict()))
    kipopt = Path(sys.executable).with_name("kipopt")

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap_mb * 2**20, cap_mb * 2**20))

    for argv in (["evaluate", "r.json", "s.json"], ["solve", "r.json", "--method", "proposal.sticky_reassign"]):
        done = subprocess.run([str(kipopt), *argv], capture_output=True, text=True, timeout=120, preexec_fn=cap,
                              cwd=tmp_path)
        assert done.returncode == 2, (argv, done.returncode, done.stderr[-300:])
        assert done.stderr.startswith("kipopt: error: INSTANCE: out of memory"), done.stderr


def test_a_system_error_under_a_capped_address_space_is_memory(monkeypatch):
    from kipopt import address_space, cli
    monkeypatch.setattr(address_space, "cap", lambda: 200 * 2**20)
    assert cli._memory_failure(SystemError("error return without exception set"))
    monkeypatch.setattr(address_space, "cap", lambda: None)
    assert not cli._memory_failure(SystemError("error return without exception set"))


def test_scipys_blas_without_room_is_the_memory_line_not_a_hang(tmp_path):
    """scipy's own OpenBLAS (loaded by scipy.linalg, through scipy.sparse.csgraph in exact.spread's leaders)
    retried an allocation for ever under ``ulimit -v`` 250 MB, holding the GIL: --time-limit 10 and SIGTERM
    did not end it (25 minutes). Now the import is a MemoryError first: the memory line, in seconds."""
    import resource
    import subprocess
    import sys
    from pathlib import Path
    (tmp_path / "r.json").write_text(json.dumps(to_dict(generate("replicas", 2, partitions=500, brokers=30,
                                                                 added_brokers=3))))
    kipopt = Path(sys.executable).with_name("kipopt")

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (250 * 2**20, 250 * 2**20))

    done = subprocess.run([str(kipopt), "solve", "r.json", "--method", "exact.spread", "--time-limit", "10"],
                          capture_output=True, text=True, timeout=90, preexec_fn=cap, cwd=tmp_path)
    assert done.returncode in (0, 2), (done.returncode, done.stderr[-300:])
    if done.returncode == 2:
        assert "out of memory" in done.stderr


def test_a_thread_highs_cannot_start_under_a_cap_is_memory(monkeypatch):
    from kipopt import address_space
    error = RuntimeError("Resource temporarily unavailable")
    monkeypatch.setattr(address_space, "cap", lambda: 200 * 2**20)
    assert address_space.memory_failure(error)
    monkeypatch.setattr(address_space, "cap", lambda: None)
    assert not address_space.memory_failure(error)  # without a cap it is not known to be memory
