"""The fast readers of ``kipopt.instance`` (``_valid_task``, ``_valid_client``, ``_known_rack_sets``) accept
exactly what the per-field readers accept, build equal objects, and hand everything else to them, so the
error names the same field with the same words.

Each case mutates one field of a generated instance into something plausible or wrong and compares
``from_dict`` with the fast readers on and off.
"""

from __future__ import annotations

import copy
import random

import pytest

import kipopt.instance as I
from kipopt import to_dict
from kipopt.datasets import generate
from kipopt.errors import InstanceError

JUNK = [None, True, False, 0, -1, 1, 2**31, 2**63, 1.5, "", "x", "0_1", "input-0-0-0", "t-0", [], {}, [""], ["x"],
        ["x", "x"], [1], [[]], {"a": 1}, {"a": "b"}, {"": "b"}, {"zone": ""}]


def outcome(d):
    try:
        return "ok", I.from_dict(d)
    except InstanceError as exc:
        return "error", (exc.field, exc.message)


def slow_outcome(d, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(I, "_valid_task", lambda *a: None)
        m.setattr(I, "_valid_client", lambda *a: None)
        m.setattr(I, "_known_rack_sets", lambda *a: None)
        return outcome(d)


def mutations(d: dict, rng: random.Random):
    """(description, mutated copy) pairs: every junk value in every field of one task, one stateful task,
    one client and one topic, and task ids and partition strings near the valid ones."""
    tasks, clients, topics = list(d["tasks"]), list(d["clients"]), list(d["topics"])
    stateful = [t for t in tasks if d["tasks"][t]["stateful"]]
    tid, cid, topic = rng.choice(tasks), rng.choice(clients), rng.choice(topics)
    picks = [rng.choice(tasks), rng.choice(stateful)]
    client_values = JUNK + [[t] for t in picks] + [[picks[0]] * 2, picks, {t: 3 for t in picks}] + \
        [{picks[1]: v} for v in (0, -1, 5, 2**63 - 1, 2**63, True, 1.0, None)]
    for value in [*JUNK, *client_values]:
        for key in ("inputs", "changelogs", "stateful", "end_offset", "other"):
            for task in (tid, picks[1]):
                x = copy.deepcopy(d)
                x["tasks"][task][key] = value
                yield f"tasks.{task}.{key} = {value!r}", x
        for key in ("rack", "tags", "capacity", "active", "standby", "lags", "other"):
            x = copy.deepcopy(d)
            x["clients"][cid][key] = value
            yield f"clients.{cid}.{key} = {value!r}", x
        x = copy.deepcopy(d)
        x["topics"][topic]["racks"][0] = value
        yield f"topics.{topic}.racks[0] = {value!r}", x
    for value in JUNK:
        x = copy.deepcopy(d)
        x["tasks"][tid] = value
        yield f"tasks.{tid} = {value!r}", x
    for new_id in ("00_1", "1_01", "9999999999_0", "2147483647_0", "2147483648_1", "1_2_3", "a_1", "12_0", "١_0"):
        x = copy.deepcopy(d)
        x["tasks"][new_id] = x["tasks"].pop(tid)
        yield f"task id {new_id}", x
    for text in (f"{topic}-0", f"{topic}-00", f"{topic}-999", f"{topic}-", "nope-0", f"{topic}-٣", f"{topic}--1"):
        x = copy.deepcopy(d)
        x["tasks"][tid]["inputs"] = [text]
        yield f"input {text}", x


@pytest.mark.parametrize("seed", range(6))
def test_fast_readers_agree_with_the_per_field_readers(seed, monkeypatch):
    rng = random.Random(seed)
    d = to_dict(generate("tasks", seed, tasks=8, clients=3, stateless_share=0.3))
    assert outcome(d) == slow_outcome(d, monkeypatch) == ("ok", I.from_dict(d))
    for where, x in mutations(d, rng):
        assert outcome(x) == slow_outcome(x, monkeypatch), where


def test_fast_readers_take_ordinary_instances():
    """A generated instance goes through the fast readers entirely (none falls back)."""
    d = to_dict(generate("tasks", 1, tasks=30, clients=5))
    topics = I._read_topics(d["topics"], "topics")
    tasks = {tid: I._valid_task(tid, spec, I._partition_layout(topics), []) for tid, spec in d["tasks"].items()}
    assert None not in tasks.values()
    stateful = {t for t, task in tasks.items() if task.stateful}
    assert all(I._valid_client(cid, spec, tasks, stateful) is not None for cid, spec in d["clients"].items())


def test_task_order_and_subtopologies():
    """``task_ids`` is Kafka's TaskId order (numeric, sub-topology first) up to INT_MAX in either part, and
    ``task_subtopologies`` / ``subtopologies`` follow it."""
    ids = ["10_2", "2_10", "2147483647_0", "3_2147483647", "2_9", "0_0", "10_1"]
    d = {"format": 1, "family": "tasks", "topics": {"t": {"racks": [["a"]]}},
         "tasks": {t: {"inputs": ["t-0"]} for t in ids},
         "clients": {"c": {"rack": "a", "active": ids}}}
    x = I.from_dict(d)
    expected = sorted(ids, key=lambda t: tuple(map(int, t.split("_"))))
    assert x.task_ids == tuple(expected)
    assert x.task_subtopologies.tolist() == [int(t.split("_")[0]) for t in expected]
    assert x.subtopologies == (0, 2, 3, 10, 2147483647)
    assert all(type(g) is int for g in x.subtopologies)
