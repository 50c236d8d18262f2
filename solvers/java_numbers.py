"""Java's integer arithmetic (``int`` and ``long`` wrap-around, ``%``) and ``java.util.Random`` (JDK 17) with
``Collections.shuffle``."""

from __future__ import annotations

from typing import MutableSequence, TypeVar

T = TypeVar("T")

_MULTIPLIER = 0x5DEECE66D
_ADDEND = 0xB
_MASK48 = (1 << 48) - 1


def to_int16(x: int) -> int:
    """Wrap an integer to Java ``short`` (two's complement, 16 bits), as a ``(short)`` cast does.

    >>> to_int16(32767), to_int16(32768), to_int16(65537)
    (32767, -32768, 1)
    """
    x &= 0xFFFF
    return x - 0x10000 if x >= 0x8000 else x


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
