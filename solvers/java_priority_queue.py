"""``java.util.PriorityQueue`` (:class:`JavaPriorityQueue`): the JDK's binary heap, so ties come out in its order."""

from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")


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
