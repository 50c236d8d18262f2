"""Conformance vectors: instances with the answer of a ``kafka.*`` port (``kipopt vectors``).

A vector is one JSON document::

    {"name": ..., "instance": {...}, "expected": {...}, "method": "kafka.range", "rule": ...,
     "kafka_class": "org.apache.kafka...RangeAssignor", "kafka_commit": "1eb7644...",
     "generator": {...} | "shows": "..."}

``expected`` is what the port answers, which is what Java Kafka answers at
``kafka_commit`` to the port's verified fidelity: ``status`` (``infeasible``
where Kafka refuses the input, with ``message``), ``assignment``, the rule's
``objective``, and ``target`` / ``seed`` / ``message`` when the port gives
them. A directory of vectors has a ``manifest.json`` naming the kipopt
version that wrote it. Everything is generic over the method registry: a
port registered later needs no change here.

>>> v = curated_vector(curated.case("replicas_one_broker"), "kafka.adminutils")
>>> v["expected"]["assignment"], v["kafka_class"]
({'0': [0], '1': [0], '2': [0]}, 'org.apache.kafka.admin.AdminUtils')
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from . import curated
from .errors import InstanceError, KipoptError, MethodError, NotApplicableError
from .instance import Instance, to_dict
from .methods import KAFKA_COMMIT, Method, get_method, methods
from .solution import Solution, Status, assignment_to_json, json_number

MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Skipped:
    """A declared (case, method) pair this kipopt cannot produce, and why."""

    name: str
    method: str
    reason: str

    def to_dict(self) -> dict:
        return {"name": self.name, "method": self.method, "reason": self.reason}


def port(name: str, family: str | None = None) -> Method:
    """A registered ``kafka.*`` method (an exact model's optimum is not unique, so it makes no vector)."""
    m = get_method(name, family)
    if not m.name.startswith("kafka."):
        raise InstanceError("--method", f"{name} is not a port of Kafka (kafka.*): vectors record what Kafka answers")
    return m


def expected_of(solution: Solution) -> dict:
    """The deterministic part of a port's solution: what a conforming implementation must reproduce."""
    if solution.status is Status.ERROR:
        raise MethodError(f"{solution.method} failed on this instance: {solution.message}")
    d: dict[str, Any] = {"status": solution.status.value,
                         "assignment": assignment_to_json(solution.family, solution.assignment),
                         "objective": json_number(solution.objective)}
    if solution.target is not None:
        d["target"] = assignment_to_json(solution.family, solution.target)
    if solution.seed is not None:
        d["seed"] = solution.seed
    if solution.message is not None:
        d["message"] = solution.message
    return d


def make_vector(name: str, instance: Instance, method: str, **provenance: Any) -> dict:
    """Run the port ``method`` on ``instance`` and return the vector document."""
    from .api import solve
    m = port(method, instance.family)
    return {"name": name, "instance": to_dict(instance), "expected": expected_of(solve(instance, m.name)),
            "method": m.name, "rule": m.rule, "kafka_class": m.kafka_class, "kafka_commit": KAFKA_COMMIT,
            **provenance}


# --------------------------------------------------------------------------- generated and curated


def generated_vectors(family: str, method: str, count: int, seed: int, params: dict[str, Any]
                      ) -> tuple[Iterator[tuple[str, dict]], list[Skipped]]:
    """``count`` vectors on the generated instances of seeds ``seed, seed + 1, ...`` (lazily: ``(file name,
    vector)``), and the seeds skipped: an instance the port does not apply to (a server assignor refuses a
    partition two members claim) is added to the skipped list with its reason, as curated pairs are.

    The method and the generator parameters are checked at once, before any vector is made.
    """
    from .datasets.generators import make_params
    m = port(method, family)
    make_params(family, params)
    skipped: list[Skipped] = []
    return _generate(family, m, count, seed, params, skipped), skipped


def _generate(family: str, m: Method, count: int, seed: int, params: dict[str, Any], skipped: list[Skipped]
              ) -> Iterator[tuple[str, dict]]:
    from .datasets import generate
    for s in range(seed, seed + count):
        instance = generate(family, s, **params)
        name = f"{family}.{m.name}.seed-{s}"
        try:
            vector = make_vector(name, instance, m.name,
                                 generator={"family": family, "seed": s, "params": dict(params)})
        except NotApplicableError as exc:
            skipped.append(Skipped(name, m.name, f"{m.name} refuses the instance of seed {s}: {exc}"))
            continue
        yield f"{name}.json", vector


def curated_vector(c: curated.Case, method: str) -> dict:
    return make_vector(c.name, curated.load_case(c), method, shows=c.shows)


def curated_pairs(family: str | None = None, method: str | None = None
                  ) -> tuple[list[tuple[curated.Case, str]], list[Skipped]]:
    """The declared (case, method) pairs this kipopt can run, and those it must skip (method not registered)."""
    _check_filter(method)
    registered = methods()
    run, skipped = [], []
    for c in curated.CASES:
        if family is not None and c.family != family:
            continue
        for m in c.methods:
            if method is not None and m != method:
                continue
            if m in registered:
                run.append((c, m))
            else:
                skipped.append(Skipped(c.name, m, f"{m} is not registered in this kipopt"))
    return run, skipped


def curated_vectors(family: str | None = None, method: str | None = None
                    ) -> tuple[Iterator[tuple[str, dict]], list[Skipped]]:
    """The curated vectors (lazily), and the skipped pairs; a port that cannot run on a case is
    added to the skipped list as the vectors are made, so one broken pair does not cost the others."""
    run, skipped = curated_pairs(family, method)

    def make() -> Iterator[tuple[str, dict]]:
        for c, m in run:
            try:
                yield f"{c.name}.{m}.json", curated_vector(c, m)
            except KipoptError as exc:
                skipped.append(Skipped(c.name, m, f"{m} cannot run on this case: {exc}"))

    return make(), skipped


def listing(family: str | None = None, method: str | None = None) -> dict:
    """What ``kipopt vectors --list`` prints: every declared curated pair, marked available or not."""
    _check_filter(method)
    registered = methods()
    items = []
    for c in curated.CASES:
        for m in c.methods:
            if (family is None or c.family == family) and (method is None or m == method):
                found = registered.get(m)
                items.append({"name": c.name, "family": c.family, "method": m, "available": found is not None,
                              "kafka_class": found.kafka_class if found else None, "shows": c.shows})
    return {"kipopt_version": _version(), "kafka_commit": KAFKA_COMMIT, "vectors": items}


def _check_filter(method: str | None) -> None:
    if method is not None and not any(method in c.methods for c in curated.CASES):
        declared = sorted({m for c in curated.CASES for m in c.methods})
        raise InstanceError("--method", f"no curated vector declares {method!r}; declared: {', '.join(declared)}")


# --------------------------------------------------------------------------- writing


def write_vectors(out: str, vectors: Iterable[tuple[str, dict]], skipped: list[Skipped], kind: str,
                  **about: Any) -> dict:
    """Write each vector and ``manifest.json`` under ``out``; return the manifest."""
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        raise InstanceError("--out", f"cannot create {out}: {exc.strerror or exc}") from None
    _remove_listed(out)
    for name in os.listdir(out):  # an interrupted run's vectors, never listed by any manifest
        if name.startswith(PARTIAL):
            shutil.rmtree(os.path.join(out, name), ignore_errors=True)
    partial = tempfile.mkdtemp(prefix=PARTIAL, dir=out)
    try:
        entries = []
        for file, vector in vectors:
            _write(os.path.join(partial, file), vector)
            entries.append({"file": file, "name": vector["name"], "family": vector["instance"]["family"],
                            "method": vector["method"], "status": vector["expected"]["status"]})
        for entry in entries:
            os.replace(os.path.join(partial, entry["file"]), os.path.join(out, entry["file"]))
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    manifest = {"kipopt_version": _version(), "kafka_commit": KAFKA_COMMIT, "kind": kind, **about,
                "vectors": entries, "skipped": [s.to_dict() for s in skipped]}
    _write(os.path.join(out, MANIFEST), manifest)
    return manifest


PARTIAL = ".kipopt-vectors-partial-"
"""The hidden folder under ``--out`` a run writes its vectors into, moved into place once all are made: an
interrupted run left hundreds of vector files beside no manifest, which no later run removed; now it leaves
this folder, which the next run into the same ``--out`` removes."""


def _remove_listed(out: str) -> None:
    """The vector files an earlier ``manifest.json`` in ``out`` lists, removed: the folder then holds this
    run's vectors only (a file the manifest does not list is not kipopt's and stays)."""
    try:
        with open(os.path.join(out, MANIFEST), encoding="utf-8") as handle:
            listed = json.load(handle).get("vectors", [])
        files = [v["file"] for v in listed if isinstance(v, dict) and isinstance(v.get("file"), str)]
    except (OSError, ValueError, AttributeError):
        return
    for file in files:
        path = os.path.join(out, file)
        if os.path.basename(file) == file and file.endswith(".json") and file != MANIFEST and os.path.isfile(path):
            os.remove(path)


def _write(path: str, document: dict) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=1, allow_nan=False)
            handle.write("\n")
    except OSError as exc:
        raise InstanceError("--out", f"cannot write {path}: {exc.strerror or exc}") from None


def _version() -> str:
    from . import __version__
    return __version__
