"""The benchmark grid: which instances to generate and which methods to run on them.

A grid is a TOML file (read with :mod:`tomllib`)::

    time_limit = 20          # seconds per method run (default 60)
    grace = 5                # extra seconds before a method that ignores its limit is killed
    threads = 1              # solver threads per method run (Spark runs items in parallel)

    [families.tasks]
    seeds = [1, 2, 3]        # or an integer N: seeds 0 .. N-1
    methods = ["kafka.rack_active", "exact.rack_active"]
    time_limits = { "exact.rack_active" = 30 }   # optional, per method

    [families.tasks.params]  # size parameters of kipopt.datasets.generate
    strategy = ["min_traffic", "balance_subtopology"]   # a list is a grid axis
    racks = 3                                            # a scalar is fixed

    [[families.tasks.sizes]] # optional: parameter sets that go together
    tasks = 24
    clients = 6
    [[families.tasks.sizes]]
    tasks = 96
    clients = 12
    seeds = 5                # optional: this size's own seeds (a count or a list), e.g. fewer for the largest

Every combination of one ``sizes`` entry (if any), the ``params`` axes and a
seed is one *work item*;
each item runs all the family's ``methods`` and, once, the exact method of
every rule they belong to (their gaps are measured against it).

Two optional top-level keys open the benchmark to code outside the package:
``providers = ["my.module"]`` imports more method providers (modules
exporting ``METHODS`` and ``RULES``, as in :mod:`kipopt.methods`), and
``generator = "my.module:generate"`` replaces
``kipopt.datasets.generate(family, seed, **params)``. Both modules must be
importable on every Spark executor.

Mistakes are reported as one :class:`GridError` naming the field:

>>> parse_grid({"families": {"tasks": {"seeds": 2, "methods": ["exact.foo"]}}})
Traceback (most recent call last):
...
kipopt.bench.grid.GridError: grid: families.tasks.methods[0]: unknown method exact.foo
"""

from __future__ import annotations

import importlib
import itertools
import os
import stat
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Callable, Mapping

from ..cli_types import MAX_PROCESSES, MAX_SEED
from ..errors import InstanceError
from ..instance import FAMILIES

DEFAULT_GENERATOR = "kipopt.datasets:generate"
DEFAULT_TIME_LIMIT = 60.0
DEFAULT_GRACE = 5.0

_TOP_KEYS = ("families", "time_limit", "grace", "threads", "providers", "generator")
_FAMILY_KEYS = ("seeds", "methods", "params", "sizes", "time_limit", "time_limits", "score_rules")


class GridError(InstanceError):
    """A bad grid file: ``grid: <field>: <message>``."""

    def __init__(self, field: str, message: str):
        super().__init__(f"grid: {field}", message)


@dataclass(frozen=True)
class FamilyGrid:
    """One family's part of the grid: parameter combinations × seeds, and its methods."""

    family: str
    params: tuple[tuple[tuple[str, Any], ...], ...]
    seeds: tuple[int, ...]
    methods: tuple[str, ...]
    time_limits: Mapping[str, float]
    score_rules: tuple[str, ...] = ()
    combo_seeds: tuple[tuple[int, ...], ...] = ()   # per entry of ``params``; empty: ``seeds`` for all

    def cells(self) -> tuple[tuple[tuple[tuple[str, Any], ...], tuple[int, ...]], ...]:
        """Each parameter combination with its seeds (its ``sizes`` entry's own, else the family's)."""
        own = self.combo_seeds or (self.seeds,) * len(self.params)
        return tuple(zip(self.params, own))


@dataclass(frozen=True)
class Grid:
    families: tuple[FamilyGrid, ...]
    grace: float = DEFAULT_GRACE
    threads: int = 1
    providers: tuple[str, ...] = ()
    generator: str = DEFAULT_GENERATOR
    source: str = field(default="<dict>", compare=False)

    @property
    def size(self) -> int:
        """The number of work items.

        >>> parse_grid({"families": {"tasks": {"seeds": 2, "methods": ["kafka.ha"]}}}).size
        2
        """
        return sum(len(seeds) for f in self.families for _, seeds in f.cells())


def load_grid(path: str | None = None) -> Grid:
    """Read and validate a grid file; ``None`` is the packaged default grid."""
    if path is None:
        text = resources.files("kipopt.bench").joinpath("default_grid.toml").read_text(encoding="utf-8")
        source = "default_grid.toml"
    else:
        try:
            if os.path.exists(path) and not os.path.isdir(path) and not stat.S_ISREG(os.stat(path).st_mode):
                raise InstanceError("GRID", f"cannot read {path}: not a regular file (a FIFO or device would "
                                            f"block or never end)")
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise InstanceError("GRID", f"cannot read {path}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise InstanceError("GRID", f"cannot read {path}: not UTF-8 text (a grid is a TOML file)") from None
        source = path
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise GridError(source, f"not valid TOML: {exc}") from None
    return parse_grid(data, source)


def parse_grid(data: Mapping[str, Any], source: str = "<dict>") -> Grid:
    """Validate a parsed grid (see the module docstring for the format)."""
    _no_unknown_keys(data, "", _TOP_KEYS)
    providers = tuple(_strings(data.get("providers", []), "providers"))
    for i, name in enumerate(providers):
        _import(name, f"providers[{i}]")
    generator = data.get("generator", DEFAULT_GENERATOR)
    if not isinstance(generator, str):
        raise GridError("generator", f"must be a string \"module:function\", got {generator!r}")
    load_generator(generator)
    registry = registered_methods(providers)
    default_limit = _seconds(data.get("time_limit", DEFAULT_TIME_LIMIT), "time_limit")
    families = data.get("families", {})
    if not isinstance(families, Mapping):
        raise GridError("families", "must be a table of families")
    if not families:
        raise GridError("families", "names no family: a grid runs at least one (see the module docstring)")
    parsed = tuple(_family(name, spec, registry, default_limit, generator == DEFAULT_GENERATOR)
                   for name, spec in families.items())
    threads = data.get("threads", 1)
    if type(threads) is not int or not 1 <= threads <= MAX_THREADS:
        raise GridError("threads", f"must be an integer from 1 to {MAX_THREADS}, got {threads!r}")
    grace = _seconds(data.get("grace", DEFAULT_GRACE), "grace", allow_zero=True)
    return Grid(parsed, grace, threads, providers, generator, source)


def _family(name: str, spec: Any, registry: Mapping[str, Any], default_limit: float,
            check_params: bool) -> FamilyGrid:
    path = f"families.{name}"
    if name not in FAMILIES:
        raise GridError(path, f"unknown family {name!r}; families: {', '.join(FAMILIES)}")
    if not isinstance(spec, Mapping):
        raise GridError(path, "must be a table")
    _no_unknown_keys(spec, path, _FAMILY_KEYS)
    methods = _strings(spec.get("methods"), f"{path}.methods", required=True)
    for i, method in enumerate(methods):
        found = registry.get(method)
        if found is None:
            raise GridError(f"{path}.methods[{i}]", f"unknown method {method}")
        if found.family != name:
            raise GridError(f"{path}.methods[{i}]", f"{method} is a method for {found.family}, not {name}")
    if len(set(methods)) != len(methods):
        raise GridError(f"{path}.methods", "a method is listed twice")
    limit = _seconds(spec.get("time_limit", default_limit), f"{path}.time_limit")
    limits = spec.get("time_limits", {})
    if not isinstance(limits, Mapping):
        raise GridError(f"{path}.time_limits", "must be a table of method = seconds")
    for method, value in limits.items():
        if method not in methods:
            raise GridError(f"{path}.time_limits.{method}", f"{method} is not in {path}.methods")
        _seconds(value, f"{path}.time_limits.{method}")
    time_limits = {m: float(limits.get(m, limit)) for m in methods}
    seeds = _seeds(spec.get("seeds"), f"{path}.seeds")
    combos = _combos(spec, path, check_params, seeds)
    return FamilyGrid(name, tuple(c for c, _ in combos), seeds, tuple(methods), time_limits,
                      _score_rules(spec, path, name), tuple(s for _, s in combos))


def _score_rules(spec: Mapping[str, Any], path: str, family: str) -> tuple[str, ...]:
    """Rules every method of the family is also scored on (their exact methods run once per item)."""
    from .. import methods as registry
    names = _strings(spec.get("score_rules", []), f"{path}.score_rules")
    for i, name in enumerate(names):
        found = registry.rules().get(name)
        if found is None or found.family != family:
            raise GridError(f"{path}.score_rules[{i}]", f"no rule {name!r} for family {family}")
    if len(set(names)) != len(names):
        raise GridError(f"{path}.score_rules", "a rule is listed twice")
    return tuple(names)


def _combos(spec: Mapping[str, Any], path: str, check: bool,
            seeds: tuple[int, ...]) -> list[tuple[tuple[tuple[str, Any], ...], tuple[int, ...]]]:
    """Every ``sizes`` entry crossed with every combination of the ``params`` axes, with its seeds."""
    sizes = spec.get("sizes", [{}])
    if not isinstance(sizes, list) or not sizes or not all(isinstance(x, Mapping) for x in sizes):
        raise GridError(f"{path}.sizes", "must be a non-empty array of tables ([[...sizes]])")
    known = _generator_params() if check else {}
    axes = _params(spec.get("params", {}), f"{path}.params", known)
    combos = []
    for i, entry in enumerate(sizes):
        where = f"{path}.sizes[{i}]"
        own = _seeds(entry["seeds"], f"{where}.seeds") if "seeds" in entry else seeds
        size = {k: v for k, v in entry.items() if k != "seeds"}
        for name in size:
            if name in spec.get("params", {}):
                raise GridError(f"{where}.{name}", f"is also in {path}.params; give it in one place")
        for fixed in _params(size, where, known):
            for axis in axes:
                combo = tuple(sorted(fixed + axis))
                if check:
                    _check_combo(path, where if size else f"{path}.params", combo)
                combos.append((combo, own))
    if len({c for c, _ in combos}) != len(combos):
        raise GridError(f"{path}.sizes", "two entries give the same parameters")
    return combos


def _params(value: Any, path: str, known: Mapping[str, Any]) -> tuple[tuple[tuple[str, Any], ...], ...]:
    """All combinations of the parameter axes, each a sorted tuple of (name, value)."""
    if not isinstance(value, Mapping):
        raise GridError(path, "must be a table of size parameters")
    axes: list[list[tuple[str, Any]]] = []
    for name in sorted(value):
        values = value[name] if isinstance(value[name], list) else [value[name]]
        if not values:
            raise GridError(f"{path}.{name}", "an empty list gives no instances")
        for i, v in enumerate(values):
            where = f"{path}.{name}" + (f"[{i}]" if isinstance(value[name], list) else "")
            if isinstance(v, (dict, list)):
                raise GridError(where, f"must be a number, string or boolean, got {v!r}")
            _check_param(name, v, known, where)
        axes.append([(name, v) for v in values])
    return tuple(tuple(combo) for combo in itertools.product(*axes))


def _check_combo(family_path: str, path: str, combo: tuple[tuple[str, Any], ...]) -> None:
    """Let the packaged generator vet one combination (names that apply, ranges) before Spark starts."""
    try:
        from ..datasets.generators import make_params
    except ImportError:
        return
    family = family_path.split(".")[1]
    try:
        make_params(family, dict(combo))
    except InstanceError as exc:
        name = exc.field[2:].replace("-", "_") if exc.field.startswith("--") else exc.field
        raise GridError(f"{path}.{name}", f"{exc.message} (in {dict(combo)})") from None


def _check_param(name: str, value: Any, known: Mapping[str, Any], where: str) -> None:
    if known and name not in known:
        raise GridError(where.split("[")[0], f"unknown size parameter {name!r}; known: {', '.join(sorted(known))}")
    kind = known.get(name, (None,))[0]
    if kind is int and (type(value) is not int):
        raise GridError(where, f"must be an integer, got {value!r}")
    if kind is float and (type(value) not in (int, float)):
        raise GridError(where, f"must be a number, got {value!r}")


def _generator_params() -> Mapping[str, Any]:
    try:
        from ..datasets import generator_params
    except ImportError:
        return {}
    return generator_params()


MAX_SEEDS = 100_000
"""The most seeds a family or size may list or count (10^7 kept a dry run busy for minutes, 10^9 ran out of
memory naming the grid only)."""
MAX_THREADS = MAX_PROCESSES
"""The most solver threads per run: the command line's ``--threads`` bound."""


def _seeds(value: Any, path: str) -> tuple[int, ...]:
    if type(value) is int:
        if not 1 <= value <= MAX_SEEDS:
            raise GridError(path, f"a count of seeds must be from 1 to {MAX_SEEDS:,}, got {value}")
        return tuple(range(value))
    if not isinstance(value, list) or not value:
        raise GridError(path, "must be a non-empty list of integer seeds, or a count")
    if len(value) > MAX_SEEDS:
        raise GridError(path, f"lists {len(value):,} seeds, at most {MAX_SEEDS:,}")
    for i, s in enumerate(value):
        if type(s) is not int or not 0 <= s <= MAX_SEED:
            raise GridError(f"{path}[{i}]", f"must be an integer seed from 0 to {MAX_SEED}, got {s!r} (a "
                                            f"negative seed gave its positive twin's instance)")
    if len(set(value)) != len(value):
        raise GridError(path, "a seed is listed twice")
    return tuple(value)


def _seconds(value: Any, path: str, allow_zero: bool = False) -> float:
    ok = type(value) in (int, float) and (value >= 0 if allow_zero else value > 0) and value != float("inf")
    if not ok:
        raise GridError(path, f"must be a number of seconds {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return float(value)


def _strings(value: Any, path: str, required: bool = False) -> list[str]:
    if value is None and required:
        raise GridError(path, "is required")
    if not isinstance(value, list) or (required and not value):
        raise GridError(path, "must be a non-empty list of names" if required else "must be a list of names")
    for i, v in enumerate(value):
        if not isinstance(v, str):
            raise GridError(f"{path}[{i}]", f"must be a string, got {v!r}")
    return list(value)


def _no_unknown_keys(data: Mapping[str, Any], path: str, allowed: tuple[str, ...]) -> None:
    for key in data:
        if key not in allowed:
            where = f"{path}.{key}" if path else key
            raise GridError(where, f"unknown key; expected one of {', '.join(allowed)}")


def _import(name: str, path: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise GridError(path, f"cannot import {name}: {exc}") from None


def load_generator(spec: str, path: str = "generator") -> Callable[..., Any]:
    """The generator function named by ``"module:function"``.

    >>> load_generator("kipopt.datasets:generate").__name__
    'generate'
    """
    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise GridError(path, f"must look like \"module:function\", got {spec!r}")
    found = getattr(_import(module, path), name, None)
    if not callable(found):
        raise GridError(path, f"{module} has no function {name}")
    return found


def registered_methods(providers: tuple[str, ...] = ()) -> dict[str, Any]:
    """The method registry, with the methods and rules of extra ``providers`` merged in.

    The merge is idempotent, so executors can call it once per work item.
    """
    from .. import methods as registry
    known = registry.methods()
    rules = registry.rules()
    for name in providers:
        module = importlib.import_module(name)
        for m in getattr(module, "METHODS", ()):
            known.setdefault(m.name, m)
        for rule in getattr(module, "RULES", ()):
            rules.setdefault(rule.name, rule)
    return known
