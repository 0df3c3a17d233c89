"""viz.report_info: the static report's inspector data is exactly ``viz.node_info`` of every drawn node,
numbered as the report numbers its graphs, its strings stored once and restored exactly."""

from __future__ import annotations

import json

import pytest
import torch

import tracer
from viz.info import node_info
from viz.report_graphs import frame_graphs, report_data
from viz.report_info import MARK, intern, report_info, unintern


@pytest.fixture(scope="module")
def cap() -> tracer.Capture:
    def f(x, w):
        y = x.cos()
        return torch.ops.higher_order.wrap(lambda a: (a.sin() + y) @ w, x).sum()

    return tracer.capture(f, torch.randn(3, 3), torch.randn(3, 3, requires_grad=True))


def test_every_drawn_node_has_node_infos_facts(cap):
    frames = [f for f in cap.frames if f.has_graph]
    block = json.loads(report_info(frames))
    _, per_frame = report_data(frames)
    names = [g for f in frames for g in frame_graphs(f)]
    assert len(block["graphs"]) == sum(len(rows) for rows in per_frame) == len(names)
    kinds = [kind for rows in per_frame for kind, _, _, _ in rows]
    assert {"root", "body", "forward", "backward"} <= set(kinds)  # a HOP body and AOT graphs are among them
    checked = 0
    for frame, rows in zip(frames, per_frame, strict=True):
        for (kind, _, index, _), (_, _, graph, _) in zip(rows, frame_graphs(frame), strict=True):
            facts = block["graphs"][index]
            assert sorted(facts) == sorted(n.name for n in graph.nodes)
            name = {"root": ""}.get(kind, f"aot.{kind}")
            if kind == "body":
                name = next(k for k, sg in frame.subgraphs.items() if sg.graph is graph)
            for n in graph.nodes:
                got = unintern(facts[n.name], block["strings"])
                assert got == json.loads(json.dumps(node_info(frame, name, n.name), default=str)), (kind, n.name)
                checked += 1
    assert checked >= 20
    saved = [s.name for f in frames if f.aot is not None for s in f.aot.saved]
    assert saved and any("saved_for_backward" in unintern(g.get(saved[0], {}), block["strings"])
                         for g in block["graphs"])


@pytest.mark.parametrize("value", ["", "short", "x" * 13, MARK, MARK + "3", "é ∂ 😀 \u2028 \x00" * 3,
                                   {"k": ["a" * 40, 1, 2.5, None, True, {"n": MARK * 2}]}])
def test_interning_is_exact(value):
    table: dict[str, int] = {}
    packed = json.loads(json.dumps(intern(value, table)))
    assert unintern(packed, list(table)) == value
    assert all(len(s) > 12 or s.startswith(MARK) for s in table)  # short plain strings stay in place
