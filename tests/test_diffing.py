"""tracer.diff and attach_recompile_diffs on hand-built Frames: each rule, one case each.

Fast (no torch): these are the tests `make mutants` runs against tracer/diffing.py
(tests/test_diff.py checks the same functions on real recompiles).
"""

from __future__ import annotations

import pytest

from tracer.diffing import attach_recompile_diffs, diff
from tracer.model import (
    Aot,
    Capture,
    Frame,
    Graph,
    Guard,
    Node,
    Recompile,
    SavedValue,
    Subgraph,
    SubgraphInput,
)
from tracer.model.diff import AotDiff, BodyChange, GuardChange, InputChange, SavedChange


def ph(name: str, source: str = "", role: str = "operand", **meta) -> Node:
    if source:
        meta["graph_arg_source"] = source
    return Node(name, "placeholder", name, role=role, meta=meta)


def op(name: str, target: str, *inputs: str, **meta) -> Node:
    return Node(name, "call_function", target, args=list(inputs), inputs=list(inputs), meta=meta)


def tensor(*shape, dtype="float32", **more) -> dict:
    return {"kind": "tensor", "dtype": dtype, "shape": list(shape), **more}


def frame(cid: str, *nodes: Node, **kw) -> Frame:
    return Frame(cid, "f.py:1 in f", graph=Graph(list(nodes)), **kw)


# -- status, guards ------------------------------------------------------------------------------
def test_a_frame_diffed_with_itself_is_empty():
    f = frame("0/0", ph("l_x_", "L['x']", **tensor(3)), op("sin", "torch.sin", "l_x_", **tensor(3)),
              guards=[Guard("TENSOR_MATCH", "L['x']", ["check"])])
    d = diff(f, f)
    assert not d and d.summary == "no difference"
    assert (d.a, d.b, d.status, d.guards, d.inputs, d.bodies, d.aot) == ("0/0", "0/0", [], [], [], [], None)
    assert [(g.a, g.b, bool(g)) for g in d.graphs] == [("", "", False)]


def test_status_and_reason():
    d = diff(frame("0/0"), Frame("0/1", "f", status="failed"), reason="L['n'] == 4")
    assert d.status == ["compiled", "failed"] and d.reason == "L['n'] == 4"
    assert diff(frame("0/0"), frame("0/1")).status == []


def test_guards_pair_by_kind_and_source_in_order():
    a = frame("0/0", guards=[Guard("TYPE_MATCH", "L['x']", ["t1"]), Guard("TYPE_MATCH", "L['x']", ["t2"]),
                             Guard("CONSTANT_MATCH", "L['n']", ["n == 1"]), Guard("GRAD_MODE", "", ["g"])])
    b = frame("0/1", guards=[Guard("TYPE_MATCH", "L['x']", ["t1"]), Guard("TYPE_MATCH", "L['x']", ["t3"]),
                             Guard("CONSTANT_MATCH", "L['m']", ["m == 1"]), Guard("GRAD_MODE", "", ["g"])])
    assert diff(a, b).guards == [
        GuardChange("changed", "TYPE_MATCH", "L['x']", ["t2"], ["t3"]),
        GuardChange("added", "CONSTANT_MATCH", "L['m']", [], ["m == 1"]),
        GuardChange("removed", "CONSTANT_MATCH", "L['n']", ["n == 1"], []),
    ]


# -- inputs --------------------------------------------------------------------------------------
def test_inputs_added_and_removed_by_source():
    a = frame("0/0", ph("l_x_", "L['x']", **tensor(3)), ph("l_y_", "L['y']", **tensor(2)))
    b = frame("0/1", ph("l_z_", "L['z']", kind="int", value="3"), ph("l_x_", "L['x']", **tensor(4)))
    assert diff(a, b).inputs == [InputChange("L['z']", "added", "", "3", b="l_z_"),
                                 InputChange("L['x']", "size", "3", "4", dim=0, a="l_x_", b="l_x_"),
                                 InputChange("L['y']", "removed", "f32[2]", "", a="l_y_")]


def test_an_input_without_a_source_is_keyed_by_its_target():
    a = frame("0/0", ph("x", **tensor(3)))
    b = frame("0/1", ph("x", **tensor(4)))
    assert diff(a, b).inputs == [InputChange("x", "size", "3", "4", dim=0, a="x", b="x")]


def test_a_constant_that_became_an_input_and_back():
    n_const = [Guard("CONSTANT_MATCH", "L['n']", ["L['n'] == 4"]), Guard("EQUALS_MATCH", "L['k']", ["L['k'] == 2", "x"])]
    a = frame("0/0", ph("l_x_", "L['x']", **tensor(3)), guards=n_const)
    b = frame("0/1", ph("l_x_", "L['x']", **tensor(3)), ph("l_n_", "L['n']", kind="symint", value="s0"),
              ph("l_k_", "L['k']", kind="int", value="2"))
    assert diff(a, b).inputs == [
        InputChange("L['n']", "constant_to_input", "L['n'] == 4", "Sym(s0)", b="l_n_"),
        InputChange("L['k']", "constant_to_input", "L['k'] == 2; x", "2", b="l_k_"),
    ]
    assert diff(b, a).inputs == [
        InputChange("L['n']", "input_to_constant", "Sym(s0)", "L['n'] == 4", a="l_n_"),
        InputChange("L['k']", "input_to_constant", "2", "L['k'] == 2; x", a="l_k_"),
    ]
    # any other guard kind on the source does not make it a constant
    other = [Guard("TYPE_MATCH", "L['n']", ["type"])]
    a2 = frame("0/0", guards=other)
    b2 = frame("0/1", ph("l_n_", "L['n']", kind="int", value="4"), guards=other)
    assert [i.what for i in diff(a2, b2).inputs] == ["added"] and [i.what for i in diff(b2, a2).inputs] == ["removed"]


def test_size_inputs_are_not_reported_as_inputs():
    # a symbol for a size or stride is reported as the tensor's "dynamic", not as an input of its own
    for node in (ph("s0", "L['x'].size()[0]", role="lifted_symbol", kind="symint", value="s0"),
                 ph("s1", "L['x'].stride()[0]", kind="symint", value="s1"),
                 ph("s2", "L['x'].storage_offset()", kind="symint", value="s2"),
                 ph("s3", "", role="lifted_symbol", kind="symint", value="s3")):
        a, b = frame("0/0"), frame("0/1", node)
        assert diff(a, b).inputs == [] and diff(b, a).inputs == [], node
    b = frame("0/1", ph("s4", "L['n']", kind="symint", value="s4"))
    assert [i.what for i in diff(frame("0/0"), b).inputs] == ["added"]


def test_kind_change_is_one_change():
    a = frame("0/0", ph("l_n_", "L['n']", kind="int", value="3"))
    b = frame("0/1", ph("l_n_", "L['n']", kind="symint", value="s0"))
    assert diff(a, b).inputs == [InputChange("L['n']", "kind", "3", "Sym(s0)", a="l_n_", b="l_n_")]


def test_dtype_requires_grad_and_device_changes():
    a = frame("0/0", ph("l_x_", "L['x']", **tensor(3, requires_grad=False, device="cpu")))
    b = frame("0/1", ph("l_x_", "L['x']", **tensor(3, dtype="float16", requires_grad=True, device="meta")))
    names = {"a": "l_x_", "b": "l_x_"}
    assert diff(a, b).inputs == [InputChange("L['x']", "dtype", "float32", "float16", **names),
                                 InputChange("L['x']", "requires_grad", "False", "True", **names),
                                 InputChange("L['x']", "device", "cpu", "meta", **names)]
    # a key only one side has reads as ""
    c = frame("0/1", ph("l_x_", "L['x']", kind="tensor", shape=[3], requires_grad=False, device="cpu"))
    assert diff(a, c).inputs == [InputChange("L['x']", "dtype", "float32", "", **names)]
    assert diff(c, a).inputs == [InputChange("L['x']", "dtype", "", "float32", **names)]


def test_sizes_dim_by_dim():
    names = {"a": "l_x_", "b": "l_x_"}
    a = frame("0/0", ph("l_x_", "L['x']", **tensor(2, "s0", 4, 5)))
    b = frame("0/1", ph("l_x_", "L['x']", **tensor("s1", "s2", 4, 6)))
    assert diff(a, b).inputs == [InputChange("L['x']", "dynamic", "2", "s1", dim=0, **names),
                                 InputChange("L['x']", "size", "5", "6", dim=3, **names)]
    assert diff(b, a).inputs == [InputChange("L['x']", "static", "s1", "2", dim=0, **names),
                                 InputChange("L['x']", "size", "6", "5", dim=3, **names)]
    c = frame("0/1", ph("l_x_", "L['x']", **tensor(2, 3)))
    assert diff(a, c).inputs == [InputChange("L['x']", "size", "f32[2, s0, 4, 5]", "f32[2, 3]", **names)]
    # no shape on one side: rank 0 against rank 1
    d = frame("0/1", ph("l_x_", "L['x']", kind="tensor", dtype="float32"))
    assert diff(d, c).inputs == [InputChange("L['x']", "size", "f32[]", "f32[2, 3]", **names)]


@pytest.mark.parametrize("kind", ["int", "float", "bool"])
def test_value_of_a_constant_input(kind):
    a = frame("0/0", ph("l_n_", "L['n']", kind=kind, value="1"))
    b = frame("0/1", ph("l_n_", "L['n']", kind=kind, value="2"))
    assert diff(a, b).inputs == [InputChange("L['n']", "value", "1", "2", a="l_n_", b="l_n_")]
    assert diff(a, a).inputs == []


def test_value_of_a_symbol_input_is_no_input_change():
    a = frame("0/0", ph("l_n_", "L['n']", kind="symint", value="s0"))
    b = frame("0/1", ph("l_n_", "L['n']", kind="symint", value="s1"))
    d = diff(a, b)
    assert d.inputs == [] and (d.symbols_added, d.symbols_removed) == (["s1"], ["s0"])


# -- symbols -------------------------------------------------------------------------------------
def test_symbols_from_symbol_placeholders_and_symbolic_sizes_of_every_graph():
    body = Graph([ph("a", **tensor("u3", 2))])
    a = frame("0/0", ph("x", **tensor(4)))
    b = frame("0/1", ph("n", kind="symint", value="s0"), ph("f", kind="symfloat", value="2*s5 + zuf1"),
              ph("c", kind="symbool", value="Eq(s6, 1)"), op("y", "torch.sin", "x", **tensor("s1 + s2", "s0", 7)),
              op("k", "torch.sym_size", "x", kind="symint", value="s9"),
              subgraphs={"wrap_body_0": Subgraph("wrap_body_0", "wrap", "", "", graph=body)})
    d = diff(a, b)
    # s9 is the value of a call, not of a placeholder: it is no free symbol of the frame
    assert d.symbols_added == ["s0", "s1", "s2", "s5", "s6", "u3", "zuf1"] and d.symbols_removed == []
    assert diff(b, a).symbols_removed == d.symbols_added


# -- HOP bodies ----------------------------------------------------------------------------------
def body(name: str, *nodes: Node, hop: str = "wrap", parent: str = "", call: str = "wrap", inputs=("operand",)):
    return Subgraph(name, hop, parent, call, graph=Graph(list(nodes) or [ph("x")]),
                    inputs=[SubgraphInput(f"i{k}", kind, "x") for k, kind in enumerate(inputs)])


def with_bodies(cid: str, root: list[Node], *bodies: Subgraph) -> Frame:
    return Frame(cid, "f", graph=Graph(root), subgraphs={s.name: s for s in bodies})


def hop(name: str, target: str, *inputs: str) -> Node:
    return Node(name, "call_function", target, args=list(inputs), inputs=list(inputs), role="hop")


def test_bodies_pair_through_their_aligned_call_nodes():
    # b's body has another name (wrap_body_1) and its call node too (w): they pair through the root alignment
    a = with_bodies("0/0", [ph("x"), op("sin", "torch.sin", "x"), hop("wrap", "wrap", "sin")], body("wrap_body_0"))
    b = with_bodies("0/1", [ph("x"), op("s", "torch.sin", "x"), hop("w", "wrap", "s")], body("wrap_body_1", call="w"))
    d = diff(a, b)
    assert d.bodies == [] and not d
    assert [(g.a, g.b) for g in d.graphs] == [("", ""), ("wrap_body_0", "wrap_body_1")]


def test_a_changed_body_says_how():
    a = with_bodies("0/0", [ph("x"), hop("wrap", "wrap", "x")],
                    body("wrap_body_0", ph("x"), op("sin", "torch.sin", "x"), inputs=("operand", "lifted_freevar")))
    b = with_bodies("0/0", [ph("x"), hop("wrap", "wrap", "x")],
                    body("wrap_body_0", ph("x"), op("cos", "torch.cos", "x")))
    d = diff(a, b)
    assert d.bodies == [BodyChange("changed", "wrap_body_0", "wrap_body_0", "wrap",
                                   ["0 changed, 1 added, 1 removed nodes", "inputs operand,lifted_freevar → operand"])]
    assert diff(b, a).bodies[0].changes[-1] == "inputs operand → operand,lifted_freevar"
    assert d.graph("wrap_body_0").added == ["cos"]
    # only the inputs differ
    c = with_bodies("0/0", [ph("x"), hop("wrap", "wrap", "x")], body("wrap_body_0", ph("x"), op("sin", "torch.sin", "x")))
    assert diff(a, c).bodies == [BodyChange("changed", "wrap_body_0", "wrap_body_0", "wrap",
                                            ["inputs operand,lifted_freevar → operand"])]


def test_bodies_of_one_call_node_pair_in_order():
    root = [ph("x"), hop("cond", "cond", "x")]
    a = with_bodies("0/0", root, body("cond_true_0", hop="cond", call="cond"),
                    body("cond_false_0", ph("x"), op("neg", "torch.neg", "x"), hop="cond", call="cond"))
    b = with_bodies("0/1", root, body("t", hop="cond", call="cond"),
                    body("f", ph("x"), op("neg", "torch.neg", "x"), hop="cond", call="cond"),
                    body("g", hop="cond", call="cond"))
    d = diff(a, b)
    assert [(g.a, g.b) for g in d.graphs[1:]] == [("cond_true_0", "t"), ("cond_false_0", "f")]
    assert d.bodies == [BodyChange("added", "", "g", "cond")]  # no third body of that call in a


def test_a_body_of_another_hop_is_not_its_partner():
    root = [ph("x"), hop("wrap", "wrap", "x")]
    a = with_bodies("0/0", root, body("wrap_body_0", hop="wrap"))
    b = with_bodies("0/1", root, body("wrap_body_0", hop="checkpoint"))
    assert diff(a, b).bodies == [BodyChange("added", "", "wrap_body_0", "checkpoint"),
                                 BodyChange("removed", "wrap_body_0", "", "wrap")]
    # an added body does not end the pairing of those after it
    b = with_bodies("0/1", root, body("other", hop="checkpoint"), body("wrap_body_0", hop="wrap"))
    d = diff(a, b)
    assert d.bodies == [BodyChange("added", "", "other", "checkpoint")]
    assert [(g.a, g.b) for g in d.graphs[1:]] == [("wrap_body_0", "wrap_body_0")]


def test_three_bodies_of_one_call_node_pair_in_order():
    # a HOP with three bodies (flex attention's backward has fw, joint and mask graphs)
    graphs = [[ph("x"), op("sin", "torch.sin", "x")], [ph("x"), op("cos", "torch.cos", "x")],
              [ph("x"), op("tan", "torch.tan", "x")]]
    root = [ph("x"), ph("y"), hop("w", "wrap", "y"), hop("f", "flex", "x")]
    a = with_bodies("0/0", root, body("w_0", call="w"),
                    *[body(f"a{k}", *g, hop="flex", call="f") for k, g in enumerate(graphs)])
    b = with_bodies("0/1", root, body("w_0", call="w"),
                    *[body(f"b{k}", *g, hop="flex", call="f") for k, g in enumerate(graphs)])
    d = diff(a, b)
    assert [(g.a, g.b) for g in d.graphs[1:]] == [("w_0", "w_0"), ("a0", "b0"), ("a1", "b1"), ("a2", "b2")]
    assert d.bodies == [] and not d


def test_the_bodies_of_an_added_body_are_added():
    a = with_bodies("0/0", [ph("x")])
    b = with_bodies("0/1", [ph("x"), hop("wrap", "wrap", "x")], body("wrap_body_0", ph("x"), hop("i", "wrap", "x")),
                    body("wrap_body_0.wrap_body_0", parent="wrap_body_0", call="i"))
    assert diff(a, b).bodies == [BodyChange("added", "", "wrap_body_0", "wrap"),
                                 BodyChange("added", "", "wrap_body_0.wrap_body_0", "wrap")]


def test_bodies_pair_by_name_when_their_call_nodes_do_not_align():
    # the call nodes' targets differ, so the root alignment does not pair them: the body's name does
    a = with_bodies("0/0", [ph("x"), hop("wrap", "wrap", "x")], body("wrap_body_0"))
    b = with_bodies("0/1", [ph("x"), hop("wrap", "wrap_v2", "x")], body("wrap_body_0"))
    d = diff(a, b)
    assert d.bodies == [] and [(g.a, g.b) for g in d.graphs[1:]] == [("wrap_body_0", "wrap_body_0")]
    # ... and a name already paired is not paired twice
    b2 = with_bodies("0/1", [ph("x"), hop("wrap", "wrap", "x"), hop("w2", "wrap_v2", "x")],
                     body("wrap_body_9"), body("wrap_body_0", call="w2"))
    d = diff(a, b2)
    assert [(g.a, g.b) for g in d.graphs[1:]] == [("wrap_body_0", "wrap_body_9")]
    assert d.bodies == [BodyChange("added", "", "wrap_body_0", "wrap")]


def test_nested_bodies_pair_through_their_parents():
    a = with_bodies("0/0", [ph("x"), hop("wrap", "wrap", "x")],
                    body("wrap_body_0", ph("x"), hop("inner", "wrap", "x")),
                    body("wrap_body_0.wrap_body_0", parent="wrap_body_0", call="inner"))
    b = with_bodies("0/1", [ph("x"), hop("w", "wrap", "x")],
                    body("outer", ph("x"), hop("i", "wrap", "x"), call="w"),
                    body("outer.inner", parent="outer", call="i"))
    d = diff(a, b)
    assert d.bodies == [] and [(g.a, g.b) for g in d.graphs[1:]] == [("wrap_body_0", "outer"),
                                                                    ("wrap_body_0.wrap_body_0", "outer.inner")]


# -- AOT -----------------------------------------------------------------------------------------
def test_no_aot_on_either_side_is_none():
    assert diff(frame("0/0"), frame("0/1")).aot is None


def test_aot_only_on_one_side():
    x = Aot("training", saved=[SavedValue("sin", "tensor", nbytes=12)])
    d = diff(frame("0/0"), frame("0/1", aot=x))
    assert d.aot == AotDiff("", "training", [SavedChange("added", "", "sin", 0, 12)], 0, 12)
    d = diff(frame("0/0", aot=x), frame("0/1"))
    assert d.aot == AotDiff("training", "", [SavedChange("removed", "sin", "", 12, 0)], 12, 0)
    assert [g.a for g in d.graphs] == [""]


def test_saved_values_pair_through_the_forward_alignment():
    fa = Graph([ph("primals_1", **tensor(3)), op("sin", "torch.sin", "primals_1"), op("cos", "torch.cos", "primals_1"),
                op("exp", "torch.exp", "primals_1")])
    fb = Graph([ph("primals_1", **tensor(3)), op("sin_1", "torch.sin", "primals_1"), op("cos_1", "torch.cos", "primals_1"),
                op("tan", "torch.tan", "primals_1")])
    xa = Aot("training", forward=fa, backward=Graph([ph("sin")]), joint=Graph([ph("x")]),
             saved=[SavedValue("sin", "tensor", nbytes=12), SavedValue("cos", "tensor", nbytes=12),
                    SavedValue("exp", "tensor", nbytes=12)])
    xb = Aot("training", forward=fb, backward=Graph([ph("sin")]),
             saved=[SavedValue("tan", "tensor", nbytes=4), SavedValue("sin_1", "tensor", nbytes=12),
                    SavedValue("cos_1", "tensor", nbytes=24)])
    d = diff(frame("0/0", aot=xa), frame("0/1", aot=xb))
    # joint only in a: not aligned
    assert [(g.a, g.b) for g in d.graphs] == [("", ""), ("aot.forward", "aot.forward"), ("aot.backward", "aot.backward")]
    assert d.aot == AotDiff("training", "training", [SavedChange("added", "", "tan", 0, 4),
                                                     SavedChange("changed", "cos", "cos_1", 12, 24),
                                                     SavedChange("removed", "exp", "", 12, 0)], 36, 40)
    assert d.problems == []


def test_a_saved_value_changed_in_kind_only():
    g = Graph([ph("primals_1", **tensor(3)), op("sin", "torch.sin", "primals_1")])
    xa = Aot("training", forward=g, saved=[SavedValue("sin", "tensor", nbytes=8)])
    xb = Aot("training", forward=g, saved=[SavedValue("sin", "symint", nbytes=8)])
    assert diff(frame("0/0", aot=xa), frame("0/1", aot=xb)).aot.saved == [SavedChange("changed", "sin", "sin", 8, 8)]


def test_a_saved_value_is_matched_once():
    # two saved values of b whose forward partner is the same node of a (a damaged record): the second is "added"
    g = Graph([ph("primals_1", **tensor(3)), op("sin", "torch.sin", "primals_1")])
    xa = Aot("training", forward=g, saved=[SavedValue("sin", "tensor", nbytes=8)])
    xb = Aot("training", forward=g, saved=[SavedValue("sin", "tensor", nbytes=8), SavedValue("sin", "tensor", nbytes=8)])
    assert diff(frame("0/0", aot=xa), frame("0/1", aot=xb)).aot.saved == [SavedChange("added", "", "sin", 0, 8)]


def test_saved_values_are_not_paired_by_name_without_the_forward():
    # no forward graphs: nothing tells which saved value is which
    xa = Aot("training", saved=[SavedValue("sin", "tensor", nbytes=8)])
    xb = Aot("training", saved=[SavedValue("sin", "tensor", nbytes=8)])
    assert diff(frame("0/0", aot=xa), frame("0/1", aot=xb)).aot.saved == [SavedChange("added", "", "sin", 0, 8),
                                                                         SavedChange("removed", "sin", "", 8, 0)]


def test_inference_mode_compares_the_inference_graph_once():
    g = Graph([ph("arg0_1", **tensor(3)), op("sin", "torch.sin", "arg0_1")])
    xa = Aot("inference", forward=g, inference=g)
    d = diff(frame("0/0", aot=xa), frame("0/1", aot=Aot("inference", forward=g, inference=g)))
    assert [g.a for g in d.graphs] == ["", "aot.inference"] and not d
    # without an inference graph the forward is compared; and a mode change compares both
    xa2 = Aot("inference", forward=g)
    assert [g.a for g in diff(frame("0/0", aot=xa2), frame("0/1", aot=Aot("inference", forward=g))).graphs] == \
        ["", "aot.forward"]
    d = diff(frame("0/0", aot=Aot("training", forward=g)), frame("0/1", aot=xa))
    assert [g.a for g in d.graphs] == ["", "aot.forward"] and d.aot.mode_b == "inference"
    d = diff(frame("0/0", aot=xa), frame("0/1", aot=Aot("training", forward=g)))
    assert [g.a for g in d.graphs] == ["", "aot.forward"]


def test_aot_bodies_that_differ_are_a_problem():
    xa = Aot("training", subgraphs={"forward.body": Graph([ph("x")])})
    xb = Aot("training", subgraphs={"forward.body": Graph([ph("y")])})
    assert diff(frame("0/0", aot=xa), frame("0/1", aot=xb)).problems == [
        "the HOP bodies the AOT graphs call (Aot.subgraphs) differ and are not aligned"]
    assert diff(frame("0/0", aot=xa), frame("0/1", aot=xa)).problems == []


# -- recompiles ----------------------------------------------------------------------------------
def test_recompile_diffs_against_the_compile_its_reason_names():
    guards = lambda n: [Guard("CONSTANT_MATCH", "L['n']", [f"L['n'] == {n}"])]  # noqa: E731
    cap = Capture([Frame("0/0", "f", guards=guards(1)), Frame("1/0", "g"), Frame("0/1", "f", guards=guards(2)),
                   Frame("0/2", "f", guards=guards(3))],
                  recompiles=[Recompile("0/1", "0/0: L['n'] == 1"), Recompile("0/2", "0/1: L['n'] == 2  # f.py:3")])
    assert attach_recompile_diffs(cap) is cap and cap.problems == []
    r1, r2 = cap.recompiles
    assert (r1.replaced, r1.diff.a, r1.diff.b, r1.diff.reason) == ("0/0", "0/0", "0/1", "L['n'] == 1")
    assert (r2.replaced, r2.diff.a, r2.diff.b, r2.diff.reason) == ("0/1", "0/1", "0/2", "L['n'] == 2  # f.py:3")
    assert r1.diff.guards == [GuardChange("changed", "CONSTANT_MATCH", "L['n']", ["L['n'] == 1"], ["L['n'] == 2"])]


def test_recompile_diff_uses_the_last_attempt_that_compiled():
    # 0/0 restarted (attempt 0/0) and compiled as 0/0_1; 0/1 failed twice: its last attempt stands in
    cap = Capture([Frame("0/0", "f", status="restarted", guards=[Guard("A", "")]),
                   Frame("0/0_1", "f", guards=[Guard("B", "")]), Frame("0/0_2", "f", status="failed", guards=[Guard("C", "")]),
                   Frame("0/1", "f", status="failed", guards=[Guard("D", "")]),
                   Frame("0/1_1", "f", status="failed", guards=[Guard("E", "")]),
                   Frame("0/10", "f", guards=[Guard("F", "")])],
                  recompiles=[Recompile("0/1", "0/0: x")])
    attach_recompile_diffs(cap)
    d = cap.recompiles[0].diff
    assert (d.a, d.b) == ("0/0_1", "0/1_1")
    # a no_graph attempt counts as compiled
    cap = Capture([Frame("0/0", "f"), Frame("0/0_1", "f", status="no_graph"), Frame("0/1", "f")],
                  recompiles=[Recompile("0/1", "0/0: x")])
    assert attach_recompile_diffs(cap).recompiles[0].diff.a == "0/0_1"


def test_recompile_without_an_id_or_frame_is_a_problem():
    cap = Capture([Frame("0/1", "f")], recompiles=[Recompile("0/1", "L['n'] == 1"), Recompile("0/1", "0/0: L['n'] == 1"),
                                                   Recompile("0/2", "0/1: x"), Recompile("0/1", "10/0 L['n']")])
    attach_recompile_diffs(cap)
    assert cap.problems == [
        "recompile 0/1: the reason names no compile id, no diff: \"L['n'] == 1\"",
        "recompile 0/1: compile 0/0 is not a frame of this capture, no diff",
        "recompile 0/2: compile 0/2 is not a frame of this capture, no diff",
        "recompile 0/1: the reason names no compile id, no diff: \"10/0 L['n']\"",
    ]
    assert [r.replaced for r in cap.recompiles] == ["", "0/0", "0/1", ""]
    assert all(r.diff is None for r in cap.recompiles)
    long = Capture([], recompiles=[Recompile("0/1", "y" * 100)])
    assert attach_recompile_diffs(long).problems == [f"recompile 0/1: the reason names no compile id, no diff: '{'y' * 80}'"]


def test_a_failing_diff_is_a_problem_not_an_error():
    bad = Frame("0/1", "f", guards=[None])  # a damaged record: a guard that is no Guard
    cap = Capture([Frame("0/0", "f"), bad], recompiles=[Recompile("0/1", "0/0: x")])
    attach_recompile_diffs(cap)
    assert cap.problems == ["recompile 0/1: diff failed: AttributeError: 'NoneType' object has no attribute 'kind'"]
    assert cap.recompiles[0].diff is None and cap.recompiles[0].replaced == "0/0"

