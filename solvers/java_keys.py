"""The key types of Kafka's hash maps: their ``hashCode`` (``String``, ``Uuid``, ``TopicPartition``, ``TaskId``),
kipopt's deterministic topic ids and Kafka's ``Uuid`` strings, and their ``compareTo`` as sort keys."""

from __future__ import annotations

from kipopt.solvers.java_numbers import to_int32, to_int64


def java_string_hash(s: str) -> int:
    """``String.hashCode()``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, as an ``int``.

    >>> java_string_hash(""), java_string_hash("a"), java_string_hash("\\U0001F600")
    (0, 97, 1772899)
    """
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return to_int32(h)


def topic_uuid(name: str) -> tuple[int, int]:
    """kipopt's deterministic topic id: MD5 of the name (UTF-8), high 64 bits then low 64 bits, as Java longs.

    >>> topic_uuid("orders")
    (1352488281194395920, 6896254512500489863)
    >>> uuid_hash(topic_uuid("orders"))
    -1269846646
    """
    import hashlib
    digest = hashlib.md5(name.encode("utf-8")).digest()
    return to_int64(int.from_bytes(digest[:8], "big")), to_int64(int.from_bytes(digest[8:], "big"))


def uuid_from_string(text: str) -> tuple[int, int]:
    """``org.apache.kafka.common.Uuid.fromString``: 22 URL-safe base64 characters, 16 bytes big-endian.

    >>> uuid_from_string("AAAAAAAAAAAAAAAAAAAAAQ")
    (0, 1)
    """
    import base64
    raw = base64.urlsafe_b64decode(text + "==")
    if len(raw) != 16:
        raise ValueError(f"{text!r} is not a 22-character base64 Uuid")
    return to_int64(int.from_bytes(raw[:8], "big")), to_int64(int.from_bytes(raw[8:], "big"))


def uuid_hash(uuid: tuple[int, int]) -> int:
    """``Uuid.hashCode()``: ``x = msb ^ lsb``; the high 32 bits of ``x`` xor its low 32 bits.

    >>> uuid_hash((1 << 32, 3)), uuid_hash((-1, 0))
    (2, 0)
    """
    x = (uuid[0] ^ uuid[1]) & 0xFFFFFFFFFFFFFFFF  # java.util.UUID.hashCode is the same function
    return to_int32((x >> 32) ^ x)


def topic_partition_hash(topic: str, partition: int) -> int:
    """``TopicPartition.hashCode()``: ``31 * (31 + partition) + topic.hashCode()`` as an ``int``.

    >>> topic_partition_hash("t", 0)
    1077
    """
    return to_int32(31 * (31 + partition) + java_string_hash(topic))


def task_id_hash(task: str) -> int:
    """``TaskId.hashCode`` of ``"<subtopology>_<partition>"`` without a named topology.

    ``Objects.hash(subtopology, partition, null)`` = ``29791 + 961*subtopology + 31*partition``:

    >>> task_id_hash("0_0"), task_id_hash("1_0") == task_id_hash("0_31")
    (29791, True)
    """
    subtopology, _, partition = task.partition("_")
    return to_int32(29791 + 961 * int(subtopology) + 31 * int(partition))


# --------------------------------------------------------------------------- natural orders (tree bins' tie-break)


def string_order(s: str) -> bytes:
    """``String.compareTo`` as a sort key: lexicographic over UTF-16 code units (not code points).

    >>> sorted(["\uffff", "\U0001F600", "b", "ab"], key=string_order) == ["ab", "b", "\U0001F600", "\uffff"]
    True
    """
    return s.encode("utf-16-be")


def task_id_order(task: str) -> tuple[int, int]:
    """``TaskId.compareTo`` (no named topology): by subtopology, then partition.

    >>> sorted(["1_0", "0_31", "0_4"], key=task_id_order)
    ['0_4', '0_31', '1_0']
    """
    subtopology, _, partition = task.partition("_")
    return int(subtopology), int(partition)


def uuid_order(uuid: tuple[int, int]) -> tuple[int, int]:
    """Kafka's ``Uuid.compareTo`` (and JDK 17's ``UUID.compareTo``): the high 64 bits, then the low, as signed longs.

    >>> sorted([(0, -1), (-1, 5), (0, 1)], key=uuid_order)
    [(-1, 5), (0, -1), (0, 1)]
    """
    return uuid
