"""Explorer.highlight: the nodes of the shown graph marked on the canvas (a kernel's nodes, say)."""

from __future__ import annotations

import pytest

from tracer.model import Capture, Frame
from viz.explorer import Explorer
from viz.synthetic import chain_graph


def test_highlight_marks_nodes_and_the_module_boxes_folding_them():
    g = chain_graph(2000)  # large enough to open grouped into module boxes
    ex = Explorer(Capture(frames=[Frame("0/0", "big.py:1 in forward", graph=g)], fn="Big"))
    drawn = {b["id"] for b in ex.canvas.drawing["boxes"]}
    shown = next(n.name for n in g.nodes if n.name in drawn and n.op == "placeholder")
    folded = next(n.name for n in g.nodes if n.name not in drawn)
    box = next(b["id"] for b in ex.canvas.drawing["boxes"] if folded in ex.canvas.drawing["find"].get(b["id"], []))
    ex.highlight([shown, folded, shown])
    assert ex.canvas.drawing["hi"] == [shown, box]  # the folded node is marked through its box, once each
    ex.highlight()
    assert ex.canvas.drawing["hi"] == []
    with pytest.raises(KeyError, match="no_such_node"):
        ex.highlight(["no_such_node"])


def test_showing_another_graph_clears_the_highlight():
    g = chain_graph(3, layers=1)
    ex = Explorer(Capture(frames=[Frame("0/0", "f.py:1 in f", graph=g), Frame("1/0", "g.py:1 in g", graph=g)], fn="f"))
    ex.highlight([g.nodes[1].name])
    assert ex.canvas.drawing["hi"] == [g.nodes[1].name]
    ex.select("", frame="1/0")
    assert ex.canvas.drawing["hi"] == []


def test_highlight_without_frames_is_a_clear_error():
    ex = Explorer(Capture(frames=[], fn="f"))
    ex.highlight()  # nothing to mark: fine
    with pytest.raises(KeyError, match="no frames"):
        ex.highlight(["x"])
