"""viz.to_svg: well-formed, self-contained, deterministic SVG with the data attributes the canvas uses."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

import pytest
from viz_fixtures import root_graph

import viz
from viz.synthetic import chain_graph

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def groups(root: ET.Element, cls: str) -> list[ET.Element]:
    return [g for g in root.iter(f"{SVG}g") if cls in (g.get("class") or "").split()]


@pytest.mark.parametrize("engine", ["linear", pytest.param("dot", marks=pytest.mark.skipif(
    shutil.which("dot") is None, reason="graphviz dot not installed"))])
def test_every_box_and_edge_is_drawn(engine):
    g = root_graph()
    lay = viz.layout(g, engine=engine)
    svg = viz.to_svg(lay)
    root = parse(svg)
    assert root.tag == f"{SVG}svg" and root.get("data-engine") == engine
    nodes = groups(root, "node")
    assert [n.get("data-node") for n in nodes] == [n.name for n in g.nodes]
    roles = {n.get("data-node"): [c for c in n.get("class").split() if c.startswith("role-")] for n in nodes}
    assert roles["l_x_"] == ["role-operand"] and roles["wrap"] == ["role-hop"] and roles["output"] == ["role-output"]
    texts = {n.get("data-node"): [t.text for t in n.iter(f"{SVG}text")] for n in nodes}
    assert texts["wrap"] == ["wrap", "wrap(wrap_body_0) · (f32[3])"]
    edges = groups(root, "edge")
    assert {(e.get("data-src"), e.get("data-dst")) for e in edges} == {(i, n.name) for n in g.nodes for i in n.inputs}
    for e in edges:
        d = e.find(f"{SVG}path").get("d")
        assert d.startswith("M") and "C" in d
    assert "<!--" not in svg  # no version comments: deterministic across graphviz versions
    assert root.find(f"{SVG}style") is not None and ".role-hop rect" in root.find(f"{SVG}style").text


def test_selected_and_highlight():
    lay = viz.layout(root_graph(), engine="linear")
    root = parse(viz.to_svg(lay, selected="wrap", highlight=("y", "wrap")))
    cls = {g.get("data-node"): g.get("class").split() for g in groups(root, "node")}
    assert "selected" in cls["wrap"] and "highlight" in cls["wrap"] and "highlight" in cls["y"]
    assert "selected" not in cls["y"] and "highlight" not in cls["mul"]
    hi_edges = [(e.get("data-src"), e.get("data-dst")) for e in groups(root, "edge") if "highlight" in e.get("class")]
    assert hi_edges == [("y", "wrap")]


def test_group_boxes_carry_their_module_path():
    lay = viz.layout(chain_graph(400, layers=2), engine="linear")
    root = parse(viz.to_svg(lay))
    grp = groups(root, "group")
    assert [g.get("data-group") for g in grp] == ["L['self'].layers.0", "L['self'].layers.1"]
    assert all(g.get("data-node") is None and "role-group" in g.get("class") for g in grp)
    assert "click to expand" in grp[0].find(f"{SVG}title").text


def test_deterministic():
    a = viz.to_svg(viz.layout(root_graph(), engine="linear"))
    b = viz.to_svg(viz.layout(root_graph(), engine="linear"))
    assert a == b


def test_joint_graph_boxes_carry_their_partition():
    from viz.synthetic import joint_like_graph

    g = joint_like_graph(40, layers=2)
    root = parse(viz.to_svg(viz.layout(g, engine="linear", threshold=1000)))
    part = {e.get("data-node"): e.get("class").split() for e in groups(root, "node")}
    assert "partition-forward" in part["fwd_0"] and "partition-backward" in part["bwd_0"]
    assert not any(c.startswith("partition-") for c in part["primals_1"])  # placeholders have no partition meta
    grouped = parse(viz.to_svg(viz.layout(g, engine="linear", threshold=10)))
    halves = {e.get("data-group"): [] for e in groups(grouped, "group")}
    for e in groups(grouped, "group"):
        halves[e.get("data-group")].append([c for c in e.get("class").split() if c.startswith("partition-")])
    assert halves["L['self'].layers.0"] == [[], ["partition-backward"]]  # forward half, backward half
    assert ".partition-backward rect" in root.find(f"{SVG}style").text


def test_a_number_is_written_the_same_whatever_was_written_before():
    """``_f`` keeps the text of repeated coordinates: each number's text is still its own, in either
    order, for numbers equal as dict keys with other texts (``0.0 == -0.0``: "0" and "-0")."""
    from viz import svg

    def plain(v):
        s = f"{v:.1f}"
        return s[:-2] if s.endswith(".0") else s

    values = [0.0, -0.0, 0, 1, 1.0, True, 2.25, -2.25, 2.35, 1e6, -1e-9, 1e-9]
    for order in (values, values[::-1]):
        svg._WRITTEN.clear()
        for _ in range(2):
            assert [svg._f(v) for v in order] == [plain(v) for v in order]
    assert svg._f(-0.0) == "-0" and svg._f(0.0) == "0"
