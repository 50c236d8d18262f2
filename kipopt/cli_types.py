"""The command line's argument types: each parses one option's text or raises
:class:`argparse.ArgumentTypeError`, which argparse words as ``kipopt: error: --OPTION: ...``."""

from __future__ import annotations

import argparse
from typing import Any

from .errors import KipoptError


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


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def _positive_int(text: str) -> int:
    """An integer of at least 1."""
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


MAX_PROCESSES = 256
"""The most ``--jobs`` (worker processes, all started at once) and ``--threads`` a command takes: far past
any machine's use, and short of a fork storm (``--jobs 10**20`` forked thousands of workers)."""


def _at_most(most: int):
    """An argparse type: an integer from 1 to ``most``."""

    def parse(text: str) -> int:
        value = _positive_int(text)
        if value > most:
            raise argparse.ArgumentTypeError(f"must be at most {most:,}, got {text}")
        return value

    return parse


_process_count = _at_most(MAX_PROCESSES)


MAX_VECTORS = 100_000
"""The most vectors one ``kipopt vectors`` run writes (2^31 wrote files until the disk filled)."""

_vector_count = _at_most(MAX_VECTORS)


MAX_SEED = 2**63 - 1
"""The largest seed of a generated instance. Seeds are non-negative: Python's ``random.Random`` seeds -n as n,
so a negative seed gave its positive twin's instance under another name."""


def _generator_seed(text: str) -> int:
    """A generator's seed: an integer from 0 to :data:`MAX_SEED`."""
    value = _integer(text)
    if not 0 <= value <= MAX_SEED:
        why = " (a negative seed would give its positive twin's instance)" if value < 0 else ""
        raise argparse.ArgumentTypeError(f"must be an integer from 0 to 2^63 - 1, got {text}{why}")
    return value


def _java_long(text: str) -> int:
    """A seed for ``java.util.Random``: Java's ``new Random(long)`` takes nothing wider, so a larger seed
    would be answered as if it were reduced (silently) to one Kafka could have used."""
    value = _integer(text)
    if not -2**63 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"must be a Java long (-2^63 to 2^63-1, java.util.Random's seed), got {text}")
    return value


def _tolerance(text: str) -> Any:
    """An argparse type: ``--tolerance X`` or ``NAME=V,...`` (:mod:`kipopt.tolerance`), kept as given."""
    from .tolerance import parse_tolerance
    try:
        return parse_tolerance(text)
    except KipoptError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--tolerance: ")) from None
