"""What search needs to reach folded nodes (Note [Search reaches folded nodes]): a box's folded node
names, the graph's search index, the paths that open a node's boxes; and the explorer opening them."""

from __future__ import annotations

import pytest

from tracer.model import Capture, Frame, Graph, Node
from viz.canvas import GraphCanvas
from viz.drawing import drawing, search_index
from viz.explorer import Explorer
from viz.graph_layout import layout, opening, source_line
from viz.grouping import INPUTS_GROUP, first_expanded
from viz.style import node_labels
from viz.synthetic import chain_graph, joint_like_graph


@pytest.mark.parametrize("graph", [chain_graph(400, layers=4), joint_like_graph(120)], ids=["dynamo", "joint"])
def test_a_folded_node_is_found_by_what_its_own_box_shows_and_opened_by_its_chain(graph):
    expanded = first_expanded(graph)
    lay = layout(graph, expanded=expanded, engine="linear")
    d = drawing(lay)
    drawn = {b["id"] for b in d["boxes"] if "group" not in b}
    folded = {name: box for box, names in d["find"].items() for name in names}
    assert folded and not drawn & set(folded)  # each node is drawn or folded, never both
    assert sorted(drawn | set(folded)) == sorted(n.name for n in graph.nodes)
    groups = {b["id"]: b["group"] for b in d["boxes"] if "group" in b}
    assert set(d["find"]) == set(groups)
    ix = search_index(graph)
    assert set(ix["nodes"]) == {n.name for n in graph.nodes}
    for name, box in list(folded.items())[::7]:
        sub, src, chain = ix["nodes"][name]
        node = graph.node(name)
        assert (ix["strings"][sub], ix["strings"][src]) == (node_labels(node)[1], source_line(node.meta))
        paths = [ix["strings"][p] for p in ix["chains"][chain]]
        to_open = opening(graph, lay, [name])
        assert groups[box] in to_open and to_open == set(paths[paths.index(groups[box]):])
        opened = drawing(layout(graph, expanded=expanded | to_open, engine="linear"))
        own = next(b for b in opened["boxes"] if b["id"] == name)  # opening them draws the node itself...
        assert (own["sub"], own.get("src", "")) == (ix["strings"][sub], ix["strings"][src])  # ...showing what search matched


def test_a_folded_input_opens_the_inputs_box():
    g = Graph(nodes=[Node(f"p{i}", "placeholder", f"p{i}", role="parameter", users=["out"]) for i in range(12)]
              + [Node("out", "output", "output", inputs=[f"p{i}" for i in range(12)], role="output")])
    lay = layout(g, engine="linear", threshold=0)  # grouped: the 12 placeholders fold (Note [Folded inputs])
    assert drawing(lay)["find"]["module:" + INPUTS_GROUP] == [f"p{i}" for i in range(12)]
    assert opening(g, lay, ["p3"]) == {INPUTS_GROUP} and opening(g, lay, ["out"]) == set()
    assert search_index(g)["chains"] == [[]]


def test_the_canvas_sends_the_search_index_when_asked_once_per_graph():
    a, b = chain_graph(60, layers=2), chain_graph(30, layers=1)
    canvas, sent = GraphCanvas(), []
    canvas.observe(lambda ch: sent.append(ch["new"]), "search")
    canvas.graph = "a"
    canvas.draw(layout(a), graph=a)
    assert sent == []  # building a view computes no index
    canvas.search_for = "a"  # the browser's search box asks
    canvas.draw(layout(a, expanded={"L['self'].layers.0"}), graph=a)  # a redraw of the same graph
    canvas.graph = "b"
    canvas.draw(layout(b), graph=b)  # another graph: the old index goes
    canvas.search_for = "b"
    canvas.draw(None)
    assert sent == [{"graph": "a", **search_index(a)}, {}, {"graph": "b", **search_index(b)}, {}]


def test_highlight_with_reveal_opens_the_boxes_folding_the_nodes():
    g = chain_graph(2000)
    ex = Explorer(Capture(frames=[Frame("0/0", "big.py:1 in forward", graph=g)], fn="Big"))
    assert ex.canvas.search == {}
    ex.canvas.search_for = ex.canvas.graph
    assert ex.canvas.search == {"graph": ex.canvas.graph, **search_index(g)}
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
