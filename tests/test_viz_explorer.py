"""The explorer widget without a browser: selection, inspector, traits, mimebundle, escaping, JSON parity."""

from __future__ import annotations

import copy
import json

import ipywidgets as W
import pytest
from viz_fixtures import EVIL, graph, t

import viz
from tracer.model import (
    Aot,
    AotInput,
    AotOutput,
    Capture,
    Frame,
    GraphBreak,
    Guard,
    Recompile,
    SavedValue,
    Speculation,
    Subgraph,
    SubgraphInput,
    validate,
)
from viz.canvas import drawing
from viz.explorer import Explorer, collapsed_groups
from viz.markup import human_bytes
from viz.mimebundle import WIDGET_MIME, mimebundle
from viz.synthetic import chain_graph, joint_like_graph


def make_capture(hostile: str = "") -> Capture:
    """y = x.cos(); wrap(lambda a: wrap(lambda b: b.sin() + y, a), x): a lifted freevar through two bodies."""
    src = {"file": "user.py", "line": 7, "fn": "f", "code": f"    y = x.cos()  # {hostile}"}
    root = graph("", [
        ("l_x_", "placeholder", "L_x_", [], "operand"),
        ("y", "call_method", "cos", ["l_x_"], "op", {"meta": {**t(3), "source": src,
                                                            "nn_module_stack": [["block", "Block"]]}}),
        ("wrap_body_0", "get_attr", "wrap_body_0", [], "param"),
        ("wrap", "call_function", "torch.ops.higher_order.wrap", ["wrap_body_0", "l_x_", "y"], "hop",
         {"calls": ["wrap_body_0"], "meta": {"kind": "tuple", "items": [t(3)]}}),
        ("getitem", "call_function", "operator.getitem", ["wrap"], "op"),
        (hostile or "mul", "call_function", "operator.mul", ["getitem"], "op"),
        ("output", "output", "output", [hostile or "mul"], "output"),
    ])
    outer = graph("wrap_body_0", [
        ("a", "placeholder", "a", [], "operand"),
        ("y", "placeholder", "y", [], "lifted_freevar"),
        ("wrap_body_0", "get_attr", "wrap_body_0", [], "param"),
        ("wrap", "call_function", "torch.ops.higher_order.wrap", ["wrap_body_0", "a", "y"], "hop",
         {"calls": ["wrap_body_0.wrap_body_0"]}),
        ("getitem", "call_function", "operator.getitem", ["wrap"], "op"),
        ("output", "output", "output", ["getitem"], "output"),
    ])
    inner = graph("wrap_body_0.wrap_body_0", [
        ("b", "placeholder", "b", [], "operand"),
        ("y", "placeholder", "y", [], "lifted_freevar"),
        ("sin", "call_method", "sin", ["b"], "op"),
        ("add", "call_function", "operator.add", ["sin", "y"], "op"),
        ("output", "output", "output", ["add"], "output"),
    ])
    f0 = Frame(
        compile_id="0/0", code=f"user.py:5 in f{hostile}", graph=root,
        subgraphs={
            "wrap_body_0": Subgraph("wrap_body_0", "wrap", "", "wrap", outer, [
                SubgraphInput("a", "operand", "l_x_", t(3)), SubgraphInput("y", "lifted_freevar", "y", t(3))]),
            "wrap_body_0.wrap_body_0": Subgraph("wrap_body_0.wrap_body_0", "wrap", "wrap_body_0", "wrap", inner, [
                SubgraphInput("b", "operand", "a", t(3)), SubgraphInput("y", "lifted_freevar", "y", t(3))]),
        },
        speculations=[
            Speculation("wrap", "wrap", 1, True, subgraph="wrap_body_0", lifted=["y"]),
            Speculation("wrap", "wrap", 2, True, subgraph="wrap_body_0.wrap_body_0", lifted=["y"]),
            Speculation("cond", "true_fn", 1, False, reason=f"graph break in body: print() {hostile}"),
        ],
        guards=[
            Guard("TENSOR_MATCH", "L['x']", ["check_tensor(L['x'], Tensor, ...)"]),
            Guard("BACKEND_MATCH", "", ["___check_current_backend(123)"]),
            Guard("TYPE_MATCH", f"G['{hostile or 'g'}']", ["___check_type_id(G['g'], 1)"]),
        ],
    )
    fw = graph("forward", [
        ("primals_1", "placeholder", "primals_1", [], "operand"),
        ("sin", "call_function", "aten.sin.default", ["primals_1"], "op"),
        ("output", "output", "output", ["sin", "primals_1"], "output"),
    ])
    bw = graph("backward", [
        ("primals_1", "placeholder", "primals_1", [], "operand"),
        ("tangents_1", "placeholder", "tangents_1", [], "operand"),
        ("cos", "call_function", "aten.cos.default", ["primals_1"], "op"),
        ("mul", "call_function", "aten.mul.Tensor", ["tangents_1", "cos"], "op"),
        ("output", "output", "output", ["mul"], "output"),
    ])
    aot = Aot("training", forward=fw, backward=bw, saved=[SavedValue("primals_1", "tensor", [3], "float32", 12)],
              inputs=[AotInput("primals_1", requires_grad=True)], outputs=[AotOutput("sin")], backward_ran=True)
    f1 = Frame(compile_id="1/0", code="user.py:12 in g", graph=graph("", [
        ("l_x_", "placeholder", "L_x_", [], "operand"),
        ("sin", "call_method", "sin", ["l_x_"], "op"),
        ("output", "output", "output", ["sin"], "output")]), aot=aot)
    # the recompile of f0 (its guard on L['x'].size()[0] failed); shape-generic, so its graph is f1's
    f2 = Frame(compile_id="0/1", code=f"user.py:5 in f{hostile}", graph=copy.deepcopy(f1.graph))
    cap = Capture(
        frames=[f0, f1, f2], fn=f"f{hostile}",
        graph_breaks=[GraphBreak(f"print() {hostile}", "user.py:9", ["user.py:9 in f"], "0/0", f"print({hostile!r})")],
        recompiles=[Recompile("1/0", f"L['x'].size()[0] == 3 {hostile}")],
    )
    validate(cap)
    return cap


@pytest.fixture
def cap() -> Capture:
    return make_capture()


def _widgets(w: W.Widget):
    yield w
    for child in getattr(w, "children", ()):
        yield from _widgets(child)


def _state(ex: Explorer) -> list:
    """Every widget's synced state, model references replaced by the widget's position in the tree."""
    out = []
    for w in _widgets(ex.widget):
        state = {k: v for k, v in w.get_state().items() if k not in ("layout", "style", "children", "tabbable", "tooltip")}
        out.append((type(w).__name__, json.dumps(state, sort_keys=True, default=str)))
    return out


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
    assert "add" in ex._inspector.value
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
    assert view.info["name"] == "primals_1" and "saved for backward" in view.inspector.value
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
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in ex._inspector.value
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


# -- real captures (tests/cases.py and an AOT training capture) --------------------------------------
from cases import CASES  # noqa: E402


def _walk_everything(ex: Explorer) -> None:
    """Open every frame and graph, inspect every node, click every HOP node like the browser does."""
    for f in ex.capture.frames:
        for name, g in f.graphs().items():
            ex.select(name, frame=f.compile_id)
            assert ex.canvas.box_ids() == [b.id for b in ex._layouts.get(g, ex.expanded).boxes]
            for n in g.nodes:
                ex.select_node(n.name)
                info = ex.inspector
                json.dumps(info)
                assert info["name"] == n.name and info["op"] == n.op
                if n.op == "placeholder" and name:
                    # a body placeholder says where it came from, through every enclosing body
                    inp = f.subgraphs[name].input(n.name)
                    if inp.kind == "hop_supplied":  # made by the HOP (a slice, a carry, a gradient)
                        assert info["supplied"].endswith(inp.supplied) and "lifted_chain" not in info
                        assert info.get("derived_from", {}).get("node", "") == inp.source
                        continue
                    assert info["lifted_from"] == {"graph": f.subgraphs[name].parent, "node": inp.source}
                    assert info["lifted_chain"][0]["graph"] == name
            for hop in g.find(role="hop"):
                ex.select(name, frame=f.compile_id)
                ex.canvas.selected = hop.name
                bodies = [c for c in hop.calls if c in f.subgraphs]
                if bodies:
                    assert ex.graph_name == bodies[0] and ex.inspector["name"] == hop.name


@pytest.mark.parametrize("case", sorted(CASES))
def test_explorer_on_every_capture_case(captured, case):
    cap = captured(case)
    ex = Explorer(cap)
    assert str(ex).startswith(str(cap))
    _walk_everything(ex)
    # the tree lists every body of the frame, labelled with its HOP and lifted count
    for f in cap.frames:
        ex.select("", frame=f.compile_id)
        labels = dict((v, label) for label, v in ex._tree.options)
        for qn, sg in f.subgraphs.items():
            assert f"[{sg.hop}]" in labels[qn] and f"{len(sg.lifted)} lifted" in labels[qn]
    if any(f.aot is not None for f in cap.frames):
        ex.partition_view()
    # the JSON copy of the capture gives the same widget state
    b = Explorer(Capture.from_json(cap.to_json()))
    a = Explorer(cap)
    for e in (a, b):
        if cap.frames and cap.frames[0].subgraphs:
            e.select(next(iter(cap.frames[0].subgraphs)))
    assert _state(a) == _state(b)
    bundle = mimebundle(cap)
    assert bundle["text/plain"] == str(cap) and "<svg" in bundle["text/html"]


def test_explorer_partition_of_a_real_training_capture():
    import torch

    import tracer

    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    cap = tracer.capture(m, torch.randn(3, 4), backward=True)
    (frame,) = [f for f in cap.frames if f.aot is not None]
    a = frame.aot
    assert a.mode == "training" and a.saved
    ex = Explorer(cap)
    ex.select("", frame=frame.compile_id)
    view = ex.partition_view()
    assert view.sides() == {"left": "forward", "right": "backward"}
    saved = [s.name for s in a.saved]
    # every saved value is a node on both sides, and both canvases mark it
    for side, g in (("left", a.forward), ("right", a.backward)):
        names = {n.name for n in g.nodes}
        assert set(saved) <= names
        assert f"{len(saved)} saved value(s) marked" in view._titles[side].value
    assert f"Saved for backward: {len(a.saved)} value(s), {human_bytes(a.saved_bytes)}" in view.tables.value
    assert f"activations {human_bytes(a.activation_bytes)}" in view.tables.value
    view.canvases["right"].selected = saved[0]
    assert view.info["name"] == saved[0] and "saved for backward" in view.inspector.value
    if a.joint is not None:
        view.choice.value = "joint"
        assert view.sides() == {"left": "joint"} and view.canvases["left"].box_ids()
        left, right = view._pair.children  # the joint graph alone uses the whole width
        assert left.layout.width == "100%" and right.layout.display == "none"


def test_partition_opens_for_a_large_joint_graph():

    joint = joint_like_graph(6000)
    aot = Aot("training", joint=joint, forward=chain_graph(3000, name="forward"),
              backward=chain_graph(3000, name="backward"))
    cap = Capture(frames=[Frame("0/0", "big.py:1 in forward", graph=chain_graph(2000), aot=aot)], fn="Big")
    ex = Explorer(cap)
    view = ex.partition_view()
    view.choice.value = "joint"
    lay = ex._layouts.get(joint)
    assert lay.grouped and len(lay.boxes) < 600
    assert len(view.canvases["left"].group_paths()) >= 1
    group = collapsed_groups(lay)[0]
    view.canvases["left"].expanded = [group]  # a click on a module box
    assert len(ex._layouts.get(joint, frozenset([group])).boxes) > len(lay.boxes)


def test_inspector_reads_the_lifted_chain(cap):
    ex = Explorer(cap)
    ex.select("wrap_body_0.wrap_body_0")
    ex.select_node("y")
    chain = ex.inspector["lifted_chain"]
    assert [(c["graph"], c["node"]) for c in chain] == [("wrap_body_0.wrap_body_0", "y"), ("wrap_body_0", "y"), ("", "y")]
    html = ex._inspector.value
    assert "y in wrap_body_0.wrap_body_0 (lifted_freevar)<br>&larr; y in wrap_body_0 (lifted_freevar)" in html
    assert "&larr; y in root (call_method)" in html


@pytest.mark.slow
def test_explorer_on_a_real_12_layer_transformer():
    """Issue 4: the 12-layer transformer's graph opens grouped, a layer expands, nodes inside inspect,
    and the Partition view opens the joint graph."""
    import torch

    import tracer

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 2, 64, dropout=0.0, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
    cap = tracer.capture(model, torch.randn(2, 5, 32), backward=True)
    ex = Explorer(cap)
    g = ex.graph
    lay = ex._layouts.get(g, ex.expanded)
    assert lay.grouped and len(lay.boxes) < 300
    layers = [p for p in collapsed_groups(lay) if p.endswith(".layers.3")]
    assert layers, collapsed_groups(lay)
    ex.canvas.expanded = [*ex.canvas.expanded, layers[0]]  # a click on the layer's box
    assert layers[0] in ex.expanded
    inside = [b.id for b in ex._layouts.get(g, ex.expanded).boxes if not b.group and b.id in {n.name for n in g.nodes}
              and any(layers[0] == p for p, _ in g.node(b.id).meta.get("nn_module_stack", []))]
    assert inside and inside[0] in ex.canvas.box_ids()
    ex.canvas.selected = inside[0]
    assert ex.inspector["nn_module"].startswith(layers[0])
    view = ex.partition_view()
    view.choice.value = "joint"
    joint = ex._layouts.get(cap.frames[0].aot.joint)
    assert joint.grouped and view.canvases["left"].group_paths()
