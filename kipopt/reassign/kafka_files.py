"""Kafka's reassignment files, read and written by the rules of ``kafka-reassign-partitions.sh``.

Read: the current assignment as ``--generate`` prints it (and ``--execute``
takes it), ``{"version": 1, "partitions": [{"topic", "partition",
"replicas", "log_dirs"?}]}``; a rack map ``{"<broker id>": "<rack>"}`` (or
``{"brokers": [{"id", "rack"}]}``, kipopt's own broker list); partition sizes
from ``kafka-log-dirs.sh --describe`` (``{"version": 1, "brokers": [{"broker",
"logDirs": [{"logDir", "error", "partitions": [{"partition": "<topic>-<n>",
"size", ...}]}]}]}``). Every malformed field is an :class:`InstanceError`
naming it (exit 2).

Written: the same document, which Kafka's ``ReassignPartitionsCommand``
(``parsePartitionReassignmentData`` and ``parseExecuteAssignmentArgs``)
accepts when version is 1, the list is not empty, no (topic, partition)
appears twice, every replica list is non-empty without duplicate brokers
and ``log_dirs`` has one entry per replica (``"any"``: Kafka's
``ANY_LOG_DIR``); partitions sorted by topic then partition, as Kafka's
``formatAsReassignmentJson`` sorts them. :func:`kafka_parse_errors` states
those rules, and the tests hold every written file to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from kipopt import _read as r
from kipopt._read import JAVA_INT_MAX
from kipopt.errors import InstanceError

ANY_LOG_DIR = "any"


@dataclass(frozen=True)
class PartitionReplicas:
    topic: str
    partition: int
    replicas: tuple[int, ...]


def load_json(path: str, field: str, tool_output: bool = False) -> Any:
    """A JSON file (``-``: standard input), or one line naming the option when it cannot be read or parsed.
    ``tool_output``: the document may follow lines of text, as Kafka's tools print it (``kafka-log-dirs.sh
    --describe`` prints two lines before its JSON); they are skipped."""
    data = r.read_json_file_bytes(path, field)
    if tool_output:  # from the first line that opens an object or an array
        lines = data.splitlines(keepends=True)
        first = next((i for i, line in enumerate(lines) if line.lstrip()[:1] in (b"{", b"[")), 0)
        data = b"".join(lines[first:])
    try:
        return r.parse_json(data, field)
    except r.StrictJsonError as exc:
        if exc.field == field:
            raise
        raise InstanceError(f"{field}.{exc.field}", exc.message) from None


def read_assignment(doc: Any, field: str = "current") -> list[PartitionReplicas]:
    """Kafka's reassignment JSON (version 1) as a list; the rules Kafka's parser applies, and a
    partition listed twice or a broker listed twice in one partition are refused as Kafka refuses them."""
    d = r.obj(doc, field, required=("partitions",), optional=("version",))
    if "version" in d:
        version = r.integer(d["version"], f"{field}.version", 1, JAVA_INT_MAX)
        if version != 1:
            raise InstanceError(f"{field}.version", f"Kafka supports version 1 only, got {version}")
    out, seen = [], set()
    for i, p in enumerate(r.array(d["partitions"], f"{field}.partitions")):
        path = f"{field}.partitions[{i}]"
        p = r.obj(p, path, required=("topic", "partition", "replicas"), optional=("log_dirs",))
        topic = r.topic_name(p["topic"], f"{path}.topic")  # a name Kafka could not have printed is refused
        number = r.integer(p["partition"], f"{path}.partition", 0, JAVA_INT_MAX)
        rpath = f"{path}.replicas"
        replicas = [r.integer(b, f"{rpath}[{j}]", 0, JAVA_INT_MAX) for j, b in enumerate(r.array(p["replicas"], rpath))]
        if not replicas:
            raise InstanceError(rpath, "Partition replica list cannot be empty")
        if len(set(replicas)) != len(replicas):
            raise InstanceError(rpath, f"{replicas} lists a broker twice")
        if "log_dirs" in p:
            dirs = [r.string(x, f"{path}.log_dirs[{j}]") for j, x in enumerate(r.array(p["log_dirs"], f"{path}.log_dirs"))]
            if len(dirs) != len(replicas):
                raise InstanceError(f"{path}.log_dirs", f"{len(dirs)} log dirs for {len(replicas)} replicas")
        if (topic, number) in seen:
            raise InstanceError(path, f"{topic}-{number} is listed twice")
        seen.add((topic, number))
        out.append(PartitionReplicas(topic, number, tuple(replicas)))
    if not out:
        raise InstanceError(f"{field}.partitions", "lists no partition")
    return out


def read_rack_map(doc: Any, field: str = "racks") -> dict[int, str | None]:
    """``{"<broker id>": "<rack>" | null}`` or ``{"brokers": [{"id", "rack"?}]}``."""
    if isinstance(doc, dict) and "brokers" in doc:
        d = r.obj(doc, field, required=("brokers",))
        out: dict[int, str | None] = {}
        for i, b in enumerate(r.array(d["brokers"], f"{field}.brokers")):
            path = f"{field}.brokers[{i}]"
            b = r.obj(b, path, required=("id",), optional=("rack",))
            bid = r.integer(b["id"], f"{path}.id", 0, JAVA_INT_MAX)
            if bid in out:
                raise InstanceError(f"{path}.id", f"broker id {bid} is listed twice")
            out[bid] = r.rack(b.get("rack"), f"{path}.rack")
        return out
    out = {}
    for key, rack in r.mapping(doc, field).items():
        if not (key.isdigit() and (key == "0" or not key.startswith("0"))) or int(key) > JAVA_INT_MAX:
            raise InstanceError(f"{field}.{key}", f"broker id {key!r} is not a non-negative integer")
        out[int(key)] = r.rack(rack, f"{field}.{key}")
    return out


MAX_BYTES = 2**62
"""The largest partition size read (the instance format's bound on ``sizes``: their sums stay exact)."""


def read_log_dirs(doc: Any, field: str = "sizes") -> dict[tuple[str, int], int]:
    """Bytes per (topic, partition) from ``kafka-log-dirs.sh --describe``: the largest replica
    (a lagging follower is smaller; future replicas of an in-flight move are skipped)."""
    d = r.obj(doc, field, required=("brokers",), optional=("version",))
    sizes: dict[tuple[str, int], int] = {}
    for i, b in enumerate(r.array(d["brokers"], f"{field}.brokers")):
        bpath = f"{field}.brokers[{i}]"
        b = r.obj(b, bpath, required=("broker", "logDirs"))
        r.integer(b["broker"], f"{bpath}.broker", 0, JAVA_INT_MAX)
        for k, ld in enumerate(r.array(b["logDirs"], f"{bpath}.logDirs")):
            lpath = f"{bpath}.logDirs[{k}]"
            ld = r.obj(ld, lpath, required=("partitions",), optional=("logDir", "error"))
            for m, p in enumerate(r.array(ld["partitions"], f"{lpath}.partitions")):
                ppath = f"{lpath}.partitions[{m}]"
                p = r.obj(p, ppath, required=("partition", "size"), optional=("offsetLag", "isFuture"))
                name = r.string(p["partition"], f"{ppath}.partition")
                topic, dash, number = name.rpartition("-")
                if not dash or not topic or not number.isdigit():
                    raise InstanceError(f"{ppath}.partition", f"{name!r} is not <topic>-<partition>")
                size = r.integer(p["size"], f"{ppath}.size", 0, MAX_BYTES)
                if p.get("isFuture") is True:
                    continue
                key = (topic, int(number))
                sizes[key] = max(sizes.get(key, 0), size)
    return sizes


def reassignment_json(partitions: Iterable[PartitionReplicas]) -> dict:
    """The document ``--execute`` takes: sorted by topic then partition, ``log_dirs`` all ``"any"``."""
    rows = sorted(partitions, key=lambda p: (p.topic, p.partition))
    return {"version": 1, "partitions": [
        {"topic": p.topic, "partition": p.partition, "replicas": list(p.replicas),
         "log_dirs": [ANY_LOG_DIR] * len(p.replicas)} for p in rows]}


def kafka_parse_errors(doc: Any, known_brokers: Iterable[int] | None = None) -> list[str]:
    """What Kafka's ``ReassignPartitionsCommand`` would refuse in a reassignment document (``--execute``),
    as a list of messages (empty when Kafka accepts it). Rules of ``parsePartitionReassignmentData``,
    ``parseExecuteAssignmentArgs`` and ``verifyBrokerIds`` (commit ``kipopt.methods.KAFKA_COMMIT``)."""
    errors: list[str] = []
    if not isinstance(doc, Mapping):
        return ["not a JSON object"]
    version = doc.get("version", 1)
    if version != 1 or isinstance(version, bool):
        errors.append(f"Not supported version field value {version}")
    parts = doc.get("partitions", [])
    if not isinstance(parts, list) or not parts:
        return errors + ["Partition reassignment list cannot be empty"]
    known = set(known_brokers) if known_brokers is not None else None
    seen = set()
    for p in parts:
        if not isinstance(p, Mapping) or not isinstance(p.get("topic"), str):
            errors.append(f"bad partition entry {p!r}")
            continue
        number, replicas = p.get("partition"), p.get("replicas")
        if not isinstance(number, int) or isinstance(number, bool) or not 0 <= number <= JAVA_INT_MAX:
            errors.append(f"{p['topic']}: partition {number!r} is not an int")
        if not isinstance(replicas, list) or not all(isinstance(b, int) and not isinstance(b, bool)
                                                     for b in replicas):
            errors.append(f"{p['topic']}-{number}: replicas is not an int list")
            continue
        if not replicas:
            errors.append("Partition replica list cannot be empty")
        if len(set(replicas)) != len(replicas):
            errors.append(f"Partition replica lists may not contain duplicate entries: {p['topic']}-{number}")
        dirs = p.get("log_dirs", [ANY_LOG_DIR] * len(replicas))
        if not isinstance(dirs, list) or not all(isinstance(x, str) for x in dirs) or len(dirs) != len(replicas):
            errors.append(f"Size of replicas list {replicas} is different from size of log dirs list {dirs}")
        if (p["topic"], number) in seen:
            errors.append(f"Partition reassignment contains duplicate topic partitions: {p['topic']}-{number}")
        seen.add((p["topic"], number))
        if known is not None:
            errors.extend(f"Unknown broker id {b}" for b in replicas if b not in known)
    return errors
