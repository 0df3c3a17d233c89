"""``viz.to_dot`` and the canvas (explorer and static report) show the same boxes and edges for the
same graph and opened modules: one grouping (viz.grouping), one box list (viz.graph_layout.visible_boxes).
Checked on a real capture, through the real ``dot`` reading the DOT text back."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import torch

import tracer
import viz
from viz.drawing import drawing
from viz.grouping import first_expanded
from viz.report_graphs import frame_graphs, graph_drawing

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz dot not installed")


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(8, 16)
        self.down = torch.nn.Linear(16, 8)
        self.norm = torch.nn.LayerNorm(8)

    def forward(self, x):
        return self.norm(x + self.down(torch.relu(self.up(x))))


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block() for _ in range(3)])
        self.head = torch.nn.Linear(8, 2)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x).sum()


@pytest.fixture(scope="module")
def cap():
    torch.manual_seed(0)
    return tracer.capture(Net(), torch.randn(4, 8))


def _dot_boxes(text: str) -> tuple[list[tuple[str, str]], set[tuple[str, str]]]:
    """(name, label) of every node and the (tail, head) edges, as graphviz itself reads ``text``."""
    data = json.loads(subprocess.run(["dot", "-Tjson"], input=text.encode(), capture_output=True, check=True,
                                     timeout=60).stdout)
    names = {o["_gvid"]: o["name"] for o in data.get("objects", [])}
    nodes = [(o["name"], o["label"]) for o in data.get("objects", [])]
    return nodes, {(names[e["tail"]], names[e["head"]]) for e in data.get("edges", [])}


def _canvas_boxes(d: dict) -> tuple[list[tuple[str, str]], set[tuple[str, str]]]:
    return ([(b["id"], "\\n".join(x for x in (b["label"], b["sub"]) if x)) for b in d["boxes"]],
            {(e["src"], e["dst"]) for e in d["edges"]})


def test_dot_and_canvas_show_the_same_groups_on_a_real_capture(cap):
    (frame,) = cap.frames
    graphs = frame_graphs(frame)
    assert {k for k, *_ in graphs} >= {"root", "forward", "backward"}  # the AOT graphs are there too
    grouped = 0
    for kind, _, g, _ in graphs:
        first = first_expanded(g)
        views = [first, frozenset()]
        lay = viz.layout(g, expanded=first, engine="linear")
        views += [first | {b.group} for b in lay.boxes if b.group is not None][:1]  # a click on a module box
        for opened in views:
            want = _canvas_boxes(drawing(viz.layout(g, expanded=opened, engine="linear")))
            assert _dot_boxes(viz.to_dot(g, expanded=opened)) == want, (kind, sorted(opened))
        grouped += any(b.group is not None for b in lay.boxes)
    assert grouped >= 2  # the first views of the root and the AOT graphs fold modules: grouping is exercised


def test_dot_shows_the_explorer_and_report_first_view(cap):
    frame = cap.frames[0]
    ex = viz.Explorer(cap)
    g = frame.graph
    dot_ids = [n for n, _ in _dot_boxes(viz.to_dot(g, expanded=ex.expanded))[0]]
    assert dot_ids == ex.canvas.box_ids()
    assert any(i.startswith("module:") for i in dot_ids)
    report = graph_drawing(g, [], {"": 0})  # the static report's first view, packed
    assert dot_ids == [row[0] for row in report["b"]]
