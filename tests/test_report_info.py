"""viz.report_info: the static report's inspector data is exactly ``viz.node_info`` of every drawn node,
numbered as the report numbers its graphs, its strings stored once and restored exactly."""

from __future__ import annotations

import json

import pytest
import torch

import tracer
from viz.info import node_info
from viz.report_graphs import frame_graphs, report_data
from viz.report_info import MARK, Interner, intern, report_info, unintern


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
                got = unintern(facts[n.name], block["values"])
                assert got == json.loads(json.dumps(node_info(frame, name, n.name), default=str)), (kind, n.name)
                checked += 1
    assert checked >= 20
    saved = [s.name for f in frames if f.aot is not None for s in f.aot.saved]
    assert saved and any("saved_for_backward" in unintern(g.get(saved[0], {}), block["values"])
                         for g in block["graphs"])


@pytest.mark.parametrize("value", ["", "short", "x" * 13, MARK, MARK + "3", "é ∂ 😀 \u2028 \x00" * 3, [], {},
                                   {"k": ["a" * 40, 1, 2.5, None, True, {"n": MARK * 2}], "j": ["a" * 40, 1, 2.5, None, True, {"n": MARK * 2}]},
                                   [{"node": "x", "line": 3}, {"node": "x", "line": 3}, ["p", "q"], "[\"p\",\"q\"]"]])
def test_interning_is_exact(value):
    table = Interner()
    packed = json.loads(json.dumps(intern(value, table)))
    values = json.loads(json.dumps(table.values))
    assert unintern(packed, values) == value
    assert all(len(v) > 12 or v.startswith(MARK) for v in values if isinstance(v, str))  # short plain strings stay
    assert len(values) == len({json.dumps(v) for v in values})  # each stored once


def test_repeated_values_are_stored_once():
    source = {"file": "/site-packages/transformers/models/t5/modeling_t5.py", "line": 307, "code": "h = self.ln(h)"}
    facts = [{"name": f"n{i}", "from": dict(source), "meta": {"from": dict(source), "shape": [2, i]}} for i in range(50)]
    table = Interner()
    for f in facts:
        table.count(f)
    packed = [table.pack(f) for f in facts]
    assert [unintern(p, table.values) for p in packed] == facts
    assert len(table.values) == 3  # the source dict and its two long strings, once; not 100 copies
    assert len(json.dumps(packed)) < len(json.dumps(facts)) / 3


def test_a_repeated_frame_reuses_its_block_and_a_changed_one_does_not(cap):
    import copy

    frame = max(cap.frames, key=lambda f: len(f.graph.nodes))
    cache: dict = {}
    first = report_info([frame], cache)
    twin = copy.deepcopy(frame)
    twin.compile_id, twin.times = "9/0", {}  # another copy of the same compile: same facts
    assert report_info([twin], cache) == first == report_info([twin]) and len(cache) == 1
    changed = copy.deepcopy(frame)
    changed.aot.saved = changed.aot.saved[1:]  # one saved value fewer: a fact differs, so no reuse
    assert report_info([changed], cache) == report_info([changed]) != first and len(cache) == 2
