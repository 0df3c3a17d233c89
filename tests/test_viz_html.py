"""Static HTML (capture_html / export_html), node_info, and rendering of real captures."""

from __future__ import annotations

import json
import re

import pytest
from cases import CASES
from viz_fixtures import wrap_capture

import viz
from tracer.model import Capture, validate
from viz.report_file import expand


@pytest.fixture
def cap() -> Capture:
    c = wrap_capture()
    validate(c)
    return c


def drawings(html: str) -> list[dict]:
    """The report's graphs as drawn: the JSON block, boxes unpacked (Note [Compact drawings])."""
    block = json.loads(section(html, '<script type="application/json" class="ds-drawings">', "</script>").split(">", 1)[1])
    strings = block["strings"]
    out = []
    for g in block["graphs"]:
        boxes = [{"id": b[0], "sub": strings[b[2]], "group": strings[b[8]] if len(b) > 8 else ""} for b in g["b"]]
        out.append({"boxes": boxes, "open": g["open"], "hi": g["hi"]})
    return out


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
    # every graph drawn from layout data: the root graph one box per node, the bodies, the AOT graphs
    graphs = drawings(html)
    assert [b["id"] for b in graphs[0]["boxes"]] == [n.name for n in cap.frames[0].graph.nodes]
    kinds = re.findall(r'<div class="ds-graphbox" data-graph="(\d+)" data-kind="(\w+)"', html)
    assert [k for _, k in kinds][:5] == ["root", "body", "body", "forward", "backward"] and len(graphs) == len(kinds)
    # lifted inputs with their source in the parent
    assert "<td>y</td><td>lifted_freevar</td><td>y</td><td>f32[3]</td>" in html
    assert "<td>b</td><td>operand</td><td>a</td>" in html
    # guards grouped by guarded variable, rows as JSON for the page's filter; kinds counted
    assert '<span class="ds-chip">TENSOR_MATCH 1</span>' in html and '<span class="ds-chip">BACKEND_MATCH 1</span>' in html
    assert 'data-title="global"' in html and 'class="ds-guard-filter"' in html
    # partition: graph summary, saved values with total, input mutations and output aliasing
    assert "<td>forward</td><td>3</td><td>1</td><td>1</td>" in html
    assert "<td>backward</td><td>6</td><td>3</td><td>2</td>" in html
    assert "Saved for backward: 1 value(s), 12 B" in html
    assert "alias_of_input" in html
    # code as escaped text (Pygments' inline styles would triple a report's bytes)
    assert "<pre>def forward(self):" in html


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
    # one drawing script, one payload per frame and the parts they name (viz/report_file.py), nothing fetched
    payload = '<script type="application/octet-stream" class="ds-payload"'
    part = '<script type="application/octet-stream" class="ds-part"'
    assert text.count("<script>") == 1 and text.count(payload) == len(cap.frames)
    assert text.count("<script") == 1 + len(cap.frames) + text.count(part)
    # inside the payloads: the JSON blocks, no other script, nothing fetched
    full = expand(text)
    assert full.count("<script>") == 1 and full.count("<script") == 1 + full.count('<script type="application/json"')
    assert "http" not in full.replace("http://www.w3.org/2000/svg", "")


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
    first = drawings(html)
    assert all(len(g["boxes"]) <= 300 for g in first) and all(any(b["group"] for b in g["boxes"]) for g in first)
    # folding in the report: every module box of the first view carries the drawing of its nodes
    assert all(set(g["open"]) == {b["id"] for b in g["boxes"] if b["group"]} for g in first)


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
                    if i.kind == "hop_supplied":  # made by the HOP: says what, and from which parent value
                        info = viz.node_info(f, gname, i.name)
                        assert info["supplied"].endswith(i.supplied) and "lifted_chain" not in info
                        continue
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


def test_report_shows_what_the_fidelity_work_records():
    from viz_fixtures import fidelity_capture

    cap = fidelity_capture()
    validate(cap)
    html = viz.capture_html(cap)
    over = section(html, '<div class="ds-panel">', "</div></div>")
    # attempts that did not compile: listed, greyed, with status and (folded) reason
    assert '<tr class="ds-grey"><td>0/0_0</td><td>restarted: <details><summary>Unsupported: print()</summary>' in over
    assert '<tr class="ds-grey"><td>1/0</td><td>no_graph: ' in over and "no tensor ops" in over
    assert '<tr><td>0/0</td><td>compiled</td>' in over and "4 frame(s) (2 not compiled)" in over
    assert '<section class="ds-frame ds-grey"><h2>Frame 0/0_0' in html and '<section class="ds-frame"><h2>Frame 0/0 ' in html
    # compile times per phase; a phase torch did not report is "?", never 0
    assert "<td>1.5 s</td><td>0.25 s</td><td>?</td><td>1.25 s</td><td>?</td>" in over
    assert "compile time: total 1.5 s, dynamo 0.25 s, aot_autograd ?, backend 1.25 s, before_restart ?" in html
    # problems of the capture and of each frame, in one box
    probs = section(over, '<div class="ds-problems">', "</div>")
    assert "Problems (2)" in probs and "<li>frame 2/0 was compiled before the capture started</li>" in probs
    assert "<li>frame 0/0: guards of L[&#39;x&#39;] not recorded</li>" in probs
    # limits of the source: a quiet folded note after the problems, never in the red box nor counted
    assert "speculations" not in probs and "4 frame(s) (2 not compiled)" in over and ", 2 problem(s)</div>" in over
    assert over.count('<details class="ds-limits ds-muted"><summary>Limits of the source (1): what the source cannot '
                      'contain, not problems of this run</summary><ul><li>the source does not record speculations</li>'
                      '</ul></details>') == 1
    assert over.index("ds-problems") < over.index("ds-limits")
    # graph breaks grouped: 3 breaks in 2 places, the repeated one counted with both attempts
    assert "<h4>Graph breaks (3 in 2 place(s))</h4>" in over
    assert "<tr><td>&times;2</td><td>user.py:9<br><code>print(&#34;&amp;&lt;&gt;&#34;)</code></td>" in over
    # saved values: activations apart from parameters, largest first, binary units
    saved = section(html, "<h4>Saved for backward", "<h4>Input mutations")
    assert "Saved for backward: 4 value(s), 5.0 MiB" in saved
    assert "activations 4.0 MiB (kept alive only for the backward); parameters and buffers 1.0 MiB" in saved
    acts = section(saved, "<h4>Activations: 2, 4.0 MiB</h4>", "<h4>Parameters")
    assert acts.index("<td>cos_big</td>") < acts.index("<td>cos</td>") and "<td>4.0 KiB</td>" in acts
    assert "<h4>Parameters and buffers: 1, 1.0 MiB</h4>" in saved and "<h4>Inputs and unknown origin: 1, 12 B</h4>" in saved
    # a body input the HOP supplies, in the tree and the lifted-inputs table
    assert "supplied by wrap: score\u2190score" in html
    assert "<td>score</td><td>hop_supplied</td><td>supplied by wrap: score</td>" in html
    assert "1 lifted, 1 supplied by the HOP of 3" in html


def test_no_problems_box_when_there_are_none(cap):
    assert cap.all_problems() == [] and "ds-problems\">" not in viz.capture_html(cap)
    assert cap.limits == [] and "ds-limits" not in viz.capture_html(cap)  # a live capture has no limits


def test_explorer_opens_the_largest_graph_and_labels_attempts():
    from viz_fixtures import fidelity_capture

    from viz.explorer import Explorer

    cap = fidelity_capture()
    ex = Explorer(cap)
    assert ex.frame.compile_id == "0/0"  # not the restarted attempt listed first, which has no graph
    labels = [label for label, _ in ex._frame_choice.options]
    assert labels[0] == "0/0_0  user.py:5 in f  [restarted: Unsupported: print()]"  # the informative line only
    assert labels[1] == "0/0  user.py:5 in f"
    ex.select("", frame="0/0_0")
    assert "restarted: <details>" in ex._crumbs.value and "compile time: total 0.5 s, dynamo ?" in ex._crumbs.value
    ex.select("wrap_body_0.wrap_body_0", frame="0/0")
    ex.select_node("score")
    assert ex.inspector["supplied"] == "by wrap: score" and "lifted_from" not in ex.inspector


def test_each_graph_code_links_to_its_own_drawing(cap):
    """Note [Code lines link to nodes] in viz/view.js: each "Code of" block names the drawing of its graph
    (the root's and each HOP body's), whose boxes are that graph's nodes."""
    html = viz.capture_html(cap)
    frame = cap.frames[0]
    boxes = drawings(html)
    first = section(html, '<section class="ds-frame', "</section>")
    blocks = re.findall(r'<summary>Code of ([^<]+)</summary>.*?class="ds-graph-code" data-graph="(\d+)"', first, re.S)
    assert [name for name, _ in blocks] == ["the root graph", *frame.subgraphs]
    for (_, index), g in zip(blocks, frame.graphs().values(), strict=True):
        drawn = boxes[int(index)]
        assert {b["id"] for b in drawn["boxes"] if not b["group"]} <= {n.name for n in g.nodes}
        assert g.nodes[-1].name in {b["id"] for b in drawn["boxes"]}  # its output: no other graph's
