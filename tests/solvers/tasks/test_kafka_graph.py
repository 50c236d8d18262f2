"""The port of Kafka's ``Graph``: Kafka's own ``GraphTest`` cases, then independent checks.

The first group ports the scenarios of Kafka's ``GraphTest`` (same graphs,
same expected flows and costs). The second checks what Kafka's tests do not
pin: that the block-vectorised Bellman–Ford finds exactly the cycles of the
plain transcription (same flows, same number of cancellations), and that the
result is a min-cost flow (against networkx).
"""

from __future__ import annotations

import random

import networkx as nx
import pytest

from kipopt.solvers.tasks.graph import Edge, Graph, GraphError


def _graph(edges, source=None, sink=None, vectorize=None) -> Graph:
    g = Graph(vectorize=vectorize)
    for u, v, cap, cost, flow in edges:
        g.add_edge(u, v, cap, cost, flow)
    g.set_source_node(source)
    g.set_sink_node(sink)
    return g


# GraphTest.setUp: flow 0->1 and 2->3 (cost 5); min cost 2 sends 0->3 and 2->1.
KAFKA_SETUP = [(0, 1, 1, 3, 1), (0, 3, 1, 1, 0), (2, 1, 1, 1, 0), (2, 3, 1, 2, 1),
               (-1, 0, 1, 0, 1), (-1, 2, 1, 0, 1), (1, 99, 1, 0, 1), (3, 99, 1, 0, 1)]


def _setup_graph(vectorize=None) -> Graph:
    return _graph(KAFKA_SETUP, -1, 99, vectorize)


# ---------------------------------------------------------------- Kafka's GraphTest


def test_basic_nodes_and_edges():
    """GraphTest.testBasic: nodes sorted, edges keyed by destination with residual = capacity - flow."""
    g = _setup_graph()
    assert g.nodes() == [-1, 0, 1, 2, 3, 99]
    assert g.edges(0) == {1: Edge(1, 1, 3, 0, 1), 3: Edge(3, 1, 1, 1, 0)}
    assert g.edges(2) == {1: Edge(1, 1, 1, 1, 0), 3: Edge(3, 1, 2, 0, 1)}
    assert g.edges(1) == {99: Edge(99, 1, 0, 0, 1)}
    assert g.edges(-1) == {0: Edge(0, 1, 0, 0, 1), 2: Edge(2, 1, 0, 0, 1)}
    assert g.edges(99) == {}


def test_residual_graph():
    """GraphTest.testResidualGraph: each edge gets a backward copy with residual = flow and cost negated."""
    g = _setup_graph()
    assert g.residual_edges(0) == {-1: Edge(-1, 1, 0, 1, 0, False), 1: Edge(1, 1, 3, 0, 1), 3: Edge(3, 1, 1, 1, 0)}
    assert g.residual_edges(1) == {0: Edge(0, 1, -3, 1, 0, False), 2: Edge(2, 1, -1, 0, 0, False),
                                   99: Edge(99, 1, 0, 0, 1)}
    assert g.residual_edges(3) == {0: Edge(0, 1, -1, 0, 0, False), 2: Edge(2, 1, -2, 1, 0, False),
                                   99: Edge(99, 1, 0, 0, 1)}


def test_invalid_operations():
    """GraphTest.testInvalidOperation: negative capacity, flow above capacity, an edge whose reverse exists."""
    g = Graph()
    with pytest.raises(ValueError, match="Edge capacity cannot be negative"):
        g.add_edge(0, 1, -1, 0, 0)
    with pytest.raises(ValueError, match="Edge flow 2 cannot exceed capacity 1"):
        g.add_edge(0, 1, 1, 0, 2)
    g.add_edge(0, 1, 1, 1, 1)
    with pytest.raises(ValueError, match="There is already an edge from 0 to 1. Can not add an edge from 1 to 0"):
        g.add_edge(1, 0, 1, 0, 0)
    with pytest.raises(ValueError):
        g.add_edge(None, 1, 1, 1, 1)


@pytest.mark.parametrize("edges, source, sink, message", [
    ([(0, 1, 1, 1, 0), (1, 2, 1, 1, 0)], 1, 2, "Source node 1 shouldn't have input 0"),
    ([(0, 1, 1, 1, 0), (1, 2, 1, 1, 0)], 0, 1, "Sink node 1 shouldn't have output"),
    ([(0, 1, 1, 1, 1), (0, 2, 2, 1, 2), (1, 3, 1, 1, 1), (2, 3, 2, 1, 0)], 0, 3,
     "Input flow for node 2 is 2 which doesn't match output flow 0"),
    ([(0, 1, 1, 1, 1), (0, 2, 2, 1, 2), (1, 3, 1, 1, 1), (2, 3, 2, 1, 2)], None, 3,
     "Output flow for source null is null which doesn't match input flow 3 for sink 3"),
    ([(0, 1, 1, 1, 1), (2, 3, 2, 1, 2)], 0, 1, "Input flow for node 3 is 2 which doesn't match output flow null"),
    ([(0, 1, 1, 1, 1), (2, 3, 2, 1, 2)], 0, 3, "Input flow for node 1 is 1 which doesn't match output flow null"),
])
def test_invalid_flows_are_rejected(edges, source, sink, message):
    """GraphTest's invalid source/sink/flow/missing-source/disconnected cases, with Kafka's messages."""
    with pytest.raises(GraphError) as err:
        _graph(edges, source, sink).solve_min_cost_flow()
    assert str(err.value) == message


def test_just_source_and_sink():
    """GraphTest.testJustSourceSink: nothing to cancel, the cost stays."""
    g = _graph([(0, 1, 1, 1, 1)], 0, 1)
    g.solve_min_cost_flow()
    assert g.total_cost() == 1


@pytest.mark.parametrize("vectorize", [False, True])
def test_min_cost_flow(vectorize):
    """GraphTest.testMinCostFlow (also KIP-925's two-task example): cost 5 -> 2, the flow is swapped."""
    g = _setup_graph(vectorize)
    assert g.total_cost() == 5
    g.solve_min_cost_flow()
    assert g.total_cost() == 2
    assert g.edges(0) == {1: Edge(1, 1, 3, 1, 0), 3: Edge(3, 1, 1, 0, 1)}
    assert g.edges(2) == {1: Edge(1, 1, 1, 0, 1), 3: Edge(3, 1, 2, 1, 0)}
    assert g.cycles_canceled == 1


@pytest.mark.parametrize("vectorize", [False, True])
def test_detected_node_not_on_the_cycle(vectorize):
    """GraphTest.testMinCostDetectNodeNotInNegativeCycle: the parent walk must reach the cycle 1-4-0-3-1."""
    g = _graph([(-1, 0, 1, 0, 1), (-1, 1, 1, 0, 1), (0, 2, 1, 1, 0), (0, 3, 1, 1, 0), (0, 4, 1, 10, 1),
                (1, 2, 1, 1, 0), (1, 3, 1, 10, 1), (1, 4, 1, 1, 0), (2, 99, 0, 0, 0), (3, 99, 1, 0, 1),
                (4, 99, 1, 0, 1)], -1, 99, vectorize)
    assert g.total_cost() == 20
    g.solve_min_cost_flow()
    assert g.total_cost() == 2
    assert g.edges(0) == {2: Edge(2, 1, 1, 1, 0), 3: Edge(3, 1, 1, 0, 1), 4: Edge(4, 1, 10, 1, 0)}
    assert g.edges(1) == {2: Edge(2, 1, 1, 1, 0), 3: Edge(3, 1, 10, 1, 0), 4: Edge(4, 1, 1, 0, 1)}
    assert g.edges(2) == {99: Edge(99, 0, 0, 0, 0)}


def test_deterministic_whatever_the_insertion_order():
    """GraphTest.testDeterministic: the flow 0->2->5 wins among equal-cost paths, for any edge order."""
    edges = [(0, 1, 1, 2, 1), (0, 2, 1, 1, 0), (0, 3, 1, 1, 0), (0, 4, 1, 1, 0),
             (1, 5, 1, 1, 1), (2, 5, 1, 1, 0), (3, 5, 1, 1, 0), (4, 5, 1, 1, 0)]
    rng = random.Random(925)
    for _ in range(10):
        rng.shuffle(edges)
        g = _graph(edges, 0, 5)
        assert g.total_cost() == 3
        g.solve_min_cost_flow()
        assert g.total_cost() == 2
        assert g.edges(0) == {1: Edge(1, 1, 2, 1, 0), 2: Edge(2, 1, 1, 0, 1), 3: Edge(3, 1, 1, 1, 0),
                              4: Edge(4, 1, 1, 1, 0)}
        assert [g.edges(n)[5].flow for n in (1, 2, 3, 4)] == [0, 1, 0, 0]


def test_max_flow_only_source_and_sink():
    """GraphTest.testMaxFlowOnlySourceAndSink."""
    g = _graph([(0, 1, 100, 0, 0)], 0, 1)
    assert g.calculate_max_flow() == 100
    assert g.edges(0)[1] == Edge(1, 100, 0, 0, 100)


@pytest.mark.parametrize("caps, expected", [((10, 5, 2), (2, 2, 2)), ((None, 5, 10), (1, 2, 3))])
def test_max_flow_bounded(caps, expected):
    """GraphTest.testMaxFlowBoundBySinkEdges / BoundBySourceEdges: three parallel paths 0-i-(i+3)-7."""
    first, middle, last = caps
    edges = []
    for i in (1, 2, 3):
        edges += [(0, i, first if first is not None else i, 0, 0), (i, i + 3, middle, 0, 0), (i + 3, 7, last, 0, 0)]
    g = _graph(edges, 0, 7)
    assert g.calculate_max_flow() == sum(expected)
    for i, f in zip((1, 2, 3), expected):
        assert g.edges(0)[i].flow == g.edges(i)[i + 3].flow == g.edges(i + 3)[7].flow == f


# ---------------------------------------------------------------- independent checks


def _assignment_graph(rng: random.Random, vectorize: bool):
    """A MinTraffic-shaped graph: tasks -> clients (cap 1), each client keeps its count."""
    n_tasks, n_clients = rng.randint(1, 30), rng.randint(1, 8)
    owner = [rng.randrange(n_clients) for _ in range(n_tasks)]
    edges = []
    for t in range(n_tasks):
        edges += [(t, n_tasks + c, 1, rng.randint(0, 21), int(owner[t] == c)) for c in range(n_clients)]
        edges.append((-1, t, 1, 0, 1))
    edges += [(n_tasks + c, n_tasks + n_clients, owner.count(c), 0, owner.count(c)) for c in range(n_clients)]
    return _graph(edges, -1, n_tasks + n_clients, vectorize)


def _layered_graph(rng: random.Random, vectorize: bool):
    """Layers with capacities > 1, negative costs and edges inside a layer (breaks the blocks up)."""
    sizes = [rng.randint(1, 5) for _ in range(rng.randint(1, 4))]
    layers, nxt = [], 0
    for s in sizes:
        layers.append(list(range(nxt, nxt + s)))
        nxt += s
    source, sink = -1, nxt
    edges = {}
    for u in layers[0]:
        edges[(source, u)] = rng.randint(1, 4)
    for a, b in zip(layers, layers[1:]):
        for u in a:  # at least one edge onwards: Kafka rejects a node with in-edges and none out
            for v in {rng.choice(b)} | {v for v in b if rng.random() < 0.6}:
                edges[(u, v)] = rng.randint(1, 4)
    for layer in layers:
        for i, u in enumerate(layer):
            for v in layer[i + 1:]:
                if rng.random() < 0.3:
                    edges[(u, v)] = rng.randint(1, 3)
    for u in layers[-1]:
        edges[(u, sink)] = rng.randint(1, 4)
    g = Graph(vectorize=vectorize)
    for (u, v), cap in sorted(edges.items()):
        g.add_edge(u, v, cap, rng.randint(-3, 9), 0)
    g.set_source_node(source)
    g.set_sink_node(sink)
    g.calculate_max_flow()
    return g


def _state(g: Graph):
    return [(u, g.edges(u)) for u in g.nodes()]


def _networkx_min_cost(g: Graph) -> int:
    d = nx.DiGraph()
    for u in g.nodes():
        for v, e in g.edges(u).items():
            d.add_edge(u, v, capacity=e.capacity, weight=e.cost)
    value = g.flow()
    d.nodes[g.source_node]["demand"] = -value
    d.nodes[g.sink_node]["demand"] = value
    return nx.cost_of_flow(d, nx.min_cost_flow(d))


@pytest.mark.parametrize("builder", [_assignment_graph, _layered_graph])
def test_vectorised_search_finds_the_same_cycles(builder):
    """The block-vectorised Bellman–Ford must cancel exactly the cycles of the plain transcription."""
    canceled = 0
    for seed in range(60):
        plain, fast = builder(random.Random(seed), False), builder(random.Random(seed), True)
        assert _state(plain) == _state(fast)
        plain.solve_min_cost_flow()
        fast.solve_min_cost_flow()
        assert _state(plain) == _state(fast), seed
        assert plain.cycles_canceled == fast.cycles_canceled
        canceled += plain.cycles_canceled
    assert canceled > 60  # the comparison is not vacuous


@pytest.mark.parametrize("builder", [_assignment_graph, _layered_graph])
def test_result_is_a_min_cost_flow_of_the_same_value(builder):
    """Cycle canceling keeps the flow value and reaches networkx's min cost for it."""
    for seed in range(40):
        g = builder(random.Random(1000 + seed), None)
        value = g.flow()
        g.solve_min_cost_flow()
        assert g.flow() == value
        assert g.total_cost() == _networkx_min_cost(g), seed
        for u in g.nodes():  # flow conservation and capacities still hold
            for e in g.edges(u).values():
                assert 0 <= e.flow <= e.capacity and e.residual_flow == e.capacity - e.flow
