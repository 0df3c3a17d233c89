"""Hostile strings from user code render as text in DOT, SVG and HTML, never as markup or DOT syntax."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import ipywidgets as W
import pytest
from markupsafe import escape
from viz_fixtures import EVIL, graph, wrap_capture

import viz
from viz.report_file import expand
from viz.report_info import unintern

SVG = "{http://www.w3.org/2000/svg}"
ATTR = '" onmouseover="alert(2)'
SOURCE = 'y = f("&<>") \\l \\N'  # quotes, entities, tags, and graphviz label escapes
MODULE = "L['self'].blocks[\"a b\"]"
MODULE2 = "L['self'].<i>other</i>"
HOSTILE_NAMES = [EVIL, ATTR, "back\\", "a\\\"b", "x\\ly", "new\nline"]

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz dot not installed")


def hostile_graph():
    specs = [("x", "placeholder", "x", [], "operand")]
    prev = "x"
    for k, name in enumerate(HOSTILE_NAMES):
        meta = {"kind": "tensor", "dtype": "float32", "shape": [3],
                "source": {"file": "<evil>.py", "line": 1, "fn": "f", "code": SOURCE},
                "nn_module_stack": [[MODULE if k % 2 else MODULE2, "<b>Evil</b>"]]}
        specs.append((name, "call_function", f"torch.{EVIL}", [prev], "op", {"meta": meta}))
        prev = name
    specs.append(("output", "output", "output", [prev], "output", {"meta": {}}))
    return graph("", specs)


def svg_texts(svg: str) -> list[str]:
    return [t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text")]


@needs_dot
@pytest.mark.parametrize("threshold", [300, 2])  # plain, and folded into a module group
def test_dot_text_is_read_back_as_the_same_labels(threshold):
    g = hostile_graph()
    dot = viz.to_dot(g, threshold=threshold)
    svg = subprocess.run(["dot", "-Tsvg"], input=dot.encode(), capture_output=True, check=True).stdout.decode()
    root = ET.fromstring(svg)  # well-formed: nothing leaked as markup
    assert not [e for e in root.iter() if e.tag.endswith("script")]
    texts = [t.text for t in root.iter(f"{SVG}text")]
    if threshold == 300:
        for name in HOSTILE_NAMES:
            assert " ".join(name.split()) in texts  # graphviz shows the exact name: its escapes did not fire
        data = json.loads(subprocess.run(["dot", "-Tjson"], input=dot.encode(), capture_output=True, check=True).stdout)
        assert len(data["objects"]) == len(g.nodes) and len(data["edges"]) == len(g.nodes) - 1
    else:
        assert MODULE in texts and MODULE2 in texts


@pytest.mark.parametrize("engine", ["linear", pytest.param("dot", marks=needs_dot)])
def test_svg_keeps_hostile_strings_as_text(engine):
    g = hostile_graph()
    svg = viz.to_svg(viz.layout(g, engine=engine, threshold=1000), selected=EVIL, highlight=[ATTR])
    root = ET.fromstring(svg)
    assert not [e for e in root.iter() if e.tag.endswith("script")]
    nodes = [e for e in root.iter(f"{SVG}g") if e.get("data-node") is not None]
    assert [e.get("data-node") for e in nodes] == [n.name for n in g.nodes]  # attribute values round-trip
    assert all("onmouseover" not in e.attrib for e in root.iter())
    assert EVIL in svg_texts(svg)
    assert "onmouseover" in svg and 'onmouseover="' not in svg
    grouped = viz.to_svg(viz.layout(g, threshold=2, engine=engine))
    assert [e.get("data-group") for e in ET.fromstring(grouped).iter(f"{SVG}g") if e.get("data-group")] == [MODULE2, MODULE]
    assert "<b>" not in grouped


def _without_own_scripts(html: str) -> str:
    """``html`` minus the report's own script elements: its JSON blocks (user strings inside are
    \\u003c-escaped, so none can close the element) and its one drawing script (no user text)."""
    html = re.sub(r'<script type="application/json" class="ds-[a-z-]+">[^<]*</script>', "", html)
    html = re.sub(r'<script type="application/octet-stream" class="ds-pa(?:yload|rt)" [^>]*>[A-Za-z0-9+/=]*</script>', "",
                  html)
    return re.sub(r"<script>\(\(\) => \{.*?\}\)\(\);</script>", "", html, flags=re.S)


def test_html_escapes_names_sources_modules_reasons_and_guards(tmp_path):
    cap = wrap_capture(EVIL, source_code=SOURCE)
    cap.frames[0].graph.nodes[1].meta["nn_module_stack"] = [[MODULE, "<b>Evil</b>"]]
    html = viz.capture_html(cap)
    assert EVIL not in html and "<b>Evil" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "onmouseover=" not in html
    text = viz.export_html(cap, tmp_path / "r.html").read_text()
    assert "<script" not in _without_own_scripts(text).lower()
    text = expand(text)  # and inside the frames' payloads (viz/report_file.py)
    assert "<script" not in _without_own_scripts(text).lower()
    assert "\\u003cscript\\u003ealert(1)\\u003c/script\\u003e" in text  # in the JSON blocks, escaped


def test_node_info_is_plain_data_with_the_raw_strings():
    cap = wrap_capture(EVIL, source_code=SOURCE)
    info = viz.node_info(cap.frames[0], "", EVIL)
    assert info["name"] == EVIL and json.loads(json.dumps(info))["name"] == EVIL  # escaping is the renderer's job
    info = viz.node_info(cap.frames[0], "", "y")
    assert info["code_line"] == SOURCE


QUOTES = "<script>q'\"&</script>"  # tag, both quotes, ampersand


def _html_values(widget) -> list[str]:
    """Every HTML string a widget tree shows."""
    out = [widget.value] if isinstance(widget, W.HTML) else []
    for child in getattr(widget, "children", ()):
        out += _html_values(child)
    return out


def test_new_fields_are_escaped_in_html_svg_and_dot(tmp_path):
    from viz_fixtures import fidelity_capture

    from viz.explorer import Explorer

    cap = fidelity_capture(QUOTES)
    shown = escape(QUOTES)  # markupsafe: &lt;script&gt;q&#39;&#34;&amp;&lt;/script&gt;
    ex = Explorer(cap)
    ex.select("wrap_body_0.wrap_body_0", frame="0/0")
    ex.select_node("score")  # a body input the HOP supplies: its `supplied` text reaches the inspector
    pages = {"report": viz.capture_html(cap), "export": expand(viz.export_html(cap, tmp_path / "r.html").read_text())}
    view = ex.partition_view()
    view.canvases["left"].selected = f"primals_2{QUOTES}"
    pages.update({f"widget{i}": v for i, v in enumerate(_html_values(ex.widget))})
    for name, html in pages.items():
        assert QUOTES not in html and "q'\"&" not in html, name
        assert "<script" not in _without_own_scripts(html).lower(), name
    report = pages["report"]
    # each user string of the new fields is shown, escaped, in the report
    for text in (f"Unsupported: print() {shown}", f"no tensor ops {shown}", f"user.py:12 in torch_dynamo_resume_in_f_at_9 {shown}",
                 f"frame 2/0 was compiled before the capture started {shown}",
                 f"the source does not record speculations {shown}", f"guards of L[&#39;x&#39;] {shown} not recorded",
                 f"Unsupported: input() {shown}", f"user.py:11 {shown}", f"input() {shown}", f"score {shown}",
                 f"primals_2{shown}"):
        assert text in report, text
    # the inspector: the widget's and the report's get the text as data, and viz/inspector.js sets it as text
    assert ex._inspector.info["supplied"] == f"by wrap: score {QUOTES}"
    facts = [json.loads(b) for b in re.findall(r'class="ds-node-info">([^<]*)</script>', pages["export"])]
    supplied = {unintern(i, f["values"]).get("supplied") for f in facts for g in f["graphs"] for i in g.values()}
    assert f"by wrap: score {QUOTES}" in supplied
    fw = cap.frames[1].aot.forward
    dot = viz.to_dot(fw)
    assert QUOTES not in dot and '"primals_2<script>q\'\\"&</script>"' in dot  # a quoted DOT id, quote escaped
    svg = viz.to_svg(viz.layout(fw, engine="linear"))
    assert not [e for e in ET.fromstring(svg).iter() if e.tag.endswith("script")]
    assert f"primals_2{QUOTES}" in svg_texts(svg)
