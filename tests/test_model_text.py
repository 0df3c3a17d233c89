"""The model's text forms (format_meta, Node/Graph str and repr, Capture repr, grouped breaks,
all_problems), pinned exactly: views, print(cap) and notebooks read them, so every character is
behaviour. Hand-built values, each expected string written from the format the docstring states.
"""

from __future__ import annotations

import pytest

from tracer.model import Capture, Frame, Graph, GraphBreak, Node, Recompile, format_meta


@pytest.mark.parametrize("meta,text", [
    ({"kind": "tensor", "dtype": "float32", "shape": ["s0", 3]}, "f32[s0, 3]"),
    ({"kind": "tensor", "dtype": "bfloat16", "shape": []}, "bf16[]"),
    ({"kind": "tensor", "dtype": "int64", "shape": [2]}, "i64[2]"),
    ({"kind": "tensor", "dtype": "float8_e4m3fn", "shape": [1]}, "float8_e4m3fn[1]"),  # no abbreviation: the name
    ({"kind": "tensor", "shape": [1]}, "?[1]"),  # dtype unknown
    ({"kind": "tensor", "dtype": "float32"}, "f32[]"),
    ({"kind": "symint", "value": "u0"}, "Sym(u0)"),
    ({"kind": "symfloat", "value": "s1/2"}, "Sym(s1/2)"),
    ({"kind": "symbool"}, "Sym(?)"),
    ({"kind": "tuple", "items": [{"kind": "tensor", "dtype": "float16", "shape": [2]}, {"kind": "int", "value": "3"}]},
     "(f16[2], 3)"),
    ({"kind": "list", "items": []}, "()"),
    ({"kind": "tuple"}, "()"),
    ({"kind": "int", "value": "7"}, "7"),
    ({"kind": "float"}, "float"),
    ({"kind": "none", "value": "None"}, "None"),
    ({"kind": "bool", "value": "True"}, "True"),
    ({"kind": "opaque"}, "opaque"),
    ({}, ""),
])
def test_format_meta(meta, text):
    assert format_meta(meta) == text


def test_every_dtype_abbreviation():
    pairs = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int64": "i64", "int32": "i32",
             "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "b8", "complex64": "c64", "complex128": "c128"}
    assert {d: format_meta({"kind": "tensor", "dtype": d, "shape": [1]}) for d in pairs} == \
        {d: f"{a}[1]" for d, a in pairs.items()}


def test_node_str_reads_like_fx():
    ph = Node("x", "placeholder", "L_x_", meta={"kind": "tensor", "dtype": "float32", "shape": [3]})
    call = Node("add", "call_function", "operator.add", ["x", "1"], {"alpha": "2"}, ["x"])
    bare = Node("out", "output", "output", ["add"])
    assert repr(ph) == "x"
    assert str(ph) == "%x : f32[3] = placeholder[target=L_x_]"
    assert str(call) == "%add = call_function[target=operator.add](x, 1, alpha=2)"
    assert str(bare) == "%out = output[target=output](add)"


def test_graph_str_and_repr():
    nodes = [Node("x", "placeholder", "x"), Node("out", "output", "output", ["x"], inputs=["x"])]
    assert repr(Graph(nodes)) == "Graph('root', 2 nodes)"
    assert repr(Graph(nodes, name="wrap_body_0")) == "Graph('wrap_body_0', 2 nodes)"
    assert str(Graph(nodes)) == "%x = placeholder[target=x]\n%out = output[target=output](x)"
    assert str(Graph(nodes, code="def forward(self, x): ...")) == "def forward(self, x): ..."


def _cap() -> Capture:
    f0 = Frame("0/0", "f.py:1 in f", problems=["a problem"])
    f1 = Frame("1/0", "f.py:9 in g")
    same = dict(reason="print() is not supported", location="f.py:4", code_line="print(x)")
    breaks = [GraphBreak(compile_id="0/0", **same), GraphBreak("other", "f.py:7", compile_id="0/0"),
              GraphBreak(compile_id="1/0", **same), GraphBreak(compile_id="0/0", **same), GraphBreak(compile_id="", **same)]
    return Capture([f0, f1], breaks, [Recompile("1/0", "r")], fn="f", problems=["capture problem"])


def test_grouped_breaks_fold_same_reason_and_location():
    groups = _cap().grouped_breaks()
    assert [(g.location, g.reason, g.code_line, g.count, g.compile_ids) for g in groups] == [
        ("f.py:4", "print() is not supported", "print(x)", 4, ["0/0", "1/0"]),  # first occurrence first
        ("f.py:7", "other", "", 1, ["0/0"]),
    ]
    assert Capture().grouped_breaks() == []


def test_all_problems_and_repr():
    cap = _cap()
    assert cap.all_problems() == ["capture problem", "frame 0/0: a problem"]
    assert repr(cap) == "Capture(f: 2 frames, 5 graph breaks, 1 recompile, 2 problems)"
    assert repr(Capture()) == "Capture(?: 0 frames, 0 graph breaks, 0 recompiles)"
    cap.limits = ["loaded from a log: no speculations"]  # Note [Limits of the source]: not problems
    assert cap.all_problems() == ["capture problem", "frame 0/0: a problem"]
    assert repr(cap) == "Capture(f: 2 frames, 5 graph breaks, 1 recompile, 2 problems)"
    assert str(cap).splitlines()[-2:] == ["problem: capture problem",
                                          "limits of the source: 1 (what it cannot contain; see cap.limits)"]
    assert "limits" not in str(Capture(fn="f"))
    assert repr(cap.frames[0]) == "Frame(0/0, 'f.py:1 in f', 0 nodes, 0 subgraphs, 0 guards)"
    cap.frames[1].status = "no_graph"
    assert repr(cap.frames[1]) == "Frame(1/0, no_graph, 'f.py:9 in g', 0 nodes, 0 subgraphs, 0 guards)"
    one = Capture(cap.frames[:1], cap.graph_breaks[:1], cap.recompiles, fn="f")  # exactly one of each: singular
    assert repr(one) == "Capture(f: 1 frame, 1 graph break, 1 recompile, 1 problem)"


def test_a_float_shows_its_value():
    assert format_meta({"kind": "float", "value": "0.5"}) == "0.5"


def test_graph_node_lookup_keeps_up_with_the_list():
    a, b = Node("a", "placeholder", "a"), Node("b", "placeholder", "b")
    g = Graph([a, b])
    assert g.node("b") is b and g.node("b") is b and g.node("a") is a  # the second lookup comes from the index
    b2 = Node("b", "placeholder", "b2")
    g.nodes[1] = b2  # replaced in place: same name, same count
    assert g.node("b") is b2
    a.name = "renamed"  # renamed in place
    with pytest.raises(KeyError):
        g.node("a")
    assert g.node("renamed") is a
    g.nodes.pop(0)
    assert g.node("b") is b2


def test_graph_node_error_names_the_choices():
    g = Graph([Node(f"n{i}", "placeholder", f"n{i}") for i in range(25)])
    with pytest.raises(KeyError) as info:
        g.node("zz")
    shown = [f"n{i}" for i in range(20)] + ["..."]
    assert info.value.args[0] == f"no node 'zz' in Graph('root', 25 nodes) (nodes: {shown})"
    with pytest.raises(KeyError) as info:
        Graph([Node("x", "placeholder", "x")]).node("y")
    assert info.value.args[0] == "no node 'y' in Graph('root', 1 node) (nodes: ['x'])"


def test_save_load_json_indent_and_times(tmp_path):
    cap = _cap()
    cap.frames[1].times = {"total": 0.25, "backend": 0.125}
    path = tmp_path / "cap.json"
    cap.save(str(path))
    assert Capture.load(str(path)) == cap
    assert "\n" not in cap.to_json() and cap.to_json(indent=2).startswith('{\n  "schema"')
    rows = cap.times().splitlines()
    assert rows[0].split() == ["frame", "status", "total", "dynamo", "aot_autograd", "backend", "before_restart"]
    assert rows[2].split() == ["1/0", "compiled", "0.250", "?", "?", "0.125", "?"]


def test_str_and_mimebundle_go_through_text_and_the_registry():
    from tracer import display
    from tracer._text import capture_tree

    cap = _cap()
    assert str(cap) == capture_tree(cap)
    seen = []
    real = display._RENDERERS.get(Capture)
    display.register(Capture, lambda obj, include=None, exclude=None: seen.append((obj, include, exclude)) or {"x": 1})
    try:
        assert cap._repr_mimebundle_(include={"a"}, exclude={"b"}) == {"x": 1}
    finally:
        if real is not None:
            display.register(Capture, real)
        else:
            display._RENDERERS.pop(Capture, None)
    assert seen == [(cap, {"a"}, {"b"})]


@pytest.mark.parametrize("count,shown", [(20, 20), (21, 21)])
def test_graph_node_error_shows_up_to_twenty_names(count, shown):
    g = Graph([Node(f"n{i}", "placeholder", f"n{i}") for i in range(count)])
    with pytest.raises(KeyError) as info:
        g.node("zz")
    names = [f"n{i}" for i in range(count)]
    expected = names if count <= 20 else names[:20] + ["..."]
    assert info.value.args[0].endswith(f"(nodes: {expected})") and len(expected) == shown
