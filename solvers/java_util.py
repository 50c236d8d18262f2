"""Bit-exact Python versions of the few JDK behaviours Kafka's assignors depend on.

* :class:`JavaRandom` is ``java.util.Random`` (JDK 17): a 48-bit linear
  congruential generator with multiplier ``0x5DEECE66D``, seed scrambling, and
  ``nextInt(bound)`` with its power-of-two path and its rejection loop.
* :func:`collections_shuffle` is ``Collections.shuffle(list, rnd)``.
* :func:`java_string_hash` is ``String.hashCode`` over UTF-16 code units.
* :class:`JavaHashMapOrder` / :func:`hashmap_order` reproduce the iteration
  order of ``java.util.HashMap`` (and so ``HashSet``): buckets by the spread
  hash, chains in insertion order for ``put``, at the head for
  ``computeIfAbsent``, resizing (and bucket splitting) exactly when the JDK does,
  and tree bins (:mod:`kipopt.solvers.java_tree_bin`) where the JDK makes them.

Reference values in the examples below were produced by OpenJDK 17.

>>> r = JavaRandom(42)
>>> [r.next_int(10) for _ in range(5)]
[0, 3, 8, 4, 0]
>>> java_string_hash("rack1")
108269626
"""

from __future__ import annotations

from typing import Callable, Hashable, Iterable, MutableSequence, TypeVar

from kipopt.solvers.java_tree_bin import KeyOrder, TreeBin, TreeTieError  # noqa: F401 (TreeTieError re-exported)

T = TypeVar("T")

_MULTIPLIER = 0x5DEECE66D
_ADDEND = 0xB
_MASK48 = (1 << 48) - 1


def to_int32(x: int) -> int:
    """Wrap an integer to Java ``int`` (two's complement, 32 bits).

    >>> to_int32(2**31), to_int32(-2**31 - 1), to_int32(7)
    (-2147483648, 2147483647, 7)
    """
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def to_int64(x: int) -> int:
    """Wrap an integer to Java ``long``.

    >>> to_int64(2**63)
    -9223372036854775808
    """
    x &= 0xFFFFFFFFFFFFFFFF
    return x - (1 << 64) if x & 0x8000000000000000 else x


def java_rem(a: int, b: int) -> int:
    """Java's ``%`` (the sign follows the dividend), unlike Python's.

    >>> java_rem(-7, 3), -7 % 3
    (-1, 2)
    """
    r = abs(a) % abs(b)
    return -r if a < 0 else r


class JavaRandom:
    """``java.util.Random(seed)``; subclasses may override :meth:`next_bits` as Java's ``next(int)``.

    >>> JavaRandom(0).next_int()
    -1155484576
    >>> r = JavaRandom(7)
    >>> r.next_long(), round(r.next_double(), 12), r.next_boolean()
    (-4967725919621401576, 0.749169603134, False)
    """

    def __init__(self, seed: int = 0):
        self.set_seed(seed)

    def set_seed(self, seed: int) -> None:
        self._seed = (seed ^ _MULTIPLIER) & _MASK48

    def next_bits(self, bits: int) -> int:
        """``next(bits)``: advance the LCG, return its top ``bits`` bits as a Java ``int``."""
        self._seed = (self._seed * _MULTIPLIER + _ADDEND) & _MASK48
        return to_int32(self._seed >> (48 - bits))

    def next_int(self, bound: int | None = None) -> int:
        """``nextInt()`` or ``nextInt(bound)`` (uniform in ``[0, bound)``)."""
        if bound is None:
            return self.next_bits(32)
        if bound <= 0:
            raise ValueError("bound must be positive")
        r = self.next_bits(31)
        m = bound - 1
        if bound & m == 0:  # a power of two: take the high bits
            return to_int32((bound * r) >> 31)
        u = r
        while True:
            r = u % bound  # u >= 0 here, so Python's % equals Java's
            if to_int32(u - r + m) >= 0:  # Java detects the overflow of the last, partial block
                return r
            u = self.next_bits(31)

    def next_long(self) -> int:
        return to_int64((self.next_bits(32) << 32) + self.next_bits(32))

    def next_boolean(self) -> bool:
        return self.next_bits(1) != 0

    def next_double(self) -> float:
        return ((self.next_bits(26) << 27) + self.next_bits(27)) * 2.0**-53


def collections_shuffle(items: MutableSequence[T], rnd: JavaRandom) -> None:
    """``Collections.shuffle(list, rnd)`` in place: for i = size..2, swap i-1 with ``nextInt(i)``.

    >>> xs = list(range(6)); collections_shuffle(xs, JavaRandom(42)); xs
    [1, 0, 4, 5, 3, 2]
    """
    for i in range(len(items), 1, -1):
        j = rnd.next_int(i)
        items[i - 1], items[j] = items[j], items[i - 1]


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


# --------------------------------------------------------------------------- HashMap order

_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64
_MAXIMUM_CAPACITY = 1 << 30


def spread_hash(h: int) -> int:
    """``HashMap.hash``: ``h ^ (h >>> 16)`` on the key's ``hashCode``.

    >>> spread_hash(java_string_hash("rack1")) & 15
    14
    """
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


def table_size_for(cap: int) -> int:
    """``HashMap.tableSizeFor``: the smallest power of two >= ``cap`` (at least 1).

    >>> table_size_for(0), table_size_for(13), table_size_for(16)
    (1, 16, 16)
    """
    n = 1
    while n < cap:
        n <<= 1
    return min(n, _MAXIMUM_CAPACITY)


def copy_capacity(size: int) -> int:
    """The initial capacity ``new HashMap<>(m)`` (JDK 17 ``putMapEntries``) uses for a map of ``size``.

    ``ft = size / 0.75f + 1.0f`` in float arithmetic, then ``tableSizeFor``.

    >>> copy_capacity(12), copy_capacity(13)
    (32, 32)
    """
    import numpy as np
    ft = np.float32(size) / np.float32(0.75) + np.float32(1.0)
    return table_size_for(int(ft)) if size > 0 else 16


class JavaHashMapOrder:
    """Tracks only the keys of a ``java.util.HashMap`` and reports its iteration order.

    ``initial_capacity`` plays the role of ``new HashMap<>(initialCapacity)``
    (the table is allocated at ``tableSizeFor`` of it on first insertion).
    A bin that the JDK turns into a red-black tree (``java.util.HashMap.TreeNode``:
    9 colliding keys after ``put``, 8 after ``computeIfAbsent``, in a table of 64
    or more) becomes a :class:`~kipopt.solvers.java_tree_bin.TreeBin`, whose
    iteration order follows the JDK's exactly. Its tree orders keys of equal
    hash by ``key_order`` (a comparison key mirroring ``compareTo``; by default
    the natural order that goes with ``hash_fn``: see :func:`natural_order`);
    where Java would fall back to identity hashes it raises
    :class:`~kipopt.solvers.java_tree_bin.TreeTieError`.

    >>> m = JavaHashMapOrder(java_string_hash)
    >>> for k in ["c1", "c2", "b", "a"]: m.put(k)
    >>> m.keys()
    ['a', 'b', 'c1', 'c2']
    """

    def __init__(self, hash_fn: Callable[[Hashable], int], initial_capacity: int = 16,
                 key_order: KeyOrder | None = None):
        self._hash_fn = hash_fn
        self._key_order = key_order if key_order is not None else natural_order(hash_fn)
        self._initial = table_size_for(initial_capacity)
        self._table: list[list[tuple[int, Hashable]] | TreeBin] | None = None  # plain bins are lists
        self._threshold = 0
        self._size = 0
        self._keys: set = set()

    def __len__(self) -> int:
        return self._size

    def __contains__(self, key: Hashable) -> bool:
        return key in self._keys

    @property
    def capacity(self) -> int:
        return len(self._table) if self._table is not None else 0

    def put(self, key: Hashable) -> None:
        """``map.put(key, v)``: a new key goes to the tail of its bin; then resize past the threshold."""
        if self._table is None:
            self._resize()
        if key in self._keys:
            return
        h = spread_hash(self._hash_fn(key))
        i = h & (len(self._table) - 1)
        chain = self._table[i]
        self._keys.add(key)
        if chain.__class__ is list:
            chain.append((h, key))
            if len(chain) - 1 >= _TREEIFY_THRESHOLD:
                self._treeify_bin(i)
        else:
            chain.put(h, key)
        self._size += 1
        if self._size > self._threshold:
            self._resize()

    def compute_if_absent(self, key: Hashable) -> None:
        """``map.computeIfAbsent(key, f)`` with ``f`` non-null: resize first if over threshold, insert at the head."""
        if self._table is None or self._size > self._threshold:
            self._resize()
        if key in self._keys:
            return
        h = spread_hash(self._hash_fn(key))
        i = h & (len(self._table) - 1)
        chain = self._table[i]
        self._keys.add(key)
        if chain.__class__ is list:
            chain.insert(0, (h, key))
            if len(chain) - 1 >= _TREEIFY_THRESHOLD - 1:  # the JDK counts differently here than in put
                self._treeify_bin(i)
        else:
            chain.put(h, key)
        self._size += 1

    def keys(self) -> list:
        """Iteration order of ``keySet()`` / ``values()`` / ``entrySet()``."""
        return [k for chain in (self._table or []) for _, k in chain]

    def _treeify_bin(self, i: int) -> None:
        """``treeifyBin``: a small table grows instead; else bin ``i`` becomes a :class:`TreeBin`."""
        if len(self._table) < _MIN_TREEIFY_CAPACITY:
            self._resize()
        else:
            self._table[i] = TreeBin(self._table[i], self._key_order)

    def _resize(self) -> None:
        if self._table is None:
            cap = self._initial
        else:
            cap = len(self._table) * 2
        new: list = [[] for _ in range(cap)]
        old = len(self._table) if self._table is not None else 0
        for j, chain in enumerate(self._table or []):
            if chain.__class__ is list:
                for h, k in chain:  # relative order within each split half is kept
                    new[h & (cap - 1)].append((h, k))
            else:
                new[j], new[j + old] = chain.split(old)
        self._table = new
        self._threshold = int(cap * 0.75)


def hashmap_order(keys: Iterable[Hashable], hash_fn: Callable[[Hashable], int] = java_string_hash,
                  initial_capacity: int = 16) -> list:
    """Iteration order of a ``HashMap`` (or ``HashSet``) filled by ``put`` with ``keys`` in order.

    >>> hashmap_order(["rack3", "rack1", "rack2"])
    ['rack3', 'rack1', 'rack2']
    >>> hashmap_order(["b", "a", "q"])
    ['a', 'q', 'b']
    """
    m = JavaHashMapOrder(hash_fn, initial_capacity)
    for k in keys:
        m.put(k)
    return m.keys()


# --------------------------------------------------------------------------- Uuid and boxed Integer (KIP-848 server assignors)


def integer_hash(value: int) -> int:
    """``Integer.hashCode()``: the value itself (what a ``HashSet<Integer>`` buckets by).

    >>> hashmap_order([17, 1, 16, 0], integer_hash)
    [16, 0, 17, 1]
    """
    return to_int32(value)


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


def small_hashmap_order(keys: Iterable[Hashable], hash_fn: Callable[[Hashable], int] = java_string_hash,
                        head_insertion: bool = False) -> list:
    """Like :func:`hashmap_order` (``put``) or, with ``head_insertion``, a map filled by ``computeIfAbsent``,
    for a default-capacity map; fast for up to 7 keys (one 16-slot table, no resize, no tree bin),
    where the order is the keys stably sorted by bucket, each bucket's chain reversed under head insertion.

    >>> small_hashmap_order(["b", "a", "q"])
    ['a', 'q', 'b']
    >>> small_hashmap_order([1, 17], integer_hash), small_hashmap_order([1, 17], integer_hash, head_insertion=True)
    ([1, 17], [17, 1])
    """
    unique = list(dict.fromkeys(keys))
    if len(unique) > 7:
        m = JavaHashMapOrder(hash_fn)
        for k in unique:
            m.compute_if_absent(k) if head_insertion else m.put(k)
        return m.keys()
    if head_insertion:
        unique.reverse()
    return sorted(unique, key=lambda k: spread_hash(hash_fn(k)) & 15)


# --------------------------------------------------------------------------- sticky assignor helpers
# (TopicPartition hashing and a HashSet with removal, for AbstractStickyAssignor.PartitionMovements)


def topic_partition_hash(topic: str, partition: int) -> int:
    """``TopicPartition.hashCode()``: ``31 * (31 + partition) + topic.hashCode()`` as an ``int``.

    >>> topic_partition_hash("t", 0)
    1077
    """
    return to_int32(31 * (31 + partition) + java_string_hash(topic))


class JavaHashSet(JavaHashMapOrder):
    """A ``java.util.HashSet`` (``new HashSet<>(initialCapacity)``, 16 by default): a :class:`JavaHashMapOrder`
    with ``add``, ``remove`` and iteration (``remove`` is ``HashMap.remove`` as well).

    Removal unlinks a key from its bin (a tree bin may turn back into a list)
    and never shrinks the table, as in the JDK.

    >>> s = JavaHashSet(lambda k: k)
    >>> for k in (17, 1, 33): s.add(k)
    >>> s.remove(1); list(s), s.first()
    ([17, 33], 17)
    """

    def __init__(self, hash_fn: Callable[[Hashable], int], key_order: KeyOrder | None = None,
                 initial_capacity: int = 16):
        super().__init__(hash_fn, initial_capacity, key_order)

    def __iter__(self):
        return (k for chain in (self._table or []) for _, k in chain)

    def add(self, key: Hashable) -> None:
        self.put(key)

    def remove(self, key: Hashable) -> None:
        if key not in self._keys:
            return
        self._keys.discard(key)
        self._size -= 1
        h = spread_hash(self._hash_fn(key))
        i = h & (len(self._table) - 1)
        chain = self._table[i]
        if chain.__class__ is not list:
            self._table[i] = chain.remove(key)
            return
        for j, (_, k) in enumerate(chain):
            if k == key:
                del chain[j]
                return

    def first(self) -> Hashable:
        """``set.iterator().next()``."""
        return next(iter(self))


# --------------------------------------------------------------------------- Kafka Streams TaskId hashing
# (appended for the high-availability ports: ClientTagAwareStandbyTaskAssignor's pending pass)


def task_id_hash(task: str) -> int:
    """``TaskId.hashCode`` of ``"<subtopology>_<partition>"`` without a named topology.

    ``Objects.hash(subtopology, partition, null)`` = ``29791 + 961*subtopology + 31*partition``:

    >>> task_id_hash("0_0"), task_id_hash("1_0") == task_id_hash("0_31")
    (29791, True)
    """
    subtopology, _, partition = task.partition("_")
    return to_int32(29791 + 961 * int(subtopology) + 31 * int(partition))


def task_hashmap_order(tasks: Iterable[str]) -> list[str]:
    """Iteration order of a ``HashMap<TaskId, ?>`` filled in ``tasks`` order (as ``Collectors.toMap`` does).

    >>> task_hashmap_order(["0_0", "0_1", "1_0"])  # buckets 15, 14 and 0 of 16
    ['1_0', '0_1', '0_0']
    """
    return hashmap_order(tasks, task_id_hash)


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


_NATURAL_ORDERS: dict = {java_string_hash: string_order, integer_hash: int, task_id_hash: task_id_order,
                         uuid_hash: uuid_order}


def natural_order(hash_fn: Callable[[Hashable], int]) -> KeyOrder | None:
    """The natural order (``compareTo``) of the key type that ``hash_fn`` hashes, as a sort key:
    ``String`` for :func:`java_string_hash`, ``Integer`` for :func:`integer_hash`, ``TaskId`` for
    :func:`task_id_hash`, ``Uuid`` for :func:`uuid_hash`; ``None`` otherwise (keys of equal hash then raise in a tree bin: e.g.
    ``TopicPartition`` and ``Optional`` are not ``Comparable``, so Java itself orders them by identity hash).

    >>> natural_order(integer_hash) is int, natural_order(lambda k: 0)
    (True, None)
    """
    return _NATURAL_ORDERS.get(hash_fn)


# --------------------------------------------------------------------------- java.util.PriorityQueue


class JavaPriorityQueue:
    """``java.util.PriorityQueue`` with a comparator given as a sort key: the same binary heap, so the
    same element comes out first among ties (JDK 17 ``siftUp``/``siftDown``; the example's order
    was printed by OpenJDK 17). Each element's key is computed once, when it is added.

    >>> q = JavaPriorityQueue(lambda e: e[0])
    >>> for e in [(1, "a"), (0, "b"), (1, "c"), (0, "d"), (1, "e")]: q.add(e)
    >>> [q.poll()[1] for _ in range(len(q))]
    ['b', 'd', 'a', 'c', 'e']
    """

    def __init__(self, key: Callable[[T], object]):
        self._key = key
        self._heap: list[tuple[object, T]] = []

    def __len__(self) -> int:
        return len(self._heap)

    def add(self, item: T) -> None:
        heap = self._heap
        x = (self._key(item), item)
        heap.append(x)
        k = len(heap) - 1
        while k > 0:
            parent = (k - 1) >> 1
            if not x[0] < heap[parent][0]:  # cmp(x, e) >= 0: stop
                break
            heap[k] = heap[parent]
            k = parent
        heap[k] = x

    def poll(self) -> T:
        heap = self._heap
        result = heap[0][1]
        x = heap.pop()
        n = len(heap)
        if n > 0:
            k, half = 0, n >> 1
            while k < half:
                child = 2 * k + 1
                right = child + 1
                if right < n and heap[right][0] < heap[child][0]:  # cmp(c, right) > 0
                    child = right
                if not heap[child][0] < x[0]:  # cmp(x, c) <= 0: stop
                    break
                heap[k] = heap[child]
                k = child
            heap[k] = x
        return result


# --------------------------------------------------------------------------- HashSet copies
# (appended for the KIP-924 StickyTaskAssignor port; its ProcessId hash is uuid_hash above)


def hashset_copy_capacity(size: int) -> int:
    """The table size of ``new HashSet<>(collection)``: ``tableSizeFor(max((int) (size / .75f) + 1, 16))``.

    Unlike :func:`copy_capacity` (``new HashMap<>(map)``) it never goes below 16:

    >>> hashset_copy_capacity(3), hashset_copy_capacity(12), hashset_copy_capacity(13)
    (16, 32, 32)
    """
    import numpy as np
    return table_size_for(max(int(np.float32(size) / np.float32(0.75)) + 1, 16))


def hashset_copy_order(keys: Iterable[Hashable], hash_fn: Callable[[Hashable], int]) -> list:
    """Iteration order of ``new HashSet<>(c)`` where ``c`` iterates ``keys`` in the given order.

    >>> hashset_copy_order([17, 1, 2], lambda k: k)  # table of 16: buckets 1, 1, 2
    [17, 1, 2]
    """
    keys = list(keys)
    return hashmap_order(keys, hash_fn, hashset_copy_capacity(len(keys)))
