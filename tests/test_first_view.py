"""A graph's first view (``viz.graph_layout.first_view``) is laid out once for the static report and the
recompile diff that draws the same graph, and is what a fresh layout gives."""

from __future__ import annotations

import dataclasses

from tracer.model import Graph
from tracer.model.diff import GraphDiff
from viz import graph_layout
from viz.diff_view import _CSS, graph_diff_svg
from viz.graph_layout import first_view, layout
from viz.grouping import first_expanded
from viz.report_graphs import DrawingCache, graph_drawing
from viz.svg import to_svg
from viz.synthetic import chain_graph


def _fresh(g: Graph):
    return layout(g, expanded=first_expanded(g), engine="linear")


def test_first_view_is_a_fresh_layout_and_kept_per_graph():
    g = chain_graph(300, layers=4)
    expanded, lay = first_view(g)
    assert expanded == first_expanded(g)
    assert dataclasses.asdict(lay) == dataclasses.asdict(_fresh(g))
    assert first_view(g)[1] is lay  # the same graph, the same nodes: not laid out again
    g.nodes = g.nodes[:-1]  # nodes changed: laid out again
    again = first_view(g)[1]
    assert again is not lay and dataclasses.asdict(again) == dataclasses.asdict(_fresh(g))
    other = chain_graph(300, layers=4)  # an equal graph is another object: its own entry
    assert first_view(other)[1] is not first_view(g)[1]


def test_report_and_diff_lay_a_graph_out_once(monkeypatch):
    calls = []
    real = graph_layout.layout
    monkeypatch.setattr(graph_layout, "layout", lambda *a, **k: calls.append(k.get("expanded")) or real(*a, **k))
    g = chain_graph(200, layers=3)
    graph_drawing(g, [], {"": 0}, DrawingCache())
    first = len(calls)
    assert first == 1  # the first view; the opened boxes' levels are laid out by viz.report_graphs' own import
    svg = graph_diff_svg(g, GraphDiff(a="", b=""), "a")
    assert len(calls) == first  # the diff drew the report's layout
    monkeypatch.setattr(graph_layout, "layout", real)
    assert svg == to_svg(_fresh(g), classes={}, data={}, style=_CSS)
