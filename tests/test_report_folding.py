"""The report's opened drawings (Note [Folding in the report]) take each part's module chains from the
whole graph's (Note [Parts of a graph]) and count per distinct chain (Note [Equal chains shared]): the
drawings are exactly those of laying out every part as a graph of its own, from scratch."""

from __future__ import annotations

import pytest
from viz_fixtures import graph as fixture_graph
from viz_fixtures import t

from tracer.model import Graph, Node
from viz import report_graphs
from viz.grouping import distinct_chains, graph_chains, module_chain, module_tree, part_chains
from viz.synthetic import chain_graph


def _node(name: str, *inputs: str, op: str = "call_function", **meta) -> Node:
    return Node(name, op, name, args=list(inputs), inputs=list(inputs), meta=meta)


def _graph(name: str, *nodes: Node) -> Graph:
    for n in nodes:
        n.users = [m.name for m in nodes if n.name in m.inputs]
    return Graph(list(nodes), name=name)


def _logged(name: str) -> Graph:
    """A log's graph placing few nodes (Note [Runs of the no-module group], Note [Groups inferred from a log])."""
    def at(path: str) -> dict:
        return {"log_module": {"path": path, "via": "parameter"}}

    b1, b0 = "L['self'].b1", "L['self'].b0"
    return _graph(name, _node("w0", op="placeholder"), _node("w1", op="placeholder"), _node("tangent", op="placeholder"),
                  _node("g1", "tangent"), _node("g2", "g1"), _node("t1", "w1", **at(b1)), _node("g3", "g2", "t1"),
                  _node("g4", "g3"), _node("u1", "w1", **at(b1 + ".inner")), _node("g5", "g4", "u1"),
                  _node("t0", "w0", **at(b0)), _node("v0", "t0", **at(b0 + ".inner")), _node("g6", "g5", "v0"),
                  _node("g7", "g6"), _node("output", "g7", op="output"))


def _backward() -> Graph:
    def fwd(path: str) -> dict:
        return {**t(3), "fwd_nn_module_stack": [[path, "Linear"]], "partition": "backward"}

    return fixture_graph("backward", [
        ("tangents_1", "placeholder", "tangents_1", [], "operand"),
        ("w0", "placeholder", "w0", [], "operand"),
        ("t_0", "call_function", "aten.t.default", ["w0"], "op", {"meta": fwd("L['self'].l0.a")}),
        ("mm_1", "call_function", "aten.mm.default", ["tangents_1"], "op", {"meta": fwd("L['self'].l1.a")}),
        ("view_1", "call_function", "aten.view.default", ["mm_1"], "op", {"meta": fwd("L['self'].l1.b")}),
        ("add_9", "call_function", "aten.add.Tensor", ["view_1", "tangents_1"], "op", {"meta": t(3)}),
        ("mm_0", "call_function", "aten.mm.default", ["add_9", "t_0"], "op", {"meta": fwd("L['self'].l0.b")}),
        ("output", "output", "output", ["mm_0"], "output", {"meta": {}}),
    ])


GRAPHS = {
    "layers": lambda: chain_graph(400, layers=4),
    "one layer": lambda: chain_graph(30, layers=1),
    "backward": _backward,
    "logged backward": lambda: _logged("backward"),
    "logged forward": lambda: _logged("forward"),
    "logged joint": lambda: _logged("joint"),
    "logged Dynamo": lambda: _logged(""),
}


@pytest.mark.parametrize("name", list(GRAPHS))
def test_opened_drawings_equal_laying_out_every_part_from_scratch(name, monkeypatch):
    g = GRAPHS[name]()
    hi = [g.nodes[len(g.nodes) // 2].name]
    fast = report_graphs._unpacked(g, hi)
    # the old path: a part's chains are graph_chains of the part itself, read from its nodes' meta
    monkeypatch.setattr(report_graphs, "part_chains", lambda part, whole, at: None)
    slow = report_graphs._unpacked(Graph(list(g.nodes), name=g.name), hi)
    assert fast == slow
    table_fast, table_slow = {"": 0}, {"": 0}
    assert report_graphs._packed(*fast, table_fast) == report_graphs._packed(*slow, table_slow)
    assert table_fast == table_slow


@pytest.mark.parametrize("name", list(GRAPHS))
def test_part_chains_are_graph_chains_of_the_part(name):
    """Note [Parts of a graph]: the answer, and what graph_chains gives for the part afterwards, are what
    graph_chains gives a graph of the same nodes; for any subset, also ones the report never makes."""
    g = GRAPHS[name]()
    n = len(g.nodes)
    subsets = [list(range(n)), list(range(0, n, 2)), list(range(n // 3, n)), [k for k in range(n) if k % 3]]
    for at in subsets:
        part = Graph([g.nodes[i] for i in at], name=g.name)
        got = part_chains(part, g, at)
        assert graph_chains(part) is got
        assert got == graph_chains(Graph([g.nodes[i] for i in at], name=g.name))


@pytest.mark.parametrize("name", list(GRAPHS))
def test_equal_chains_are_one_list_and_counted_by_their_nodes(name):
    """Note [Equal chains shared]: per distinct chain, the same sums as per node."""
    g = GRAPHS[name]()
    chains = graph_chains(g)
    assert chains == graph_chains(Graph(list(g.nodes), name=g.name))
    if name in ("layers", "one layer"):  # every chain a node's own (none placed, none dropped): equal ones are one list
        assert chains == [module_chain(node) for node in g.nodes]
        assert all(a is b for a in chains for b in chains if a == b)
    got = distinct_chains(g)
    assert sum(k for _, k in got) == len(chains)
    assert [c for c, _ in got] == list({id(c): c for c in chains}.values())
    assert all(k == sum(1 for c in chains if c is d) for d, k in got)
    tree: dict[str, list[str]] = {"": []}  # module_tree node by node
    for chain in chains:
        parent = ""
        for path, _ in chain:
            if path not in tree:
                tree[path] = []
                tree[parent].append(path)
            parent = path
    assert module_tree(g) == tree
