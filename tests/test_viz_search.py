"""What a collapsed module box carries for search (Note [Search reaches folded nodes]), and the
explorer opening the boxes that fold given nodes."""

from __future__ import annotations

import pytest

from tracer.model import Capture, Frame, Graph, Node
from viz.drawing import drawing
from viz.explorer import Explorer
from viz.graph_layout import layout, source_line
from viz.grouping import INPUTS_GROUP, first_expanded
from viz.style import node_labels
from viz.synthetic import chain_graph, joint_like_graph


@pytest.mark.parametrize("graph", [chain_graph(400, layers=4), joint_like_graph(120)], ids=["dynamo", "joint"])
def test_a_folded_node_carries_what_its_own_box_shows_and_the_groups_to_open(graph):
    expanded = first_expanded(graph)
    d = drawing(layout(graph, expanded=expanded, engine="linear"))
    drawn = {b["id"] for b in d["boxes"] if "group" not in b}
    folded = {e["id"]: (box, e) for box, es in d["find"].items() for e in es}
    assert folded and not drawn & set(folded)  # each node is drawn or folded, never both
    assert sorted(drawn | set(folded)) == sorted(n.name for n in graph.nodes) and len(folded) == sum(map(len, d["find"].values()))
    groups = {b["id"]: b["group"] for b in d["boxes"] if "group" in b}
    assert set(d["find"]) == set(groups)
    for name, (box, e) in list(folded.items())[::7]:
        node = graph.node(name)
        assert e["sub"] == node_labels(node)[1] and e["src"] == source_line(node.meta)
        assert e["open"][0] == groups[box]  # the box's own path first, then the paths below it
        opened = drawing(layout(graph, expanded=expanded | set(e["open"]), engine="linear"))
        own = next(b for b in opened["boxes"] if b["id"] == name)  # opening them draws the node itself...
        assert (own["sub"], own.get("src", "")) == (e["sub"], e["src"])  # ...with the lines search matched


def test_a_folded_node_has_its_module_path_below_the_box():
    g = chain_graph(400, layers=4)
    d = drawing(layout(g, expanded=frozenset(), engine="linear"))
    e = next(e for es in d["find"].values() for e in es if e["id"].startswith("linear"))
    assert len(e["open"]) >= 2 and all(b.startswith(a + ".") for a, b in zip(e["open"], e["open"][1:], strict=False))


def test_a_folded_input_opens_the_inputs_box():
    g = Graph(nodes=[Node(f"p{i}", "placeholder", f"p{i}", role="parameter", users=["out"]) for i in range(12)]
              + [Node("out", "output", "output", inputs=[f"p{i}" for i in range(12)], role="output")])
    d = drawing(layout(g, engine="linear", threshold=0))  # grouped: the 12 placeholders fold (Note [Folded inputs])
    assert [e["id"] for e in d["find"]["module:" + INPUTS_GROUP]] == [f"p{i}" for i in range(12)]
    assert all(e["open"] == [INPUTS_GROUP] and e["sub"] == "parameter" for e in d["find"]["module:" + INPUTS_GROUP])


def test_highlight_with_reveal_opens_the_boxes_folding_the_nodes():
    g = chain_graph(2000)
    ex = Explorer(Capture(frames=[Frame("0/0", "big.py:1 in forward", graph=g)], fn="Big"))
    before = ex.expanded
    drawn = {b["id"] for b in ex.canvas.drawing["boxes"]}
    folded = [n.name for n in g.nodes if n.name not in drawn and n.op == "call_function"]
    far = [folded[3], folded[-3]]
    ex.highlight(far, reveal=True)
    boxes = {b["id"] for b in ex.canvas.drawing["boxes"]}
    assert set(far) <= boxes and set(ex.canvas.drawing["hi"]) == set(far)  # drawn and marked, no box marked
    assert before < ex.expanded and set(ex.canvas.expanded) == ex.expanded
    n = len(ex.expanded)
    ex.highlight(far, reveal=True)  # already drawn: nothing more opens
    assert len(ex.expanded) == n
    still = next(n for n in folded if n not in boxes)
    ex.highlight([still])  # without reveal a folded node marks its box
    assert len(ex.canvas.drawing["hi"]) == 1 and ex.canvas.drawing["hi"][0].startswith("module:")
