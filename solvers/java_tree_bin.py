"""Tree bins of ``java.util.HashMap`` (JDK 17), modelled for iteration order.

A ``HashMap`` bin that reaches ``TREEIFY_THRESHOLD`` (8) entries in a table of
at least ``MIN_TREEIFY_CAPACITY`` (64) slots becomes a red-black tree of
``java.util.HashMap.TreeNode``. The JDK still iterates such a bin by the
nodes' ``next`` links, so what this module keeps exact is the *linked order*
of a tree bin, and every step that changes it, which depends on the tree's
shape (so the tree, its colours and rotations are reproduced too):

* **treeifying** (:class:`TreeBin` built from a plain bin): the list order is
  kept, the tree is built by inserting the nodes in list order, then the root
  is moved to the front of the list;
* **inserting** a new key (:meth:`TreeBin.put`, what both ``put`` and
  ``computeIfAbsent`` do on a tree bin): the new node is linked right after
  its tree parent, the tree is rebalanced, the root moved to the front;
* **removing** a key (:meth:`TreeBin.remove`): the node is unlinked from the
  list; if the tree is then "too small" by the JDK's test (its root lacks a
  child, or its left child lacks a left child, looked at *before* the node
  leaves the tree) the bin becomes a plain list in list order; otherwise the
  node leaves the tree (swapping places with its successor when it has two
  children), the tree is rebalanced and the root moved to the front;
* **resizing** (:meth:`TreeBin.split`): the list is split into the ``lo`` and
  ``hi`` halves in order; a half of at most ``UNTREEIFY_THRESHOLD`` (6) nodes
  becomes a plain list; a larger half is treeified afresh only when the other
  half is non-empty, else the old tree is kept as it was.

The tree's order: the spread hashes compared as signed ``int``; on equal
hashes, the keys' natural order, given here by a *comparison key* function
(``key_order(key)`` returns a Python value whose ``<`` matches Java's
``compareTo``, or ``None`` for a key that is not ``Comparable`` to its own
class). Where the JDK would fall back to ``tieBreakOrder`` (keys not
comparable, or comparing equal), it orders by ``System.identityHashCode``,
which changes from run to run: that raises :class:`TreeTieError` (a
``NotImplementedError``) instead of guessing.

>>> order = lambda k: k
>>> b = TreeBin([(h, h) for h in (0, 64, 128, 192, 256, 320, 384, 448, 512)], order)
>>> [k for _, k in b]  # the root (192) moved to the front; the rest keep their order
[192, 0, 64, 128, 256, 320, 384, 448, 512]
"""

from __future__ import annotations

from typing import Callable, Hashable, Iterator

UNTREEIFY_THRESHOLD = 6

KeyOrder = Callable[[Hashable], object]


class TreeTieError(NotImplementedError):
    """Two keys of equal hash in a tree bin that Java orders by ``System.identityHashCode`` (not reproducible)."""


class _Node:
    """One ``java.util.HashMap.TreeNode``: ``h`` is the spread hash (unsigned, for the bucket), ``sh`` the same as a
    signed ``int`` (for the tree's order), ``ck`` the key's comparison key (``None``: not comparable)."""

    __slots__ = ("h", "sh", "key", "ck", "next", "prev", "parent", "left", "right", "red")

    def __init__(self, h: int, key: Hashable, ck: object):
        self.h = h
        self.sh = h - (1 << 32) if h & 0x80000000 else h
        self.key = key
        self.ck = ck
        self.next = self.prev = self.parent = self.left = self.right = None
        self.red = False


def _direction(x: _Node, p: _Node) -> int:
    """Which side of ``p`` the new node ``x`` goes: -1 (left) or 1 (right)."""
    if p.sh > x.sh:
        return -1
    if p.sh < x.sh:
        return 1
    if x.ck is not None and p.ck is not None:
        if x.ck < p.ck:
            return -1
        if p.ck < x.ck:
            return 1
    raise TreeTieError(f"keys {x.key!r} and {p.key!r} share a hash in a java.util.HashMap tree bin and are not "
                       "ordered by compareTo: Java falls back to System.identityHashCode, which is not reproducible")


class TreeBin:
    """A tree bin: its nodes in ``next`` (iteration) order from :attr:`first`, and its red-black tree from
    :attr:`root`. Iterating yields ``(spread hash, key)`` pairs in Java's iteration order, like a plain bin's list.

    Built from a plain bin's ``(spread hash, key)`` list (``treeifyBin``).
    """

    __slots__ = ("first", "root", "size", "key_order")

    def __init__(self, entries, key_order: KeyOrder | None):
        self.key_order = key_order
        prev = None
        root = None
        for h, key in entries:
            x = _Node(h, key, key_order(key) if key_order is not None else None)
            if prev is None:
                self.first = x
            else:
                prev.next = x
                x.prev = prev
            prev = x
            if root is None:
                root = x
            else:
                root = _attach(root, x)
        self.size = len(entries)
        self.root = root
        self._move_root_to_front(root)

    def __iter__(self) -> Iterator[tuple[int, Hashable]]:
        e = self.first
        while e is not None:
            yield e.h, e.key
            e = e.next

    def __len__(self) -> int:
        return self.size

    def _move_root_to_front(self, root: _Node) -> None:
        self.root = root
        first = self.first
        if root is not first:
            rn, rp = root.next, root.prev
            if rn is not None:
                rn.prev = rp
            if rp is not None:
                rp.next = rn
            first.prev = root
            root.next = first
            root.prev = None
            self.first = root

    def put(self, h: int, key: Hashable) -> None:
        """``putTreeVal`` for a key not yet in the bin: linked after its tree parent; rebalance; root to front."""
        x = _Node(h, key, self.key_order(key) if self.key_order is not None else None)
        p = self.root
        while True:
            d = _direction(x, p)
            xp = p
            p = p.left if d <= 0 else p.right
            if p is None:
                xpn = xp.next
                if d <= 0:
                    xp.left = x
                else:
                    xp.right = x
                xp.next = x
                x.next = xpn
                x.parent = x.prev = xp
                if xpn is not None:
                    xpn.prev = x
                self.size += 1
                self._move_root_to_front(_balance_insertion(self.root, x))
                return

    def remove(self, key: Hashable) -> "TreeBin | list":
        """``removeTreeNode`` (movable) of a key in the bin; returns what the table slot holds afterwards:
        this bin, or a plain ``(spread hash, key)`` list (possibly empty) when the JDK untreeifies."""
        p = self.first
        while p.key != key:
            p = p.next
        succ, pred = p.next, p.prev
        if pred is None:
            self.first = succ
        else:
            pred.next = succ
        if succ is not None:
            succ.prev = pred
        self.size -= 1
        if self.first is None:
            return []
        root = self.root
        if root.right is None or root.left is None or root.left.left is None:  # too small
            return list(self)
        pl, pr = p.left, p.right
        if pl is not None and pr is not None:
            s = pr
            while s.left is not None:  # the successor
                s = s.left
            s.red, p.red = p.red, s.red
            sr = s.right
            pp = p.parent
            if s is pr:  # p was s's parent
                p.parent = s
                s.right = p
            else:
                sp = s.parent
                p.parent = sp
                if sp is not None:
                    if s is sp.left:
                        sp.left = p
                    else:
                        sp.right = p
                s.right = pr
                if pr is not None:
                    pr.parent = s
            p.left = None
            p.right = sr
            if sr is not None:
                sr.parent = p
            s.left = pl
            if pl is not None:
                pl.parent = s
            s.parent = pp
            if pp is None:
                root = s
            elif p is pp.left:
                pp.left = s
            else:
                pp.right = s
            replacement = sr if sr is not None else p
        elif pl is not None:
            replacement = pl
        elif pr is not None:
            replacement = pr
        else:
            replacement = p
        if replacement is not p:
            pp = replacement.parent = p.parent
            if pp is None:
                root = replacement
                replacement.red = False
            elif p is pp.left:
                pp.left = replacement
            else:
                pp.right = replacement
            p.left = p.right = p.parent = None
        r = root if p.red else _balance_deletion(root, replacement)
        if replacement is p:  # detach
            pp = p.parent
            p.parent = None
            if pp is not None:
                if p is pp.left:
                    pp.left = None
                elif p is pp.right:
                    pp.right = None
        self._move_root_to_front(r)
        return self

    def split(self, bit: int) -> tuple["TreeBin | list", "TreeBin | list"]:
        """``split`` on resize (``bit`` = the old capacity): the slots ``index`` and ``index + bit`` get."""
        lo: list[tuple[int, Hashable]] = []
        hi: list[tuple[int, Hashable]] = []
        for h, key in self:
            (hi if h & bit else lo).append((h, key))

        def half(mine: list, other: list) -> "TreeBin | list":
            if len(mine) <= UNTREEIFY_THRESHOLD:
                return mine
            return TreeBin(mine, self.key_order) if other else self

        return half(lo, hi), half(hi, lo)


def _attach(root: _Node, x: _Node) -> _Node:
    """``treeify``'s insertion of ``x`` (list links untouched); returns the new root."""
    p = root
    while True:
        d = _direction(x, p)
        xp = p
        p = p.left if d <= 0 else p.right
        if p is None:
            x.parent = xp
            if d <= 0:
                xp.left = x
            else:
                xp.right = x
            return _balance_insertion(root, x)


def _rotate_left(root: _Node, p: _Node) -> _Node:
    r = p.right
    if r is not None:
        rl = p.right = r.left
        if rl is not None:
            rl.parent = p
        pp = r.parent = p.parent
        if pp is None:
            root = r
            r.red = False
        elif pp.left is p:
            pp.left = r
        else:
            pp.right = r
        r.left = p
        p.parent = r
    return root


def _rotate_right(root: _Node, p: _Node) -> _Node:
    lft = p.left
    if lft is not None:
        lr = p.left = lft.right
        if lr is not None:
            lr.parent = p
        pp = lft.parent = p.parent
        if pp is None:
            root = lft
            lft.red = False
        elif pp.right is p:
            pp.right = lft
        else:
            pp.left = lft
        lft.right = p
        p.parent = lft
    return root


def _balance_insertion(root: _Node, x: _Node) -> _Node:
    x.red = True
    while True:
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        if not xp.red:
            return root
        xpp = xp.parent
        if xpp is None:
            return root
        _, far, toward, away = _sides(xp is xpp.left)  # the parent's side, and the rotations there
        uncle = far(xpp)
        if uncle is not None and uncle.red:
            uncle.red = xp.red = False
            xpp.red = True
            x = xpp
            continue
        if x is far(xp):
            x = xp
            root = toward(root, x)
            xp = x.parent
            xpp = None if xp is None else xp.parent
        if xp is not None:
            xp.red = False
            if xpp is not None:
                xpp.red = True
                root = away(root, xpp)


def _left(n: _Node) -> _Node | None:
    return n.left


def _right(n: _Node) -> _Node | None:
    return n.right


def _sides(left: bool):
    """For a node on its parent's left (``left``) or right: (child on its side, child on the other side,
    rotation toward its side, rotation away from it). The JDK writes each balancing step twice, once
    per side; here one body reads its directions from these."""
    if left:
        return _left, _right, _rotate_left, _rotate_right
    return _right, _left, _rotate_right, _rotate_left


def _red(n: _Node | None) -> bool:
    return n is not None and n.red


def _balance_deletion(root: _Node, x: _Node | None) -> _Node:
    while True:
        if x is None or x is root:
            return root
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        if x.red:
            x.red = False
            return root
        near, far, toward, away = _sides(xp.left is x)  # x's side, and the rotations there
        sibling = far(xp)
        if _red(sibling):
            sibling.red = False
            xp.red = True
            root = toward(root, xp)
            xp = x.parent
            sibling = None if xp is None else far(xp)
        if sibling is None:
            x = xp
            continue
        inner, outer = near(sibling), far(sibling)
        if not _red(outer) and not _red(inner):
            sibling.red = True
            x = xp
            continue
        if not _red(outer):
            if inner is not None:
                inner.red = False
            sibling.red = True
            root = away(root, sibling)
            xp = x.parent
            sibling = None if xp is None else far(xp)
        if sibling is not None:
            sibling.red = False if xp is None else xp.red
            outer = far(sibling)
            if outer is not None:
                outer.red = False
        if xp is not None:
            xp.red = False
            root = toward(root, xp)
        x = root
