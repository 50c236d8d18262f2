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
import traceback
from typing import Any, Sequence

from .errors import KipoptError


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise KipoptError(f"{self.prog}: {message}")


def _print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, allow_nan=False, default=_json_default))
    sys.stdout.write("\n")
    sys.stdout.flush()


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


# --------------------------------------------------------------------------- commands


def cmd_validate(args: argparse.Namespace) -> int:
    from .instance import load_instance
    instance = load_instance(args.instance)
    _print_json({"ok": True, "family": instance.family})
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from .api import evaluate, load_assignment
    from .instance import load_instance
    instance = load_instance(args.instance)
    evaluation = evaluate(instance, load_assignment(instance, args.solution))
    _print_json(evaluation.to_dict())
    return 0


def cmd_solve(args: argparse.Namespace) -> int:
    from .api import solve
    from .instance import load_instance
    from .solution import Status
    instance = load_instance(args.instance)
    solution = solve(instance, args.method, time_limit=args.time_limit, threads=args.threads, seed=args.seed,
                     priorities=args.priorities)
    _print_json(solution.to_dict())
    if solution.status in (Status.INFEASIBLE, Status.ERROR):
        print(f"kipopt: {solution.method}: {solution.status.value}: {solution.message}", file=sys.stderr)
        return 1
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from .api import check, load_assignment
    from .instance import load_instance
    instance = load_instance(args.instance)
    result = check(instance, load_assignment(instance, args.solution), rule=args.rule,
                   tolerance=args.tolerance, time_limit=args.time_limit, priorities=args.priorities)
    _print_json(result.to_dict())
    verdict = "ok" if result.ok else "NOT ok"
    print(f"kipopt check: {result.rule}: objective {result.objective}, optimum {result.optimum}, "
          f"gap {result.gap}, feasible {result.feasible}: {verdict}", file=sys.stderr)
    return 0 if result.ok else 1


def cmd_generate(args: argparse.Namespace) -> int:
    from .datasets import generate
    from .instance import to_dict
    params = {k: v for k, v in vars(args).items() if k.startswith("p_") and v is not None}
    instance = generate(args.family, args.seed, **{k[2:]: v for k, v in params.items()})
    text = json.dumps(to_dict(instance), separators=(",", ":"))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
        print(f"kipopt: wrote {args.family} instance (seed {args.seed}) to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text + "\n")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from .schemas import schema
    _print_json(schema(args.family))
    return 0


# --------------------------------------------------------------------------- parser


def _number(minimum: float, strict: bool):
    """An argparse type: a finite float above ``minimum`` (or at least it, when not ``strict``)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        low_ok = value > minimum if strict else value >= minimum
        if not (low_ok and value != float("inf")):
            raise argparse.ArgumentTypeError(f"must be a number {'>' if strict else '>='} {minimum:g}, got {text}")
        return value

    return parse


_positive_float = _number(0, strict=True)
_nonnegative_float = _number(0, strict=False)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from .instance import FAMILIES
    parser = _Parser(prog="kipopt", description="Exact LP/ILP models of Kafka's assignment rules, "
                                                "cross-checked against ports of Kafka's algorithms.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("validate", help="check an instance")
    p.add_argument("instance", help="instance JSON path, or - for stdin")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("evaluate", help="metrics and broken rules of an assignment")
    p.add_argument("instance")
    p.add_argument("solution", help="solution JSON path, or - for stdin")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("solve", help="run a method (kafka.* port or exact.* model)")
    p.add_argument("instance")
    p.add_argument("--method", required=True)
    p.add_argument("--time-limit", type=_positive_float, default=None, help="seconds")
    p.add_argument("--threads", type=_positive_int, default=None)
    p.add_argument("--seed", type=int, default=None)
    _add_priorities(p)
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("check", help="the oracle: an assignment against the exact optimum of a rule")
    p.add_argument("instance")
    p.add_argument("solution")
    p.add_argument("--rule", default=None)
    p.add_argument("--tolerance", type=_nonnegative_float, default=0.0, help="allowed relative gap")
    p.add_argument("--time-limit", type=_positive_float, default=None)
    _add_priorities(p)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("generate", help="write one seeded, generated instance")
    p.add_argument("family", choices=FAMILIES)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", default=None, help="file to write (default stdout)")
    _add_generator_params(p)
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("schema", help="print the JSON Schema of a family")
    p.add_argument("family", choices=FAMILIES)
    p.set_defaults(func=cmd_schema)

    _add_bench(sub)
    return parser


def _add_priorities(p: argparse.ArgumentParser) -> None:
    p.add_argument("--priorities", default=None, metavar="A,B,C",
                   help="joint rule: stage order (caught_up, standbys, tags, balance, traffic, non_overlap); "
                        "overrides the instance's config.joint_priorities")


def _add_generator_params(p: argparse.ArgumentParser) -> None:
    from .datasets import generator_params
    for name, (kind, help_text) in generator_params().items():
        p.add_argument(f"--{name.replace('_', '-')}", dest=f"p_{name}", type=kind, default=None,
                       metavar=name.upper(), help=help_text)


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


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except KipoptError as exc:
        print(f"kipopt: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kipopt: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:  # noqa: BLE001 - the contract is one line, never a traceback
        if os.environ.get("KIPOPT_DEBUG"):
            traceback.print_exc()
        print(f"kipopt: internal error: {type(exc).__name__}: {_one_line(str(exc))}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
