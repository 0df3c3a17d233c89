"""The explorer widget without a browser, on a synthetic capture: selection, inspector, traits,
mimebundle, escaping, JSON parity (real captures: test_viz_explorer_real.py)."""

from __future__ import annotations

import json

import ipywidgets as W
import pytest
from explorer_capture import _state, _widgets, make_capture
from viz_fixtures import EVIL

import viz
from tracer.model import Capture, Frame
from viz.canvas import drawing
from viz.explorer import Explorer, collapsed_groups
from viz.mimebundle import WIDGET_MIME, mimebundle
from viz.synthetic import chain_graph


@pytest.fixture
def cap() -> Capture:
    return make_capture()


def test_explorer_builds_and_shows_root(cap):
    ex = Explorer(cap)
    assert ex.frame.compile_id == "0/0" and ex.graph_name == "" and ex.node == ""
    assert ex.inspector == {}
    assert {"wrap", "l_x_"} <= set(ex.canvas.box_ids())
    # the subgraph tree nests bodies as Dynamo built them, labelled with the HOP and the lifted count
    labels = [label for label, _ in ex._tree.options]
    values = [v for _, v in ex._tree.options]
    assert values == ["", "wrap_body_0", "wrap_body_0.wrap_body_0"]
    assert "[wrap]" in labels[1] and "1 lifted" in labels[1]
    assert labels[2].startswith("\u2003\u2003")  # depth 2 is indented twice
    # failed speculation is listed with its reason
    assert "FAILED cond/true_fn" in ex._speculations.value
    assert "graph break in body: print()" in ex._speculations.value
    assert "ok wrap/wrap -&gt; wrap_body_0 (lifted: y)" in ex._speculations.value


def test_select_subgraph_and_node(cap):
    ex = Explorer(cap)
    ex.select("wrap_body_0.wrap_body_0")
    assert ex.graph_name == "wrap_body_0.wrap_body_0"
    assert "sin" in ex.canvas.box_ids() and "cos" not in ex.canvas.box_ids()
    assert "lifted_freevar" in ex._lifted.value and "source in wrap_body_0" in ex._lifted.value
    ex.select_node("add")
    info = ex.inspector
    assert info["name"] == "add" and info["op"] == "call_function"
    assert set(info["users"]) == {"output"}
    assert ex.canvas.selected == "add"
    assert ex._inspector.info == info  # the panel draws node_info's dict (viz/inspector.js)
    ex.select_node("y")  # a lifted input: the inspector says where it came from
    assert "y" == ex.inspector["name"]
    with pytest.raises(KeyError, match="wrap_body_0"):
        ex.select("nope")
    with pytest.raises(KeyError, match="sin"):
        ex.select_node("nope")
    ex.select("", frame="1/0")
    assert ex.frame.compile_id == "1/0" and ex._frame_choice.value == "1/0"
    with pytest.raises(KeyError, match="0/0"):
        ex.select("", frame="9/9")


def test_canvas_click_on_hop_opens_body(cap):
    ex = Explorer(cap)
    before = ex.canvas.drawing
    ex.canvas.selected = "wrap"  # what the browser does on a click (Note [Canvas clicks])
    assert ex.graph_name == "wrap_body_0"
    assert ex.inspector["name"] == "wrap"
    assert ex.canvas.drawing != before and ex.canvas.selected == ""
    assert ex._tree.value == "wrap_body_0"
    ex.canvas.selected = "a"  # an ordinary click only selects
    assert ex.graph_name == "wrap_body_0" and ex.inspector["name"] == "a"
    ex._go_up()
    assert ex.graph_name == "" and ex.node == "wrap"
    ex._tree.value = "wrap_body_0.wrap_body_0"  # the tree selects bodies too
    assert ex.graph_name == "wrap_body_0.wrap_body_0"


def test_programmatic_select_node_does_not_open_body(cap):
    ex = Explorer(cap)
    ex.select_node("wrap")
    assert ex.graph_name == "" and ex.inspector["name"] == "wrap"


def test_traits_are_json_friendly(cap):
    ex = Explorer(cap)
    ex.select_node("wrap")
    state = ex.canvas.get_state()
    for key in ("drawing", "graph", "selected", "expanded", "height", "role_css"):
        json.dumps(state[key])
    assert isinstance(state["drawing"], dict) and isinstance(state["expanded"], list)
    assert state["drawing"] == drawing(ex._layouts.get(ex.graph, ex.expanded)) and "wrap" in ex.canvas.box_ids()
    # the ESM and CSS come from the files beside canvas.py
    assert "export default" in ex.canvas._esm and ".ds-canvas" in ex.canvas._css


def test_guards_grouped_and_filtered(cap):
    ex = Explorer(cap)
    html = ex._guards.value
    # grouped by guarded variable, locals first, the global-state guards last; folded; every kind counted
    assert html.index("<summary>L[&#39;x&#39;]: 1 guard(s)") < html.index("<summary>global: 1 guard(s)")
    assert " open>" not in html and '<span class="ds-chip">BACKEND_MATCH 1</span>' in html
    assert "3 of 3 guard(s)" in html
    ex._guard_filter.value = "backend"
    shown = ex._guards.value
    assert "1 of 3 guard(s)" in shown and "<summary>global: 1 guard(s)" in shown and " open>" in shown
    assert "<td>TENSOR_MATCH</td>" not in shown


def test_overview(cap):
    ex = Explorer(cap)
    html = ex._overview.value
    for fact in ("0/0", "user.py:5 in f", "1/0", "user.py:9", "print()", "L[&#39;x&#39;].size()[0] == 3"):
        assert fact in html
    assert "3 frame(s)" in html and "2 HOP subgraph(s)" in html and "1 graph break(s)" in html


def test_partition_tab(cap):
    ex = Explorer(cap)
    assert "Partition" in [ex._tabs.get_title(i) for i in range(len(ex._tabs.children))]
    ex.select("", frame="1/0")
    view = ex.partition_view()
    assert view.sides() == {"left": "forward", "right": "backward"}
    assert "sin" in view.canvases["left"].box_ids() and "tangents_1" in view.canvases["right"].box_ids()
    # the one saved value, its origin not recorded, in its section with its size in bytes
    assert "Saved for backward: 1 value(s), 12 B" in view.tables.value
    assert ('<tr class="ds-saved"><td>primals_1</td><td>unknown</td><td>tensor</td><td>f32[3]</td><td>12 B</td><td>'
            in view.tables.value)
    assert "1 saved value(s) marked" in view._titles["left"].value
    assert "1 saved value(s) marked" in view._titles["right"].value
    view.canvases["right"].selected = "primals_1"
    assert view.info["name"] == "primals_1" and view.info["saved_for_backward"] == "12 B, unknown"
    assert view.inspector.info == view.info
    ex.select("", frame="0/0")
    assert "did not run" in view.tables.value


def test_code_view_highlights_selected_line(cap):
    ex = Explorer(cap)
    ex.select_node("y")
    assert "cos" in ex._code.value and "background-color" in ex._code.value


def test_str_and_repr(cap):
    ex = Explorer(cap)
    ex.select("wrap_body_0")
    ex.select_node("a")
    assert repr(ex) == "Explorer(f: frame 0/0, graph 'wrap_body_0', node 'a')"
    text = str(ex)
    assert text.startswith(str(cap)) and text.endswith("showing frame 0/0, graph 'wrap_body_0' (6 nodes), node 'a'")
    bundle = ex._repr_mimebundle_()
    assert bundle["text/plain"] == text and WIDGET_MIME in bundle


def test_mimebundle(cap):
    bundle = mimebundle(cap)
    assert bundle["text/plain"] == str(cap) == mimebundle(cap)["text/plain"]
    assert bundle[WIDGET_MIME]["model_id"]
    assert "<svg" in bundle["text/html"]
    assert mimebundle(cap)["text/html"] == bundle["text/html"]  # deterministic
    only_text = mimebundle(cap, include={"text/plain"})
    assert set(only_text) == {"text/plain"}
    assert WIDGET_MIME not in mimebundle(cap, exclude={WIDGET_MIME})
    assert set(cap._repr_mimebundle_()) == {"text/plain", "text/html", WIDGET_MIME}


def test_json_capture_gives_identical_widget_state(cap):
    loaded = Capture.from_json(cap.to_json())
    a, b = Explorer(cap), Explorer(loaded)
    for ex in (a, b):
        ex.select("wrap_body_0")
        ex.select_node("y")
    assert _state(a) == _state(b)
    assert a.inspector == b.inspector


def test_every_user_string_is_escaped():
    cap = make_capture(hostile=EVIL)
    ex = Explorer(cap)
    ex.select_node(EVIL)
    ex.partition_view()
    html_values = [w.value for w in _widgets(ex.widget) if isinstance(w, W.HTML)]
    html_values += [mimebundle(cap)["text/html"]]
    assert EVIL in ex.canvas.box_ids()  # the canvas gets data; canvas.js sets it as textContent
    html_values += [w.value for w in _widgets(ex.partition_view().widget) if isinstance(w, W.HTML)]
    blob = "\n".join(html_values)
    assert "alert(1)" in blob  # the hostile text is shown ...
    assert EVIL not in blob  # ... but never as markup
    assert ex._inspector.info["name"] == EVIL  # data: inspector.js sets it as text (tests/test_browser.py)
    assert "&lt;script&gt;" in ex._guards.value and "&lt;script&gt;" in ex._overview.value


def test_large_graph_opens_grouped_and_expands():

    g = chain_graph(16000)
    cap = Capture(frames=[Frame("0/0", "big.py:1 in forward", graph=g)], fn="Big")
    ex = Explorer(cap)
    lay = ex._layouts.get(g)
    assert lay.grouped and len(lay.boxes) < 400
    groups = collapsed_groups(lay)
    assert groups and len(ex.canvas.group_paths()) >= len(groups)
    ex.expand(groups[0])
    assert groups[0] in ex.expanded and ex.canvas.expanded == [groups[0]]
    opened = ex._layouts.get(g, ex.expanded)
    assert len(opened.boxes) > len(lay.boxes)
    with pytest.raises(KeyError, match="choices"):
        ex.expand("no.such.module")
    ex.canvas.expanded = []  # the canvas's "collapse" button
    assert ex.expanded == frozenset()


def test_show_displays_the_explorer(cap, monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    viz.show(cap)
    assert isinstance(shown[0], Explorer)


def test_empty_capture():
    ex = Explorer(Capture(fn="nothing"))
    assert ex.graph is None and ex.canvas.drawing == {}
    with pytest.raises(KeyError, match="no frames"):
        ex.select("")


def test_inspector_reads_the_lifted_chain(cap):
    ex = Explorer(cap)
    ex.select("wrap_body_0.wrap_body_0")
    ex.select_node("y")
    chain = ex.inspector["lifted_chain"]
    assert [(c["graph"], c["node"]) for c in chain] == [("wrap_body_0.wrap_body_0", "y"), ("wrap_body_0", "y"), ("", "y")]
    assert ex._inspector.info["lifted_chain"] == chain  # how it reads: tests/test_browser_code.py


def test_a_code_line_click_selects_its_node_and_opens_the_boxes_folding_it():
    """Note [Code lines link to nodes] in viz/view.js, Python's half: the Code side tab names the drawing
    its lines link to, and the browser's ``selected`` for a node folded in a module box opens the boxes."""
    g = chain_graph(2000, layers=8)
    cap = Capture(frames=[Frame("0/0", "big.py:1 in forward", graph=g)], fn="Big")
    ex = Explorer(cap)
    drawn = set(ex.canvas.box_ids())
    name = next(n.name for n in reversed(g.nodes) if n.op == "call_function" and n.name not in drawn)
    assert f'class="ds-graph-code" data-graph="{ex.canvas.graph}"' in ex._code.value and ex.canvas.graph == "0/0:"
    assert "ds-explorer" in ex.widget._dom_classes
    ex.canvas.selected = name  # what canvas.js sets for a click on the line defining it
    assert ex.node == name and name in ex.canvas.box_ids()
    assert ex.canvas.expanded == sorted(ex.expanded) and len(ex.expanded) > len(ex._layouts.first(g))
