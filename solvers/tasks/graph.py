"""Port of Kafka Streams' ``Graph`` (``processor.internals.assignment.Graph``, KIP-925).

Kafka solves its rack-aware task placement as a min-cost flow by *cycle
canceling*: starting from a feasible flow, it repeatedly finds a negative
cycle in the residual graph with Bellman–Ford and pushes the bottleneck
residual around it. Which of several optimal flows comes out depends on the
exact search order, so this port reproduces it:

* nodes iterate in ascending id (a dummy ``null`` node first, joined to every
  node by a residual-1, cost-0 edge); each node's residual edges iterate in
  ascending destination id;
* Bellman–Ford runs ``node count`` passes (the dummy included), relaxes only
  on a strict improvement, and returns the end node of the *first*
  relaxation of the last pass; the cycle is found by walking parent pointers
  from that node until one repeats;
* max flow (used by the balance-subtopology graph) is Ford–Fulkerson with a
  breadth-first search over the same sorted adjacency.

Speed without changing which cycle is found: a pass that relaxes nothing ends
the search (the next passes would be identical, so Kafka would find nothing
either), and on larger graphs a pass is evaluated block by block. A *block* is
a run of consecutive nodes with no residual edge between any two of them (all
tasks of a bipartite graph, all clients, ...). Inside a block no node's
distance changes, so the sequential strict relaxations amount to a column
minimum whose *first* arg-min (in node order) is the parent Kafka would
record, and the first relaxation of the last pass is the first improving
entry in row-major order. ``Graph(vectorize=False)`` runs the plain
transcription instead; the tests check both give identical flows.

>>> g = Graph()
>>> for u, v, cap, cost, flow in [(0, 1, 1, 3, 1), (0, 3, 1, 1, 0), (2, 1, 1, 1, 0), (2, 3, 1, 2, 1),
...                               (-1, 0, 1, 0, 1), (-1, 2, 1, 0, 1), (1, 99, 1, 0, 1), (3, 99, 1, 0, 1)]:
...     g.add_edge(u, v, cap, cost, flow)
>>> g.set_source_node(-1); g.set_sink_node(99)
>>> g.total_cost()
5
>>> g.solve_min_cost_flow(); g.total_cost()
2
>>> g.edges(0)[3]
Edge(destination=3, capacity=1, cost=1, residual_flow=0, flow=1, forward_edge=True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Edge", "Graph", "GraphError"]

_DUMMY = -1  # parent marker of Kafka's dummy ``null`` node
_NO_EDGE = np.int64(1 << 60)  # cost of a residual-0 entry: never an improvement
_DENSITY = 8  # a block may hold this many matrix cells per residual edge
_VECTORIZE_MIN_EDGES = 600  # below this many residual edges the plain loop is faster


class GraphError(RuntimeError):
    """Kafka's ``IllegalStateException`` from ``Graph`` (an invalid flow, a failed search)."""


@dataclass(frozen=True)
class Edge:
    """A snapshot of one edge, with the fields Kafka's ``Graph.Edge`` compares in ``equals``."""

    destination: int
    capacity: int
    cost: int
    residual_flow: int
    flow: int
    forward_edge: bool = True


def _java(value: object) -> str:
    return "null" if value is None else str(value)


class Graph:
    """Kafka's ``Graph<Integer>``: a flow network with integer node ids.

    Edges are added with their current flow; :meth:`solve_min_cost_flow`
    turns a feasible flow into a min-cost flow of the same value and
    :meth:`calculate_max_flow` finds a max flow from zero.
    """

    def __init__(self, vectorize: bool | None = None) -> None:
        self._index: dict[tuple[int, int], int] = {}
        self._tail: list[int] = []
        self._head: list[int] = []
        self._capacity: list[int] = []
        self._cost: list[int] = []
        self._flow: list[int] = []
        self._residual: list[int] = []
        self._out: dict[int, set[int]] = {}
        self._vectorize = vectorize
        self.source_node: int | None = None
        self.sink_node: int | None = None
        self.cycles_canceled = 0

    # ------------------------------------------------------------------ building

    def add_edge(self, u: int, v: int, capacity: int, cost: int, flow: int) -> None:
        """Add (or replace) edge ``u -> v``; Kafka refuses one whose reverse exists."""
        if u is None or v is None:
            raise ValueError("edge endpoints must not be None")
        if u == v:
            raise ValueError(f"self-loop {u} -> {v} is not supported")  # Kafka's residual graph breaks on it
        if capacity < 0:
            raise ValueError("Edge capacity cannot be negative")
        if flow > capacity:
            raise ValueError(f"Edge flow {flow} cannot exceed capacity {capacity}")
        if (v, u) in self._index:
            raise ValueError(f"There is already an edge from {v} to {u}. Can not add an edge from {u} to {v} "
                             "since there will create a cycle between two nodes")
        k = self._index.get((u, v))
        if k is None:
            k = self._index[(u, v)] = len(self._tail)
            self._tail.append(u)
            self._head.append(v)
            for x in (self._capacity, self._cost, self._flow, self._residual):
                x.append(0)
            self._out.setdefault(u, set()).add(v)
            self._out.setdefault(v, set())
        self._capacity[k], self._cost[k] = capacity, cost
        self._flow[k], self._residual[k] = flow, capacity - flow

    def set_source_node(self, node: int | None) -> None:
        self.source_node = node

    def set_sink_node(self, node: int | None) -> None:
        self.sink_node = node

    # ------------------------------------------------------------------ reading

    def nodes(self) -> list[int]:
        """Every node that is an end of some edge, ascending."""
        return sorted(self._out)

    def edges(self, node: int) -> dict[int, Edge]:
        """The edges leaving ``node``, by ascending destination."""
        out = {}
        for v in sorted(self._out.get(node, ())):
            k = self._index[(node, v)]
            out[v] = Edge(v, self._capacity[k], self._cost[k], self._residual[k], self._flow[k])
        return out

    def residual_edges(self, node: int) -> dict[int, Edge]:
        """What ``node``'s entry of Kafka's ``residualGraph()`` holds for the current flows."""
        out = {}
        for (u, v), k in self._index.items():
            cap, cost, flow = self._capacity[k], self._cost[k], self._flow[k]
            if u == node:
                out[v] = Edge(v, cap, cost, cap - flow, flow)
            elif v == node:
                out[u] = Edge(u, cap, -cost, flow, 0, False)
        return dict(sorted(out.items()))

    def total_cost(self) -> int:
        """Σ cost × flow over all edges (Kafka's ``totalCost``)."""
        return sum(c * f for c, f in zip(self._cost, self._flow))

    def flow(self) -> int:
        """Total flow leaving the source node."""
        return sum(self._flow[self._index[(self.source_node, v)]] for v in self._out.get(self.source_node, ()))

    # ------------------------------------------------------------------ algorithms

    def calculate_max_flow(self) -> int:
        """Ford–Fulkerson from the current flow (BFS in sorted adjacency); returns the flow out of the source."""
        residual = _Residual(self)
        residual.ford_fulkerson(self.source_node, self.sink_node)
        residual.copy_back()
        return self.flow()

    def solve_min_cost_flow(self) -> None:
        """Cancel negative cycles until none is left (Kafka's ``solveMinCostFlow``)."""
        self._validate_min_cost_graph()
        residual = _Residual(self)
        vectorize = self._vectorize
        if vectorize is None:
            vectorize = 2 * len(self._tail) >= _VECTORIZE_MIN_EDGES
        self.cycles_canceled += residual.cancel_negative_cycles(vectorize)
        residual.copy_back()

    def _validate_min_cost_graph(self) -> None:
        inflow: dict[int, int] = {}
        outflow: dict[int, int] = {}
        for u in sorted(self._out):
            if u == self.sink_node and self._out[u]:
                raise GraphError(f"Sink node {self.sink_node} shouldn't have output")
            for v in sorted(self._out[u]):
                if v == self.source_node:
                    raise GraphError(f"Source node {self.source_node} shouldn't have input {u}")
                f = self._flow[self._index[(u, v)]]
                outflow[u] = outflow.get(u, 0) + f
                inflow[v] = inflow.get(v, 0) + f
        for node in sorted(inflow):
            if node in (self.source_node, self.sink_node):
                continue
            if inflow[node] != outflow.get(node):
                raise GraphError(f"Input flow for node {node} is {inflow[node]} which doesn't match "
                                 f"output flow {_java(outflow.get(node))}")
        out_source, in_sink = outflow.get(self.source_node), inflow.get(self.sink_node)
        if out_source != in_sink:
            raise GraphError(f"Output flow for source {_java(self.source_node)} is {_java(out_source)} which "
                             f"doesn't match input flow {_java(in_sink)} for sink {_java(self.sink_node)}")


class _Residual:
    """The residual graph of a :class:`Graph`, on node positions 0..V-1 (ascending id).

    Residual edge ``2k`` is the forward copy of edge ``k`` (residual cap - flow,
    cost +c), ``2k + 1`` its backward copy (residual flow, cost -c); ``flow``
    is tracked on the forward copy exactly as Kafka updates it.
    """

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.ids = sorted(graph._out)
        pos = self.pos = {node: i for i, node in enumerate(self.ids)}
        m = len(graph._tail)
        self.frm = [0] * (2 * m)
        self.to = [0] * (2 * m)
        self.cost = [0] * (2 * m)
        self.res = [0] * (2 * m)
        self.flow = list(graph._flow)
        self.rid: dict[tuple[int, int], int] = {}
        adj: list[list[tuple[int, int]]] = [[] for _ in self.ids]
        for k in range(m):
            u, v = pos[graph._tail[k]], pos[graph._head[k]]
            c, cap, f = graph._cost[k], graph._capacity[k], graph._flow[k]
            for r, a, b, cost, res in ((2 * k, u, v, c, cap - f), (2 * k + 1, v, u, -c, f)):
                self.frm[r], self.to[r], self.cost[r], self.res[r] = a, b, cost, res
                self.rid[(a, b)] = r
                adj[a].append((b, r))
        for lst in adj:
            lst.sort()
        self.adj = adj

    def copy_back(self) -> None:
        g = self.graph
        for k in range(len(g._tail)):
            g._flow[k] = self.flow[k]
            g._residual[k] = self.res[2 * k]

    # ------------------------------------------------------------------ pushing flow

    def push(self, r: int, amount: int) -> None:
        """Kafka's update of one residual edge and its counter edge by ``amount``."""
        k, forward = divmod(r, 2)
        self.res[r] -= amount
        self.res[r ^ 1] += amount
        if forward == 0:
            self.flow[k] += amount
        elif self.flow[k] >= amount:
            self.flow[k] -= amount

    # ------------------------------------------------------------------ max flow

    def ford_fulkerson(self, source: int | None, sink: int | None) -> None:
        if source not in self.pos:
            raise GraphError(f"source node {_java(source)} has no edges")
        s = self.pos[source]
        t = self.pos.get(sink, -2)
        while True:
            parents = self._bfs(s, t)
            if parents is None:
                return
            path = []
            node = t
            while node != s:
                path.append(self.rid[(parents[node], node)])
                node = parents[node]
            amount = min(self.res[r] for r in path)
            for r in path:
                self.push(r, amount)

    def _bfs(self, s: int, t: int) -> dict[int, int] | None:
        res, adj = self.res, self.adj
        parents: dict[int, int] = {}
        visited = {s}
        queue = [s]
        head = 0
        while head < len(queue):
            node = queue[head]
            head += 1
            for nxt, r in adj[node]:
                if nxt in visited or res[r] <= 0:
                    continue
                if nxt == t:
                    parents[t] = node
                    return parents
                queue.append(nxt)
                parents[nxt] = node
                visited.add(nxt)
        return None

    # ------------------------------------------------------------------ cycle canceling

    def cancel_negative_cycles(self, vectorize: bool) -> int:
        search = _BlockSearch(self) if vectorize else None
        detect = search.detect if search is not None else self._detect_plain
        canceled = 0
        while True:
            found = detect()
            if found is None:
                return canceled
            start, parent = found
            visited: set[int] = set()
            node = start
            while node not in visited:
                visited.add(node)
                node = parent[node]
                if node == _DUMMY:
                    raise GraphError("negative-cycle search walked back to the dummy node")
            pushed = self._cancel(node, parent)
            if search is not None:
                search.refresh(pushed)
            canceled += 1

    def _cancel(self, on_cycle: int, parent: list[int]) -> list[int]:
        """Push the bottleneck around the cycle through ``on_cycle``; returns the residual edges touched."""
        cycle = [self.rid[(parent[on_cycle], on_cycle)]]
        node = parent[on_cycle]
        while node != on_cycle:
            cycle.append(self.rid[(parent[node], node)])
            node = parent[node]
        amount = min(self.res[r] for r in cycle)
        for r in cycle:
            self.push(r, amount)
        return cycle + [r ^ 1 for r in cycle]

    def _detect_plain(self) -> tuple[int, list[int]] | None:
        """Kafka's ``detectNegativeCycles`` from the dummy node, transcribed edge by edge."""
        n_nodes = len(self.ids)
        passes = n_nodes + 1  # the dummy node counts
        # Pass 0 starts with the dummy's edges: every node at distance 0, parent dummy.
        dist = [0] * n_nodes
        parent = [_DUMMY] * n_nodes
        res, cost, adj = self.res, self.cost, self.adj
        for i in range(passes):
            last = i == passes - 1
            changed = False
            for u in range(n_nodes):
                du = dist[u]
                for v, r in adj[u]:
                    if res[r] == 0:
                        continue
                    nd = du + cost[r]
                    if dist[v] > nd:
                        dist[v] = nd
                        parent[v] = u
                        if last:
                            return v, parent
                        changed = True
            if not changed:
                return None  # every later pass would be identical
        return None


@dataclass
class _Block:
    rows: np.ndarray  # node positions, ascending, no residual edge among them
    cols: np.ndarray  # their residual destinations, ascending
    weight: np.ndarray  # rows x cols: cost where residual > 0, else _NO_EDGE


class _BlockSearch:
    """Bellman–Ford passes evaluated one block of independent nodes at a time (see module doc)."""

    def __init__(self, residual: _Residual) -> None:
        self.residual = residual
        self.blocks: list[_Block] = []
        self.where: dict[int, tuple[int, int, int]] = {}
        for rows in self._partition():
            self._add_block(rows)

    def _partition(self) -> list[list[int]]:
        adj = self.residual.adj
        groups: list[list[int]] = []
        rows: list[int] = []
        row_set: set[int] = set()
        cols: set[int] = set()
        edges = 0
        for u in range(len(adj)):
            dests = {v for v, _ in adj[u]}
            if not dests:
                continue
            grown = len(cols | dests) * (len(rows) + 1)
            dense_enough = grown <= _DENSITY * (edges + len(dests)) + 256
            if rows and (u in cols or dests & row_set or not dense_enough):
                groups.append(rows)
                rows, row_set, cols, edges = [], set(), set(), 0
            rows.append(u)
            row_set.add(u)
            cols |= dests
            edges += len(dests)
        if rows:
            groups.append(rows)
        return groups

    def _add_block(self, rows: list[int]) -> None:
        res, cost, adj = self.residual.res, self.residual.cost, self.residual.adj
        cols = sorted({v for u in rows for v, _ in adj[u]})
        col_of = {v: j for j, v in enumerate(cols)}
        weight = np.full((len(rows), len(cols)), _NO_EDGE, dtype=np.int64)
        b = len(self.blocks)
        for i, u in enumerate(rows):
            for v, r in adj[u]:
                j = col_of[v]
                self.where[r] = (b, i, j)
                if res[r] != 0:
                    weight[i, j] = cost[r]
        self.blocks.append(_Block(np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64), weight))

    def refresh(self, rids) -> None:
        res, cost = self.residual.res, self.residual.cost
        for r in rids:
            b, i, j = self.where[r]
            self.blocks[b].weight[i, j] = cost[r] if res[r] != 0 else _NO_EDGE

    def detect(self) -> tuple[int, list[int]] | None:
        n_nodes = len(self.residual.ids)
        passes = n_nodes + 1
        dist = np.zeros(n_nodes, dtype=np.int64)
        parent = np.full(n_nodes, _DUMMY, dtype=np.int64)
        blocks = [(blk.rows, blk.cols, blk.weight, np.arange(len(blk.cols))) for blk in self.blocks]
        for _ in range(passes - 1):
            changed = False
            for rows, cols, weight, span in blocks:
                cand = dist[rows][:, None] + weight
                arg = cand.argmin(axis=0)
                best = cand[arg, span]
                now = dist[cols]
                better = best < now
                if better.any():
                    dist[cols] = np.where(better, best, now)
                    parent[cols] = np.where(better, rows[arg], parent[cols])
                    changed = True
            if not changed:
                return None
        for blk in self.blocks:  # the last pass: Kafka returns at its first relaxation
            cand = dist[blk.rows][:, None] + blk.weight
            better = cand < dist[blk.cols][None, :]
            if better.any():
                i, j = divmod(int(better.argmax()), better.shape[1])
                v = int(blk.cols[j])
                dist[v] = cand[i, j]
                parent[v] = blk.rows[i]
                return v, parent.tolist()
        return None
