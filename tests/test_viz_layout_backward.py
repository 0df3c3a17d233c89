"""Note [Saved edges do not rank] (viz/backward_groups.py) on a synthetic backward graph, torch-free:
the gradient ranks, saved values do not, in the linear layout and in the DOT ``dot`` lays out."""

from __future__ import annotations

import re

import pytest

from tracer.model import Graph, Node
from viz import layout_dot
from viz.graph_layout import layout, visible_boxes

SHAPE = {"kind": "tensor", "dtype": "float32", "shape": [2, 2], "device": "cpu"}


def _graph(name: str) -> Graph:
    """Two blocks in forward order b0, b1. The backward reads b0's saved output in b1 (a saved edge b0 -> b1),
    the gradient runs b1 -> two module-less nodes -> b0; ``loose`` is a saved value only b0 reads."""
    nodes: dict[str, Node] = {}

    def add(n: str, op: str, inputs: list[str], module: str = "", desc: str = "") -> None:
        meta: dict = dict(SHAPE)
        if module:
            meta["fwd_nn_module_stack" if op != "placeholder" else "nn_module_stack"] = [[module, "Block"]]
        if desc:
            meta["desc"] = desc
        nodes[n] = Node(name=n, op=op, target=n, args=list(inputs), inputs=list(inputs),
                        role="operand" if op == "placeholder" else "output" if op == "output" else "op", meta=meta)
        for i in inputs:
            nodes[i].users.append(n)

    add("saved_b0", "placeholder", [], "b0", "PlainAOTInput(idx=0)")
    add("saved_b1", "placeholder", [], "b1", "PlainAOTInput(idx=1)")
    add("loose", "placeholder", [], "", "PlainAOTInput(idx=2)")
    add("tangents_1", "placeholder", [], "", "TangentAOTInput(output=PlainAOTOutput(idx=0))")
    add("g1a", "call_function", ["tangents_1", "saved_b0"], "b1")
    add("g1b", "call_function", ["g1a", "saved_b1"], "b1")
    add("nm1", "call_function", ["g1b"])
    add("nm2", "call_function", ["nm1"])
    add("g0a", "call_function", ["nm2", "saved_b0", "loose"], "b0")
    add("output", "output", ["g0a"])
    return Graph(nodes=list(nodes.values()), code="", name=name)


def _y(lay, id_: str) -> float:
    return lay.box(id_).y


@pytest.mark.parametrize("engine", ["linear", "dot"])
def test_a_backward_graph_is_drawn_along_the_gradient(engine):
    lay = layout(_graph("backward"), engine=engine, threshold=0)
    if lay.engine != engine:
        pytest.skip(lay.note)
    # b1's gradient reaches b0 (through the "(no module)" box): b1 above b0, though b0's saved output feeds b1
    assert _y(lay, "tangents_1") < _y(lay, "module:b1") < _y(lay, "module:b0") < _y(lay, "output")
    # a value with only saved edges ranks on nothing: a source, in the top row
    assert lay.box("loose").y + lay.box("loose").h / 2 == min(b.y + b.h / 2 for b in lay.boxes)  # row centres
    saved = {(e.src, e.dst) for e in lay.edges if e.kind == "saved"}
    assert ("module:b0", "module:b1") in saved and ("loose", "module:b0") in saved  # still drawn, as saved edges


def test_a_joint_graph_still_ranks_on_saved_edges():
    lay = layout(_graph("joint"), engine="linear", threshold=0)
    assert _y(lay, "module:b0") < _y(lay, "module:b1")  # forward order: no kinds in a graph named "joint" here


def test_layout_dot_frees_saved_edges_and_ranks_through_the_no_module_box():
    graph = _graph("backward")
    boxes, vis = visible_boxes(graph, threshold=0)
    text = layout_dot.layout_source(boxes, vis.edges, ranking=vis.ranking)
    name = {f"n{i}": b.id for i, b in enumerate(boxes)}
    lines = [re.fullmatch(r"\t(n\d+) -> (n\d+)(?: \[(.*)\])?", ln) for ln in text.splitlines()]
    edges = [(name[m[1]], name[m[2]], m[3] or "") for m in lines if m]
    saved = {e for e, k in zip(vis.edges, vis.kinds, strict=True) if k == "saved"}
    loose = "module:(no module)"
    free = {(s, d) for s, d, attr in edges if attr == "constraint=false"}
    assert saved and free == saved | {e for e in vis.edges if loose in e}  # saved edges and the hub's, nothing else
    assert {(s, d) for s, d, attr in edges if attr == "style=invis"} == {("module:b1", "module:b0")}
    assert {(s, d) for s, d, attr in edges if not attr} == {e for e in vis.edges if e not in free}
    # a graph that is not a backward one ranks on every edge, as before
    boxes, vis = visible_boxes(_graph("forward"), threshold=0)
    assert "constraint=false" not in layout_dot.layout_source(boxes, vis.edges, ranking=vis.ranking)


def test_place_ranks_on_the_ranking_edges_only():
    from viz.graph_layout import Box
    from viz.layout_linear import place

    boxes = [Box(n, n, "", "op", 0, 0, 40, 20) for n in "abc"]
    edges = [("a", "b"), ("b", "c")]
    place(boxes, edges)
    assert [b.y for b in boxes] == sorted({b.y for b in boxes})  # a chain: three rows
    paths, _, _ = place(boxes, edges, ranking=[("b", "c")])
    assert boxes[0].y == boxes[1].y < boxes[2].y and len(paths) == 2  # a is a source on top; its edge still drawn


def test_to_dot_ranks_a_backward_graph_like_the_layout():
    import viz

    text = viz.to_dot(_graph("backward"), threshold=0)
    assert '"module:b0" -> "module:b1" [style=dashed constraint=false]' in text  # a saved edge: dashed, no rank
    assert '"module:b1" -> "module:b0" [style=invis]' in text  # the gradient through the (no module) box
    assert "constraint=false" not in viz.to_dot(_graph("forward"), threshold=0)
