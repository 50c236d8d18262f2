"""A time limit every exact tasks method keeps, whatever phase it is in when the deadline passes.

Building a model, HiGHS' presolve and cut separation, reading back and
repairing do not all watch the clock; at 100,000 tasks each can take longer
than the whole limit (issue 21: ``exact.tag_standby`` 20 s → 499 s). A
guarded method therefore runs in a child process that
:func:`~kipopt.formulations.highs.call_highs_before_with` kills at the deadline,
told a deadline a little earlier (:data:`GRACE_SHARE`) so that it normally
answers itself with its own incumbent and bound. Meanwhile this process makes
the method's *start* (an assignment meeting every hard rule of its rule, built
in linear time, with bound 0: every tasks rule's objective is a sum of
non-negative levels), on the other core instead of in the model's time. The
start is the answer when the method could not finish, or finished with an
incumbent worse than the start (:func:`better_of`).

Without a deadline (no ``--time-limit``) the method simply runs here.

>>> from kipopt.datasets import generate
>>> x = generate("tasks", 3, tasks=8, clients=3)
>>> roles = owner_actives(x)
>>> sorted(t for r in roles.values() for t in r.active) == sorted(x.task_ids)
True
"""

from __future__ import annotations

import dataclasses
import heapq
import pickle
import time
from contextvars import ContextVar
from typing import Callable, Mapping

from kipopt.deadline import MIN_SOLVER_SECONDS, Deadline
from kipopt.errors import InstanceError
from kipopt.evaluation.tasks import most_caught_up
from kipopt.instance import TasksInstance
from kipopt.methods import MethodResult, Runner, SolveOptions
from kipopt.solution import Status, TaskRoles

GRACE_SHARE = 0.1
"""Share of the method's time the child keeps back for sending its answer (at least :data:`GRACE_MIN`)."""
GRACE_MIN = 0.2

Start = Callable[[TasksInstance], dict[str, TaskRoles]]
"""Makes the start (:func:`named` says what it is, for the answer's message)."""
Objective = Callable[[TasksInstance, Mapping[str, TaskRoles]], float]
"""The rule's objective: a model stopped by the deadline whose incumbent is worse than the start answers
the start (with the model's bound), so a longer limit never answers worse than the start."""


START_BY: ContextVar[float | None] = ContextVar("start_by", default=None)
"""The instant (``time.perf_counter()``) by which a guarded run's start must be ready: a start that would
pass it takes its cheaper form (:func:`tagged_standbys` spreads the rest round robin)."""


def guarded(run: Runner, start: Start, objective: Objective | None = None) -> Runner:
    """``run`` under a deadline it cannot overrun: see the module docstring."""
    def runner(instance: TasksInstance, options: SolveOptions) -> MethodResult:
        return run_guarded(instance, options, run, start, objective)
    runner.__doc__ = run.__doc__
    runner.__name__ = getattr(run, "__name__", "runner")
    return runner


def run_guarded(instance: TasksInstance, options: SolveOptions, run: Runner, start: Start,
                objective: Objective | None = None) -> MethodResult:
    """``run(instance, options)`` in a child the deadline kills, while this process makes the start; the
    start when the model could not finish (or finished worse than it: :func:`better_of`). The start's
    objective is left to the caller (:func:`kipopt.api.solve` computes every answer's anyway)."""
    deadline = options.deadline()
    if deadline.at is None:
        return run(instance, options)
    from kipopt.formulations.highs import call_highs_before_with

    t0 = time.perf_counter()
    left = deadline.remaining()
    found = None
    grace = max(GRACE_MIN, GRACE_SHARE * left)
    by = deadline.at - grace
    if left > 0:
        inner = dataclasses.replace(options, deadline_at=deadline.at - grace,
                                    time_limit=max(MIN_SOLVER_SECONDS, left - grace))
        found, made = call_highs_before_with(Deadline(deadline.at), lambda: _outcome(run, instance, inner),
                                             lambda: _made(start, instance, by))
    else:  # no time left for a model: the start alone
        made = _made(start, instance, by)
    if found is not None and found[0] == "ok":
        return better_of(instance, found[1], made, objective)
    if found is not None and found[0] == "raise":
        if isinstance(found[1], _Refused):
            raise InstanceError(*found[1].args)
        raise found[1]
    fallback, what = made
    if found is not None or not deadline.expired:  # a MemoryError, or the child died (the kernel's OOM killer)
        why = "out of memory" if found is not None else "the solver's process died before the deadline (out of memory?)"
        message = f"{why}: returning {what or 'the start'}"
    else:
        message = f"time limit: the model did not finish in time, returning {what or 'the start'}"
    return MethodResult(fallback, Status.FEASIBLE, None, 0.0, message=message,
                        info={"model": "start", "killed_at_deadline": found is None and left > 0,
                              "start_seconds": round(time.perf_counter() - t0, 6)})


def _made(start: Start, instance: TasksInstance, by: float | None) -> tuple[dict[str, TaskRoles], str | None]:
    """The start, ready by ``by``, and what it is (:func:`named`). :data:`START_BY` is set here only: the
    model's child calls the same start functions (``exact.joint`` starts from its greedy), which must give
    a plain assignment there, never one carrying the name (a ``KeyError: '\\x00start'`` under a 0.1 s limit)."""
    token = START_BY.set(by)
    try:
        assignment = start(instance)
    finally:
        START_BY.reset(token)
    return assignment, assignment.pop(_NAME, None)


_NAME = "\x00start"


def named(assignment: dict[str, TaskRoles], what: str) -> dict[str, TaskRoles]:
    """``assignment`` carrying ``what`` it is, for the guard's message (taken out before it is used)."""
    assignment[_NAME] = what  # type: ignore[assignment]
    return assignment


def _outcome(run: Runner, instance: TasksInstance, options: SolveOptions) -> tuple[str, object]:
    """In the child: ``("ok", result)``, ``("memory", None)`` or ``("raise", exception)`` for the parent."""
    try:
        return "ok", run(instance, options)
    except MemoryError:
        return "memory", None
    except Exception as exc:  # noqa: BLE001 - re-raised in the parent, as it would be without the child
        return "raise", _portable(exc)


def better_of(instance: TasksInstance, result: MethodResult, made: tuple[dict[str, TaskRoles], str | None],
              objective: Objective | None) -> MethodResult:
    """``result``, or the start ``made`` (:func:`_made`) with ``result``'s bound when the model was stopped
    with an incumbent worse than the start."""
    if objective is None or result.status is not Status.FEASIBLE or result.objective is None:
        return result
    assignment, what = made
    mine = objective(instance, assignment)
    if mine >= result.objective:
        return result
    bound = 0.0 if result.bound is None else min(result.bound, mine)
    message = (f"{result.message or 'stopped'}; the model's incumbent ({result.objective:g}) is worse than "
               f"{what or 'the start'} ({mine:g}): returning the start")
    return MethodResult(assignment, Status.FEASIBLE, mine, bound, message=message,
                        info=dict(result.info, model="start", incumbent=result.objective))


def _portable(exc: Exception) -> Exception:
    """``exc`` as it survives the pipe: errors whose constructor differs from their ``args`` (kipopt's
    :class:`~kipopt.errors.InstanceError`) do not unpickle, so they travel as :class:`_Refused`."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - any exception that does not round-trip
        if isinstance(exc, InstanceError):
            return _Refused(exc.field, exc.message)
        return RuntimeError(f"{type(exc).__name__}: {exc}")


class _Refused(Exception):
    """An :class:`~kipopt.errors.InstanceError` on its way through the pipe (it does not unpickle itself)."""

    def __init__(self, field: str, message: str):
        super().__init__(field, message)


# --------------------------------------------------------------------------- memory

MODEL_MEMORY_BYTES = 4_000_000_000
"""Most memory a model may be estimated to need; a larger one is refused before it is built (exit 2
naming the field and the size it would need), never left to run out of memory mid-solve."""
MIP_BYTES_PER_COLUMN = 1_000
"""Peak bytes per column of a MIP through HiGHS (model arrays, presolve, search), measured: ``exact.joint``
at 10,000 tasks × 500 clients (10 million columns) peaked at 9.5 GB."""


def too_large(field: str, what: str, columns: int, bytes_per_column: int = MIP_BYTES_PER_COLUMN) -> str | None:
    """``None`` if a model of ``columns`` fits :data:`MODEL_MEMORY_BYTES`, else the reason (a method's
    ``requires``: the command line answers exit 2 with it)."""
    need = columns * bytes_per_column
    if need <= MODEL_MEMORY_BYTES:
        return None
    return (f"{field}: {what} make a model of {columns:,} columns, about {need / 1e9:.1f} GB; this method "
            f"builds at most {MODEL_MEMORY_BYTES // bytes_per_column:,} columns "
            f"({MODEL_MEMORY_BYTES / 1e9:.0f} GB)")


# --------------------------------------------------------------------------- starts


def owner_actives(instance: TasksInstance) -> dict[str, TaskRoles]:
    """Every task active on one client: its current owner when it has exactly one, else the next client
    in a round robin over the client ids; no standbys."""
    clients = instance.client_ids
    owners: dict[str, list[str]] = {}
    for cid in clients:
        for t in instance.clients[cid].active:
            owners.setdefault(t, []).append(cid)
    lists: dict[str, list[str]] = {cid: [] for cid in clients}
    turn = 0
    for t in instance.task_ids:
        mine = owners.get(t, ())
        if len(mine) == 1:
            lists[mine[0]].append(t)
        else:
            lists[clients[turn % len(clients)]].append(t)
            turn += 1
    return {cid: TaskRoles(tuple(lists[cid])) for cid in clients}


def caught_up_actives(instance: TasksInstance) -> dict[str, TaskRoles]:
    """Every task active on one of its most caught-up clients (any client for a stateless task), the one
    with the fewest tasks per thread after it (then the first in client order), in ``TaskId`` order; no
    standbys. A heap over the clients keeps it O(tasks · log clients) where every client qualifies."""
    clients = instance.client_ids
    index = {c: j for j, c in enumerate(clients)}
    cap = [instance.clients[c].capacity for c in clients]
    load = [0] * len(clients)
    best = most_caught_up(instance)
    reporters: dict[str, set[int]] = {}
    for cid, client in instance.clients.items():
        for t in client.lags:
            reporters.setdefault(t, set()).add(index[cid])
    heap = [((load[j] + 1) / cap[j], j) for j in range(len(clients))]
    heapq.heapify(heap)
    lists: list[list[str]] = [[] for _ in clients]
    for t in instance.task_ids:
        b = best.get(t)
        if b is not None and not b.unlisted:
            j = min((index[c] for c in b.listed), key=lambda k: ((load[k] + 1) / cap[k], k))
        else:
            barred = set() if b is None else reporters.get(t, set()) - {index[c] for c in b.listed}
            j = _least_loaded(heap, load, cap, barred)
        lists[j].append(t)
        load[j] += 1
        heapq.heappush(heap, ((load[j] + 1) / cap[j], j))
    return {cid: TaskRoles(tuple(lists[j])) for j, cid in enumerate(clients)}


def _least_loaded(heap: list, load: list[int], cap: list[int], barred: set[int], pop: bool = True) -> int | None:
    """The least-loaded client of ``heap`` not in ``barred`` (``None`` if none): popped when ``pop``, else
    left at the top. Stale entries (a load changed since) are dropped, barred ones put back."""
    skipped = []
    found = None
    while heap:
        key, j = heap[0]
        if key != (load[j] + 1) / cap[j]:
            heapq.heappop(heap)
            continue
        if j in barred:
            skipped.append(heapq.heappop(heap))
            continue
        found = j
        if pop:
            heapq.heappop(heap)
        break
    for entry in skipped:
        heapq.heappush(heap, entry)
    return found


def tagged_standbys(instance: TasksInstance, actives: Mapping[str, TaskRoles], count: int) -> dict[str, TaskRoles]:
    """``actives`` plus ``count`` (< clients) standbys of every stateful task, one by one on the client that
    adds the most tag values the task's hosts lack, then the fewest tasks per thread, then client order
    (``exact.joint``'s greedy, without its model). The gain depends on a client's tag profile only, so
    each step compares profiles, each with a heap of its clients: O(copies · (profiles + log clients))."""
    from kipopt.evaluation.tasks import tag_keys

    clients = instance.client_ids
    keys = tag_keys(instance)
    if count <= 0 or not keys:
        return spread_standbys(instance, actives, count)
    profile_of: dict[tuple, int] = {}
    member = [profile_of.setdefault(tuple((g, instance.clients[c].tags.get(g)) for g in keys), len(profile_of))
              for c in clients]
    profiles = list(profile_of)
    cap = [instance.clients[c].capacity for c in clients]
    load = [len(actives[c].active) for c in clients]
    heaps: list[list] = [[] for _ in profiles]
    for j, p in enumerate(member):
        heaps[p].append(((load[j] + 1) / cap[j], j))
    for h in heaps:
        heapq.heapify(h)
    where = {t: j for j, c in enumerate(clients) for t in actives[c].active}
    lists: list[list[str]] = [[] for _ in clients]
    by = START_BY.get()
    for i, t in enumerate(instance.task_ids):
        if by is not None and i % 256 == 0 and time.perf_counter() > by:  # no time left to be clever
            return named(spread_standbys(instance, actives, count), "the start (standbys spread round robin: "
                                                                    "no time was left to place them by tags)")
        if not instance.tasks[t].stateful:
            continue
        hosts = {where[t]}
        seen = {pair for pair in profiles[member[where[t]]] if pair[1] is not None}
        for _ in range(count):
            best = None
            for p, profile in enumerate(profiles):
                head = _least_loaded(heaps[p], load, cap, hosts, pop=False)
                if head is None:
                    continue
                gain = sum(1 for pair in profile if pair[1] is not None and pair not in seen)
                rank = (-gain, (load[head] + 1) / cap[head], head)
                if best is None or rank < best[0]:
                    best = (rank, p, head)
            _, p, j = best
            _least_loaded(heaps[p], load, cap, hosts, pop=True)  # takes j out
            hosts.add(j)
            seen.update(pair for pair in profiles[p] if pair[1] is not None)
            load[j] += 1
            heapq.heappush(heaps[p], ((load[j] + 1) / cap[j], j))
            lists[j].append(t)
    return {cid: TaskRoles(actives[cid].active, tuple(lists[j])) for j, cid in enumerate(clients)}


def spread_standbys(instance: TasksInstance, actives: Mapping[str, TaskRoles], count: int) -> dict[str, TaskRoles]:
    """``actives`` plus ``count`` (< clients) standbys of every stateful task on distinct clients other than
    its active one, taken round robin over the client ids so that they spread evenly."""
    clients = instance.client_ids
    C = len(clients)
    where = {t: j for j, cid in enumerate(clients) for t in actives[cid].active}
    lists: list[list[str]] = [[] for _ in clients]
    turn = 0
    for t in instance.task_ids:
        if count <= 0 or not instance.tasks[t].stateful:
            continue
        owner = where[t]
        for k in range(count):
            lists[(owner + 1 + (turn + k) % (C - 1)) % C].append(t)
        turn += count
    return {cid: TaskRoles(actives[cid].active, tuple(lists[j])) for j, cid in enumerate(clients)}
