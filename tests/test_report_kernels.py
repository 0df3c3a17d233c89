"""The report's own drawings of Inductor kernels (viz/report_kernels.py, Note [One kernel chooser] in
viz/report.js): only a kernel whose nodes the drawing of its first node does not all draw gets one,
the widget's (every box folding one of its nodes opened), and kernels opening the same boxes share it."""

from __future__ import annotations

import json

from tracer.model import Frame, InductorGraph, Kernel
from viz.graph_layout import layout, opening
from viz.grouping import first_expanded
from viz.report_graphs import report_data
from viz.synthetic import chain_graph


def _frame(*kernels: list[str]) -> Frame:
    """Eight synthetic layers (the first view folds each in a box), compiled into ``kernels``."""
    ks = [Kernel(name=f"cpp_fused_{i}", handle=i, dynamo_nodes=list(ns)) for i, ns in enumerate(kernels)]
    return Frame(compile_id="0/0", code="forward", graph=chain_graph(400, layers=8),
                 inductor=[InductorGraph(aot_id="0_inference", kernels=ks)])


def _root(frame: Frame) -> dict:
    block, _ = report_data([frame])
    return json.loads(block)["graphs"][0]


def test_a_kernel_within_one_group_adds_no_drawing():
    plain = _root(_frame())
    root = _root(_frame(["view_1", "transpose_2"], ["linear_60"]))  # each inside one block's box
    assert "k" not in root and "kd" not in root
    assert json.dumps(root, sort_keys=True) == json.dumps(plain, sort_keys=True)  # not a byte more


def test_a_kernel_spanning_two_groups_gets_the_widgets_drawing_once_per_opening():
    frame = _frame(["view_1", "transpose_2"], ["linear_0", "linear_60"], ["view_1", "view_61"])
    root = _root(frame)
    assert root["k"] == {"2": 0, "3": 0}  # option values (from 1); the one-box kernel has none; shared
    (kd,) = root["kd"]
    drawn = {row[0] for row in kd["b"]}
    assert {"linear_0", "linear_60", "view_1", "view_61"} <= drawn
    # the widget's opening of the same nodes (viz/graph_layout.py), laid out the same way
    g = frame.graph
    top = layout(g, expanded=first_expanded(g), engine="linear")
    want = layout(g, expanded=first_expanded(g) | opening(g, top, ["linear_0", "linear_60"]), engine="linear")
    assert [row[0] for row in kd["b"]] == [b.id for b in want.boxes]
