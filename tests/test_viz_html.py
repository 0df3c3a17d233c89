"""Static HTML (capture_html / export_html), node_info, and rendering of real captures."""

from __future__ import annotations

import json
import re

import pytest
from cases import CASES
from viz_fixtures import wrap_capture

import viz
from tracer.model import Capture, validate


@pytest.fixture
def cap() -> Capture:
    c = wrap_capture()
    validate(c)
    return c


def section(html: str, start: str, end: str) -> str:
    i = html.index(start)
    return html[i:html.index(end, i)]


def test_overview_tree_svg_and_tables(cap):
    html = viz.capture_html(cap)
    # overview: frames with compile ids and code, the graph break with reason and source line, recompile
    assert "<td>0/0</td><td>compiled</td><td>user.py:5 in f</td>" in html and "<td>0/1</td>" in html
    assert "Unsupported: print()" in html and "print(&#34;&amp;&lt;&gt;&#34;)" in html
    assert "size mismatch at index 0" in html
    # the subgraph tree nests the inner body inside the outer one, with the HOP and lifted counts
    tree = section(html, '<ul class="ds-tree">', "</section>")
    outer = tree.index("<b>wrap_body_0</b> [wrap] called by wrap, 6 nodes, 1 lifted (y\u2190y)")
    inner = tree.index("<b>wrap_body_0</b> [wrap] called by wrap, 5 nodes, 1 lifted (y\u2190y)")
    assert outer < inner and tree.index("</ul>") > inner  # inner list closes after the inner body
    assert "failed: graph break in body" in html
    # the root graph's SVG, one box per node
    svg = section(html, "<svg", "</svg>")
    assert re.findall(r'data-node="([^"]+)"', svg) == [n.name for n in cap.frames[0].graph.nodes]
    # lifted inputs with their source in the parent
    assert "<td>y</td><td>lifted_freevar</td><td>y</td><td>f32[3]</td>" in html
    assert "<td>b</td><td>operand</td><td>a</td>" in html
    # guards grouped by kind
    assert "TENSOR_MATCH (1)" in html and "BACKEND_MATCH (1)" in html
    # partition: graph summary, saved values with total, input mutations and output aliasing
    assert "<td>forward</td><td>3</td><td>1</td><td>1</td>" in html
    assert "<td>backward</td><td>6</td><td>3</td><td>2</td>" in html
    assert "Saved for backward: 1 value(s), 12 B" in html
    assert "alias_of_input" in html
    # code highlighted by Pygments (inline styles, no classes needed)
    assert '<div class="highlight"' in html and "<span style=" in html


def test_deterministic_and_same_from_json(cap):
    html = viz.capture_html(cap)
    assert html == viz.capture_html(cap)
    assert html == viz.capture_html(Capture.from_json(cap.to_json()))
    assert "0x" not in html  # no addresses


def test_export_html_is_a_standalone_page(cap, tmp_path):
    path = viz.export_html(cap, tmp_path / "report.html")
    text = path.read_text(encoding="utf-8")
    assert path == tmp_path / "report.html"
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert "<svg" in text and "<script" not in text and "http" not in text.replace("http://www.w3.org/2000/svg", "")


def test_node_info_of_a_lifted_input_follows_the_chain(cap):
    f = cap.frames[0]
    info = viz.node_info(f, "wrap_body_0.wrap_body_0", "y")
    assert info["op"] == "placeholder" and info["role"] == "lifted_freevar" and info["input_kind"] == "lifted_freevar"
    assert info["lifted_from"] == {"graph": "wrap_body_0", "node": "y"}
    assert info["lifted_chain"] == [
        {"graph": "wrap_body_0.wrap_body_0", "node": "y", "kind": "lifted_freevar"},
        {"graph": "wrap_body_0", "node": "y", "kind": "lifted_freevar"},
        {"graph": "", "node": "y", "kind": "call_method"},
    ]
    info = viz.node_info(f, "wrap_body_0.wrap_body_0", "b")  # an operand: fed by the outer body's operand
    assert info["lifted_chain"][-1] == {"graph": "", "node": "l_x_", "kind": "operand"}
    assert json.loads(json.dumps(info)) == info


def test_node_info_of_ops(cap):
    f = cap.frames[0]
    info = viz.node_info(f, "", "y")
    assert (info["op"], info["target"], info["args"], info["users"]) == ("call_method", "cos", ["l_x_"], ["wrap"])
    assert info["source"] == "user.py:7 in f" and info["code_line"] == "y = x.cos()"
    assert info["value"] == "f32[3]" and info["meta"]["dtype"] == "float32"
    assert viz.node_info(f, "", "wrap")["calls"] == ["wrap_body_0"]
    assert viz.node_info(f, "aot.backward", "mul")["inputs"] == ["tangents_1", "neg"]
    with pytest.raises(KeyError, match=r"graphs: \['', 'wrap_body_0', 'wrap_body_0.wrap_body_0', 'aot.forward'"):
        viz.node_info(f, "nope", "y")
    with pytest.raises(KeyError, match="nodes: "):
        viz.node_info(f, "", "nope")


def test_big_graph_html_is_grouped_and_bounded():
    from tracer.model import Aot, Frame
    from viz.synthetic import chain_graph, joint_like_graph

    g = chain_graph(5000)
    cap = Capture(frames=[Frame("0/0", "m.py:1 in forward", graph=g,
                                aot=Aot("training", joint=joint_like_graph(5000)))], fn="Big")
    html = viz.capture_html(cap)
    assert html.count("data-group=") + html.count("data-node=") <= 300 and "data-group=" in html


# -- real captures ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_capture_renders(name, captured):
    cap = captured(name)
    validate(cap)
    html = viz.capture_html(cap)
    assert html == viz.capture_html(Capture.from_json(cap.to_json()))  # JSON parity
    for f in cap.frames:
        for gname, g in f.graphs().items():
            lay = viz.layout(g, engine="linear")
            svg = viz.to_svg(lay)
            assert re.findall(r'data-node="([^"]+)"', svg) == [n.name for n in g.nodes] or lay.grouped
            assert viz.to_dot(g).startswith("digraph")
            roles = {n.role for n in g.nodes}
            for role in roles:
                assert f"role-{role}" in svg
            for n in g.nodes:
                info = viz.node_info(f, gname, n.name)
                assert info["name"] == n.name and info["op"] == n.op
            if gname:  # every body placeholder knows where its value came from
                for i in f.subgraphs[gname].inputs:
                    chain = viz.node_info(f, gname, i.name)["lifted_chain"]
                    assert chain[0] == {"graph": gname, "node": i.name, "kind": i.kind}
                    end = chain[-1]  # where the value is bound: the root graph, or a non-placeholder node
                    assert end["graph"] == "" or end["kind"] not in ("operand", "lifted_freevar", "lifted_symbol")


def test_real_nested_lift_chain_goes_through_both_bodies(captured):
    """Seed 003: ``x`` used two bodies deep is lifted into the outer body and then into the inner one."""
    f = captured("nested_wraps").frames[0]
    chains = [viz.node_info(f, sg.name, i.name)["lifted_chain"]
              for sg in f.subgraphs.values() if sg.depth == 2 for i in sg.inputs if i.kind == "lifted_freevar"]
    through = [c for c in chains if len(c) == 3]
    assert len(through) == 1
    inner, outer, root = through[0]
    assert inner["graph"].startswith(outer["graph"] + ".") and root["graph"] == ""
    assert root["kind"] == "operand" and f.graph.node(root["node"]).op == "placeholder"
    # ``b`` (sin) is bound in the outer body itself: a chain of two ending at a call
    assert sorted(len(c) for c in chains) == [2, 2, 3]


def test_viz_never_imports_torch():
    """viz reads tracer.model only: no module of the package imports torch (or tracer's torch side)."""
    import ast
    import pathlib

    bad = []
    for path in sorted(pathlib.Path(viz.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                if name.split(".")[0] == "torch" or name.startswith(("tracer._torch", "tracer.capture")):
                    bad.append(f"{path.name}: {name}")
    assert bad == []
