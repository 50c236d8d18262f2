"""``kipopt`` command line (``spec/cli.md``): JSON on stdout, logs on stderr.

Exit status: 0 success, 1 a verdict of "no" (``check`` failed, ``solve``
found no solution), 2 bad input (one line naming the field), 3 an internal
error (one line; ``KIPOPT_DEBUG=1`` shows the traceback).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, NoReturn, Sequence

from ._write import json_only_stdout
from .cli_types import (_generator_seed, _java_long, _positive_float, _process_count, _tolerance,
                        _vector_count)
from .errors import InstanceError, KipoptError


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        option, said, rest = message.partition(": ")
        if option.startswith("argument ") and said:  # the option's name first, as every field error
            raise KipoptError(f"{option.removeprefix('argument ')}: {rest}")
        raise KipoptError(f"{self.prog}: {message}")


def _print_json(obj: Any) -> None:
    from ._write import dumps_indented, json_default  # json.dumps(obj, indent=2, allow_nan=False, default=...), faster
    from .interrupts import write_out
    write_out(sys.stdout, dumps_indented(obj, json_default) + "\n")


# --------------------------------------------------------------------------- commands


def cmd_validate(args: argparse.Namespace) -> int:
    from .instance import load_instance
    instance = load_instance(args.instance)
    _print_json({"ok": True, "family": instance.family})
    return 0


def _one_stdin(args: argparse.Namespace) -> None:
    """Standard input holds one document: the instance and the solution cannot both be read from it."""
    if args.instance == "-" and args.solution == "-":
        raise KipoptError("SOLUTION: the instance is read from standard input (-); give the solution as a file")


def cmd_evaluate(args: argparse.Namespace) -> int:
    if _batch_mode(args):
        return _run_batch(args, "evaluate")
    _one_stdin(args)
    from .api import evaluate_solution, load_answer, target_hint
    from .instance import load_instance
    instance = load_instance(args.instance)
    answer = load_answer(instance, args.solution)
    evaluation = evaluate_solution(instance, answer)
    _print_json(evaluation.to_dict())
    if evaluation.feasible:
        return 0
    # as a line of evaluate --batch: 1 when the assignment breaks a rule, said on stderr as check and solve do
    broken = ", ".join(f"{v.rule} ({v.count}{': ' + v.examples[0] if v.examples else ''})"
                       for v in evaluation.violations)
    hint = target_hint(instance, answer)
    line = f"kipopt evaluate: {evaluation.family}: the assignment breaks {broken}: NOT feasible" + \
        (f" ({hint})" if hint else "")
    print(" ".join(line.split("\n")), file=sys.stderr)   # one line, whatever the ids hold
    return 1


def cmd_solve(args: argparse.Namespace) -> int:
    from .api import solve
    from .solution import Status
    started = time.perf_counter()  # reading counts from here: the solution's seconds_reading (not the limit's)
    if args.time_limit is not None and not args.method.startswith("exact."):
        print(f"kipopt: note: {args.method} runs Kafka's algorithm to its end, as Kafka does: --time-limit "
              f"applies to exact methods only", file=sys.stderr)
    instance = _load_for_run(args.instance)
    solution = solve(instance, args.method, time_limit=args.time_limit, threads=args.threads, seed=args.seed,
                     priorities=args.priorities, started=started)
    if args.seed is not None and solution.seed is None and solution.status not in (Status.INFEASIBLE, Status.ERROR):
        print(f"kipopt: note: {solution.method} draws no random numbers: --seed changes nothing", file=sys.stderr)
    _print_json(solution.to_document())
    if solution.status in (Status.INFEASIBLE, Status.ERROR):
        print(f"kipopt: {solution.method}: {solution.status.value}: {solution.message}", file=sys.stderr)
        return 1
    return 0


def _load_for_run(source: str) -> Any:
    """The instance a command reads once and keeps to the end: out of the cyclic collector's sight
    (``gc.freeze``), so collections during the model and the evaluation do not walk its millions of
    objects again (measured: 0.5 s of a 100,000-task solve)."""
    import gc
    from .instance import load_instance
    instance = load_instance(source)
    if _whole_process:  # not when main([...]) is called inside a longer-lived process (tests, notebooks)
        gc.freeze()
    return instance


def cmd_check(args: argparse.Namespace) -> int:
    if _batch_mode(args):
        return _run_batch(args, "check", rule=args.rule, tolerance=args.tolerance, time_limit=args.time_limit)
    from .api import check, load_answer, target_hint
    from .instance import load_instance
    _one_stdin(args)
    instance = load_instance(args.instance)
    answer = load_answer(instance, args.solution)
    result = check(instance, answer, rule=args.rule, tolerance=args.tolerance, time_limit=args.time_limit,
                   priorities=args.priorities)
    _print_json(result.to_dict())
    hint = "" if result.ok else target_hint(instance, answer)
    verdict = "ok" if result.ok else "NOT ok" + (f" ({hint})" if hint else "")
    criteria = result.criteria_text()
    print(f"kipopt check: {result.rule}: objective {result.objective}, {result.optimum_text()}, "
          f"gap {result.gap}{'; ' + criteria if criteria else ''}; feasible {result.feasible}: {verdict}",
          file=sys.stderr)
    return 0 if result.ok else 1


def _batch_mode(args: argparse.Namespace) -> bool:
    """``--batch`` excludes the positional INSTANCE and SOLUTION; without it both are required."""
    if args.batch is not None:
        if args.instance is not None:
            raise KipoptError(f"kipopt {args.command}: with --batch, instances and solutions come from the "
                              f"lines of {args.batch}; unexpected argument {args.instance!r}")
        return True
    if args.instance is None or args.solution is None:
        missing = "instance, solution" if args.instance is None else "solution"
        raise KipoptError(f"kipopt {args.command}: the following arguments are required: {missing} "
                          f"(or --batch [FILE|-])")
    return False


def _run_batch(args: argparse.Namespace, mode: str, **defaults: Any) -> int:
    from .batch import Oracle, Stats
    from .batch_pool import default_jobs, run_pool
    jobs = default_jobs() if args.jobs is None else args.jobs

    def make() -> Oracle:
        return Oracle(mode, **defaults)

    oracle = make() if jobs == 1 else None  # with workers, each makes its own
    stats = oracle.stats if oracle is not None else Stats()

    def answer(handle: Any) -> Any:
        if oracle is not None:
            return oracle.run(handle, sys.stdout)
        return run_pool(make, handle, sys.stdout, jobs, stats)

    if args.batch == "-":
        worst = answer(sys.stdin.buffer)
    else:
        try:
            handle = open(args.batch, "rb")
        except OSError as exc:
            raise KipoptError(f"--batch: cannot read {args.batch}: {exc.strerror or exc}") from None
        with handle:
            worst = answer(handle)
    print(stats.summary(mode), file=sys.stderr)
    return int(worst)


def cmd_generate(args: argparse.Namespace) -> int:
    from .datasets import generate
    from .instance import to_dict
    if args.out and (args.out.endswith(("/", os.sep)) or os.path.isdir(args.out)):
        raise KipoptError(f"--out: {args.out} is a folder; give the file to write (e.g. "
                          f"{os.path.join(args.out, f'{args.family}-{args.seed}.json')})")
    instance = generate(args.family, args.seed, **_generator_args(args))
    text = json.dumps(to_dict(instance), separators=(",", ":"))
    if args.out:
        try:
            os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
            with open(args.out, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
        except OSError as exc:
            from ._write import unwritable
            raise KipoptError(f"--out: cannot write {args.out}: {unwritable(os.path.dirname(args.out), exc)}") from None
        print(f"kipopt: wrote {args.family} instance (seed {args.seed}) to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text + "\n")
    return 0


def cmd_reassign(args: argparse.Namespace) -> int:
    from .reassign.command import run
    summary = run(args)
    _print_json(summary)
    print(f"kipopt reassign: {summary['status']}: {summary['partitions_changed']:,} partitions change, "
          f"{summary['moves']:,} replicas move", file=sys.stderr)
    return 0 if summary["status"] in ("optimal", "feasible") else 1


def cmd_vectors(args: argparse.Namespace) -> int:
    from . import vectors
    if args.method is not None and args.family is not None:
        from .methods import _named
        found = _named("METHODS", args.method, args.family)
        if found is not None and found.family != args.family:  # as a filter it matched nothing: 0 vectors, exit 0
            raise InstanceError("--method", f"{args.method} is for family {found.family!r}, not {args.family!r}")
    if args.list:
        given = {"--out": args.out is not None, "--seed": args.seed is not None, "--count": args.count is not None,
                 "--curated": args.curated, "generator parameters": bool(_generator_args(args))}
        others = [flag for flag, used in given.items() if used]
        if others:
            raise KipoptError(f"kipopt vectors: --list takes only FAMILY and --method, not {', '.join(others)}")
        listing = vectors.listing(args.family, args.method)
        _note_skipped([vectors.Skipped(v["name"], v["method"], f"{v['method']} is not registered in this kipopt")
                       for v in listing["vectors"] if not v["available"]])
        _print_json(listing)
        return 0
    if args.out is None:
        raise KipoptError("kipopt vectors: --out DIR is required (or --list)")
    params = _generator_args(args)
    if args.curated:
        if params or args.seed is not None or args.count is not None:
            raise KipoptError("kipopt vectors: --curated takes no --seed, --count or generator parameters")
        found, skipped = vectors.curated_vectors(args.family, args.method)
        manifest = vectors.write_vectors(args.out, found, skipped, "curated", family=args.family, method=args.method)
        _note_skipped(skipped)
    else:
        missing = [flag for flag, value in (("FAMILY", args.family), ("--method", args.method), ("--seed", args.seed))
                   if value is None]
        if missing:
            raise KipoptError(f"kipopt vectors: {', '.join(missing)} required (or --curated, --list)")
        count = 10 if args.count is None else args.count
        found, skipped = vectors.generated_vectors(args.family, args.method, count, args.seed, params)
        manifest = vectors.write_vectors(args.out, found, skipped, "generated", family=args.family,
                                         method=args.method, count=count, seed=args.seed, params=params)
        _note_skipped(skipped)
    print(f"kipopt vectors: wrote {len(manifest['vectors'])} vectors and {vectors.MANIFEST} to {args.out}",
          file=sys.stderr)
    _print_json(manifest)
    return 0


def _note_skipped(skipped: list) -> None:
    unregistered: dict[str, int] = {}
    for s in skipped:
        if s.reason.endswith("is not registered in this kipopt"):
            unregistered[s.method] = unregistered.get(s.method, 0) + 1
        else:
            print(f"kipopt vectors: warning: {s.name}: {s.reason}", file=sys.stderr)
    for method, n in sorted(unregistered.items()):
        print(f"kipopt vectors: note: {method} is not registered in this kipopt: its {n} curated "
              f"vector{'s' if n > 1 else ''} skipped", file=sys.stderr)


def _generator_args(args: argparse.Namespace) -> dict[str, Any]:
    return {k[2:]: v for k, v in vars(args).items() if k.startswith("p_") and v is not None}


def cmd_schema(args: argparse.Namespace) -> int:
    from .schemas import schema
    _print_json(schema(args.family))
    return 0


# --------------------------------------------------------------------------- parser


def build_parser(command: str | None = None, family: str | None = None) -> argparse.ArgumentParser:
    """The full parser; given the ``command`` about to run, commands that do not need them skip the
    generator parameters (importing the generators costs ``validate`` and ``check`` start-up time);
    given its ``family`` too, ``generate`` and ``vectors`` offer that family's parameters only, with
    their defaults."""
    from .instance import FAMILIES
    from .schemas import DOCUMENTS
    parser = _Parser(prog="kipopt", description="Exact LP/ILP models of Kafka's assignment rules, "
                                                "cross-checked against ports of Kafka's algorithms.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("validate", help="check an instance")
    p.add_argument("instance", help="instance JSON path, or - for stdin")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("evaluate", help="metrics and broken rules of an assignment")
    p.add_argument("instance", nargs="?")
    p.add_argument("solution", nargs="?", help="solution JSON path, or - for stdin")
    _add_batch(p)
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("solve", help="run a method (kafka.* port, proposal.* port of an open Kafka PR, or exact.* model)")
    p.add_argument("instance")
    p.add_argument("--method", required=True)
    p.add_argument("--time-limit", type=_positive_float, default=None, help="seconds")
    p.add_argument("--threads", type=_process_count, default=None)
    p.add_argument("--seed", type=_java_long, default=None, help="java.util.Random's seed (methods that draw)")
    _add_priorities(p)
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("check", help="the oracle: an assignment against the exact optimum of a rule")
    p.add_argument("instance", nargs="?")
    p.add_argument("solution", nargs="?")
    p.add_argument("--rule", default=None, help="the rule to check against (default: the rule of the "
                                                "solution's method; with --batch: of lines that name none)")
    p.add_argument("--tolerance", type=_tolerance, default=0.0, metavar="X|NAME=V,...",
                   help="allowed relative gap of the objective (default 0), or per criterion: "
                        "cross_rack=0,revoked=2 (counts above the optimum's; V%% of it)")
    p.add_argument("--time-limit", type=_positive_float, default=None)
    _add_priorities(p)
    _add_batch(p)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("generate", help="write one seeded, generated instance")
    p.add_argument("family", choices=FAMILIES)
    p.add_argument("--seed", type=_generator_seed, required=True)
    p.add_argument("--out", default=None, help="file to write (default stdout)")
    _add_generator_params(p, command, family)
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("vectors", help="conformance vectors: instances with a kafka.* port's answer")
    p.add_argument("family", nargs="?", choices=FAMILIES, help="family (with --list/--curated: a filter)")
    p.add_argument("--method", default=None, help="a kafka.* port (with --list/--curated: a filter)")
    p.add_argument("--count", type=_vector_count, default=None, help="number of vectors (default 10, at most 100,000)")
    p.add_argument("--seed", type=_generator_seed, default=None,
                   help="seed of the first instance (then seed+1, ...)")
    p.add_argument("--out", default=None, help="folder for the vector files and manifest.json")
    p.add_argument("--curated", action="store_true", help="write the curated set shipped in the package")
    p.add_argument("--list", action="store_true", help="list the curated set (JSON)")
    _add_generator_params(p, command, family)
    p.set_defaults(func=cmd_vectors)

    p = sub.add_parser("schema", help="print the JSON Schema of a family or of a document kipopt prints")
    p.add_argument("family", choices=FAMILIES + DOCUMENTS, metavar="FAMILY|DOCUMENT",
                   help=f"one of {', '.join(FAMILIES + DOCUMENTS)}")
    p.set_defaults(func=cmd_schema)

    p = sub.add_parser("reassign", help="Kafka's current assignment and a scenario in, "
                                        "kafka-reassign-partitions.sh --execute and rollback files out")
    from .reassign.command import add_arguments
    add_arguments(p)
    p.set_defaults(func=cmd_reassign)

    _add_bench(sub)
    return parser


def _add_priorities(p: argparse.ArgumentParser) -> None:
    p.add_argument("--priorities", default=None, metavar="A,B,C",
                   help="joint rule: stage order (caught_up, standbys, tags, balance, traffic, non_overlap); "
                        "overrides the instance's config.joint_priorities")


def _add_batch(p: argparse.ArgumentParser) -> None:
    p.add_argument("--batch", nargs="?", const="-", default=None, metavar="FILE",
                   help="JSON lines {id, instance | instance_path, solution, ...} from FILE or - (stdin, the "
                        "default): one verdict line each, in order, streamed")
    p.add_argument("--jobs", type=_process_count, default=None, metavar="N",
                   help="with --batch: worker processes, each line routed by its instance (default: the "
                        "usable cores, at most 4; 1 answers every line in this process)")


def _add_generator_params(p: argparse.ArgumentParser, command: str | None, family: str | None = None) -> None:
    if command not in (None, p.prog.split()[-1]):
        return
    from .datasets import generator_params
    defaults = _family_defaults(family)
    for name, (kind, help_text) in generator_params().items():
        if defaults is not None:  # another family's parameter stays accepted (and refused by name), unlisted
            help_text = (f"{help_text} (default: {defaults[name]})".replace("%", "%%") if name in defaults
                         else argparse.SUPPRESS)
        p.add_argument(f"--{name.replace('_', '-')}", dest=f"p_{name}", type=kind, default=None,
                       metavar=name.upper(), help=help_text)


def _family_defaults(family: str | None) -> dict[str, Any] | None:
    """``{parameter: default}`` of one family's generator, or None when no family is named."""
    import dataclasses
    from .datasets import ConsumersParams, ReplicasParams, TasksParams
    cls = {"consumers": ConsumersParams, "replicas": ReplicasParams, "tasks": TasksParams}.get(family or "")
    return None if cls is None else {f.name: f.default for f in dataclasses.fields(cls)}


def _add_bench(sub: Any) -> None:
    try:
        from .bench.cli import add_bench_parser
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("kipopt.bench"):
            return
        raise
    add_bench_parser(sub)


def _one_line(text: str) -> str:
    """Escape control characters (a field name may hold a newline) so a message stays one line.

    >>> _one_line("tasks.0_0\\n: bad")
    'tasks.0_0\\\\n: bad'
    """
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


_whole_process = False
"""True when this command is the process (the console script: ``argv`` from ``sys.argv``)."""


def main(argv: Sequence[str] | None = None) -> int:
    global _whole_process
    _whole_process = own = argv is None
    # bench keeps Python's own exit (PySpark's exit handlers); it ends its Spark processes itself
    early_exit = own and _command(sys.argv[1:]) != "bench"
    if _whole_process and "numpy" not in sys.modules:
        # one BLAS thread, unless the caller chose: kipopt's numpy work is elementwise, and under a memory cap
        # OpenBLAS's per-thread buffers failed (pthread_create, a raise(SIGINT), malloc retried for ever)
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        from .address_space import guard_imports
        guard_imports()  # under a cap, numpy and scipy's BLAS fail badly without room: a MemoryError instead
    if own:
        from .interrupts import install
        install()
    with json_only_stdout():
        code = _main(argv)
    if own:
        from .interrupts import hold_if_stopping
        hold_if_stopping()  # a signal's exit status, not this one
    if early_exit:
        _exit_now(code)
    return code


def _command(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def _exit_now(code: int) -> NoReturn:
    """End the console-script process as soon as its output is out, without Python's finalization:
    clearing the modules numpy and ``scipy.sparse`` bring in and freeing HiGHS' objects took 0.04-0.05 s of
    a 10,000 x 1,000 ``exact.balanced`` solve's 0.97 s end to end, and a tenth of a ``kipopt check`` (the
    oracle runs once per test case). Nothing is lost: kipopt registers no exit handler, every file it
    writes is closed by then, and its children are reaped (any left are killed here, as on a signal)."""
    from .interrupts import flush_streams, kill_children
    code = 0 if code is None else int(code)  # as sys.exit(None)
    if not flush_streams():  # a closed pipe: as Python's own exit, a failure
        code = code or 1
    kill_children()
    os._exit(code)


def _main(argv: Sequence[str] | None) -> int:
    command = None
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        words = [a for a in argv if not a.startswith("-")]
        command = words[0] if words else None
        family = next((w for w in words[1:] if w in ("tasks", "replicas", "consumers")), None)
        parser = build_parser(command, family)
        args = parser.parse_args(argv)
        _refuse_empty_options(parser, args)
        return args.func(args)
    except (KeyboardInterrupt, Exception) as exc:  # SystemExit (argparse's own exits) goes through
        return _failed(exc, command, any(a == "--batch" or a.startswith("--batch=") for a in argv or ()))


def _refuse_empty_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """An option given an empty value (``--rule=``, ``--brokers ""``) is refused naming it: read as absent,
    it chose a default rule or planned as if the option were not there."""
    commands = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    sub = None if commands is None else commands.choices.get(getattr(args, "command", None))
    for action in () if sub is None else sub._actions:
        if action.option_strings and action.nargs != 0 and getattr(args, action.dest, None) == "":
            option = max(action.option_strings, key=len)
            raise InstanceError(option, "is empty: give a value, or leave the option out")


def _failed(exc: BaseException, command: str | None, batch: bool = False) -> int:
    """The one line and exit status of a command that raised ``exc``."""
    from .interrupts import hold_if_stopping
    hold_if_stopping()  # a signal is ending the process, and ended what failed here: its verdict alone stands
    if isinstance(exc, KipoptError):
        print(f"kipopt: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    if isinstance(exc, KeyboardInterrupt):
        print("kipopt: interrupted", file=sys.stderr)
        return 130
    if isinstance(exc, BrokenPipeError):
        return 1
    if isinstance(exc, MemoryError) or _memory_failure(exc):  # outside a method too: memory, as inside one
        return _out_of_memory(command, batch)
    if os.environ.get("KIPOPT_DEBUG"):
        import traceback
        traceback.print_exception(exc)
    print(f"kipopt: internal error: {type(exc).__name__}: {_one_line(_text_of(exc))}", file=sys.stderr)
    return 3


_MEMORY_FIELDS = {"reassign": "--current", "vectors": "--count", "generate": "FAMILY's size options",
                  "bench": "grid"}
"""What a command that reads no INSTANCE is named by when it runs out of memory: what sets its size."""


def _text_of(exc: BaseException) -> str:
    """``str(exc)``, or what can be said when that raises (py4j's errors once Spark's JVM is gone)."""
    try:
        return str(exc)
    except Exception:
        return "(its message could not be read)"


def _out_of_memory(command: str | None, batch: bool = False) -> int:
    from .api import out_of_memory
    field = "--batch" if batch else _MEMORY_FIELDS.get(command or "", "INSTANCE")
    print(f"kipopt: error: {_one_line(str(out_of_memory(f'kipopt {command}', field)))}", file=sys.stderr)
    return 2


def _memory_failure(exc: Exception) -> bool:
    from .address_space import memory_failure
    return memory_failure(exc)


if __name__ == "__main__":
    sys.exit(main())
