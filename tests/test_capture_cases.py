"""Facts read from real Dynamo graphs for each example case (tests/cases.py).

Each expectation follows from how Dynamo traces the case (torch/_dynamo/variables/higher_order_ops.py
speculate_subgraph, torch/_dynamo/output_graph.py SubgraphTracer), not from output.
"""

from __future__ import annotations

import pytest
from cases import CASES

import tracer


def kinds(sg):
    return {i.name: i.kind for i in sg.inputs}


@pytest.mark.parametrize("name", sorted(CASES))
def test_valid_and_json_round_trip(captured, name):
    cap = captured(name)
    tracer.validate(cap)
    again = tracer.Capture.from_json(cap.to_json())
    assert again == cap
    assert again.to_json() == cap.to_json()
    assert cap.frames and cap.frames[0].compile_id == "0/0"
    assert str(cap) == str(again)  # print(cap) is a pure function of the data


def test_plain_frame(captured):
    cap = captured("plain")
    (f,) = cap.frames
    assert f.code.startswith("cases.py:") and f.code.endswith(" in f")
    assert [n.op for n in f.graph.nodes] == ["placeholder", "call_function", "call_function", "output"]
    sin = f.graph.find(target="sin")[0]
    assert sin.target == "torch.sin" and sin.inputs == ["l_x_"]
    assert sin.meta["shape"] == [3] and sin.meta["dtype"] == "float32"
    assert sin.meta["source"]["code"] == "return torch.sin(x) + 1"
    assert f.graph.node("l_x_").role == "operand"
    assert f.graph.node("l_x_").meta["graph_arg_source"] == "L['x']"
    assert "class GraphModule" in f.graph.code
    assert cap.graph_breaks == [] and cap.recompiles == []
    assert cap.result is not None and tuple(cap.result.shape) == (3,)


def test_closure_over_tracked_tensor(captured):
    f = captured("closure_tracked").frames[0]
    (sg,) = f.subgraphs.values()
    assert sg.hop == "wrap" and sg.parent == "" and sg.call_node == "wrap"
    # x is what the user passed to wrap; a = x.cos() is a tracked closure variable.
    assert kinds(sg) == {"l_x_": "operand", "a": "lifted_freevar"}
    assert sg.input("a").source == "a" and f.graph.node("a").target == "cos"
    assert sg.lifted == ["a"]
    hop = f.graph.node(sg.call_node)
    assert hop.role == "hop" and hop.calls == [sg.name]
    assert [n.role for n in sg.graph.placeholders] == ["operand", "lifted_freevar"]
    (spec,) = f.speculations
    assert spec.ok and spec.hop == "wrap" and spec.depth == 1 and spec.subgraph == sg.name
    # Dynamo lifts the operand like a free variable (set_subgraph_inputs="automatic").
    assert spec.lifted == ["l_x_", "a"]


def test_untracked_global_tensor(captured):
    f = captured("untracked_global").frames[0]
    g = f.graph.node("g_global_w_")
    assert g.op == "placeholder" and g.role == "lifted_freevar" and g.meta["graph_arg_source"] == "G['GLOBAL_W']"
    (sg,) = f.subgraphs.values()
    assert kinds(sg) == {"l_x_": "operand", "g_global_w_": "lifted_freevar"}
    assert sg.input("g_global_w_").source == "g_global_w_"


def test_global_number_is_not_lifted(captured):
    f = captured("global_number").frames[0]
    (sg,) = f.subgraphs.values()
    assert [i.name for i in sg.inputs] == ["l_x_"] and sg.lifted == []
    mul = sg.graph.find(op="call_function")[0]
    assert mul.args == ["l_x_", "2.5"]  # SCALE baked in as a constant
    assert [n.name for n in f.graph.placeholders] == ["l_x_"]


def test_nested_wraps_lift_recursively(captured):
    f = captured("nested_wraps").frames[0]
    outer = [s for s in f.subgraphs.values() if s.parent == ""]
    assert len(outer) == 1
    outer = outer[0]
    inner = f.children(outer.name)
    assert len(inner) == 2 and all(s.depth == 2 and s.name.startswith(outer.name + ".") for s in inner)
    assert kinds(outer) == {"l_x_": "operand"}
    by_lifted = {tuple(s.lifted): s for s in inner}
    # b = y.sin() is made in the outer body and lifted into both inner bodies;
    # x reaches inner1 as a closure (lifted through the outer body, where it is an operand).
    assert set(by_lifted) == {("sin", "l_x_"), ("sin",)}
    inner1 = by_lifted[("sin", "l_x_")]
    assert inner1.input("sin").source == "sin" and outer.graph.node("sin").target == "sin"
    assert inner1.input("l_x_").source == "l_x_" and outer.graph.node("l_x_").op == "placeholder"
    assert [s.depth for s in f.speculations] == [1, 2, 2]
    assert all(s.ok for s in f.speculations)
    assert list(f.subgraphs)[0] == outer.name  # parents before children


def test_cond_closures_and_nested_cond(captured):
    f = captured("cond_closures").frames[0]
    top = [s for s in f.subgraphs.values() if s.parent == ""]
    assert sorted(s.hop for s in top) == ["cond", "cond"]
    assert len({s.call_node for s in top}) == 1
    call = f.graph.node(top[0].call_node)
    assert sorted(call.calls) == sorted(s.name for s in top)
    for sg in top:
        # the user passed (x,); z (true branch) and a (false branch) are closures,
        # merged so both branches take the same inputs.
        assert [i.kind for i in sg.inputs] == ["operand", "lifted_freevar", "lifted_freevar"]
        assert [i.source for i in sg.inputs] == ["l_x_", "l_z_", "a"]
    nested = [s for s in f.subgraphs.values() if s.parent]
    assert len(nested) == 2 and {s.parent for s in nested} == {next(s.name for s in top if "false" in s.name)}
    for sg in nested:
        assert sg.hop == "cond" and sg.depth == 2
        assert sg.inputs[0].kind == "operand"
        assert {i.kind for i in sg.inputs[1:]} == {"lifted_freevar"}
        parent = f.subgraphs[sg.parent]
        for i in sg.inputs:
            assert parent.graph.node(i.source).op == "placeholder"
    assert [s.depth for s in f.speculations] == [1, 1, 2, 2]


def test_map(captured):
    f = captured("map").frames[0]
    (sg,) = f.subgraphs.values()
    assert sg.hop == "map_impl"
    # a slice of xs (map_impl makes it from xs), the extra operand y, and the closure c = y.exp()
    assert [i.kind for i in sg.inputs] == ["hop_supplied", "operand", "lifted_freevar"]
    assert sg.inputs[0].supplied == "slice of xs[0]"
    assert [i.source for i in sg.inputs] == ["l_xs_", "l_y_", "c"]
    assert sg.inputs[0].meta["shape"] == [3]  # one row of xs [2, 3]
    assert f.graph.node("l_xs_").meta["shape"] == [2, 3]


def test_module_in_body_lifts_parameters(captured):
    cap = captured("module_in_body")
    assert cap.fn == "_Lin"
    f = cap.frames[0]
    params = [n for n in f.graph.placeholders if n.role == "param"]
    assert sorted(n.meta["graph_arg_source"] for n in params) == [
        "L['self']._modules['lin']._parameters['bias']",
        "L['self']._modules['lin']._parameters['weight']",
    ]
    (sg,) = f.subgraphs.values()
    assert sg.inputs[0].kind == "operand"
    lifted = {i.source for i in sg.inputs if i.kind == "lifted_freevar"}
    assert lifted == {n.name for n in params}
    linear = sg.graph.find(target="linear")[0]
    assert linear.meta["nn_module_stack"][-1][1].endswith("Linear")


def test_checkpoint(captured):
    cap = captured("checkpoint")
    f = cap.frames[0]
    (sg,) = f.subgraphs.values()
    assert sg.hop == "tag_activation_checkpoint"
    assert kinds(sg) == {"l_x_": "operand", "l_w_": "lifted_freevar"}  # w is a closure of the body
    assert f.graph.node("l_w_").role == "operand"  # but a frame argument at the root
    assert cap.meta["backward_ran"] is True


def test_autograd_function(captured):
    f = captured("autograd_function").frames[0]
    hops = {s.name: s for s in f.subgraphs.values()}
    assert {s.hop for s in hops.values()} == {"autograd_function_apply"}
    assert set(hops) == {"fwd_body_0", "bwd_body_0"}
    assert hops["fwd_body_0"].inputs[0].source == "l_x_"
    assert all(i.source == "" for i in hops["bwd_body_0"].inputs)  # gradients, not parent nodes
    assert [i.supplied for i in hops["bwd_body_0"].inputs][0] == "grad of output 0"
    call = f.graph.find(role="hop")[0]
    assert call.calls == ["fwd_body_0", "bwd_body_0"]


def test_nested_compile_region(captured):
    f = captured("nested_compile_region").frames[0]
    (sg,) = f.subgraphs.values()
    assert sg.hop == "invoke_subgraph"
    calls = f.graph.find(role="hop")
    assert len(calls) == 2  # the body is traced once and invoked twice
    assert all(c.calls == [sg.name] for c in calls)
    assert kinds(sg) == {"l_x_": "operand", "l_y_": "operand"}


def test_dynamic_shapes_lift_size_symbol(captured):
    f = captured("dynamic_shapes").frames[0]
    s = [n for n in f.graph.placeholders if n.role == "lifted_symbol"]
    assert len(s) == 1 and s[0].meta["kind"] == "symint"
    sym = s[0].meta["value"]
    assert sym.startswith("s") and s[0].meta["graph_arg_source"] == "L['x'].size()[0]"
    assert f.graph.node("l_x_").meta["shape"] == [sym]
    (sg,) = f.subgraphs.values()
    assert kinds(sg) == {s[0].name: "lifted_symbol", "l_x_": "operand", "a": "lifted_freevar"}
    assert sg.input("a").meta["shape"] == [sym]


def test_unbacked_symbol_lifted_into_body(captured):
    cap = captured("unbacked_symbol")
    f = cap.frames[0]
    item = f.graph.find(target="item")[0]
    assert item.meta["kind"] == "symint" and item.meta["value"].startswith("u")
    (sg,) = f.subgraphs.values()
    assert kinds(sg) == {"l_x_": "operand", item.name: "lifted_symbol"}
    assert sg.input(item.name).source == item.name
    assert cap.graph_breaks == []  # capture_scalar_outputs: .item() stays in the graph


def test_capture_scalar_outputs_is_restored(captured):
    import torch._dynamo.config as config

    captured("unbacked_symbol")
    assert config.capture_scalar_outputs is False


def test_graph_break_in_body(captured):
    # The break inside wrap's body restarts analysis: attempt 0 speculated the body and failed,
    # attempt 1 ("0/0_1") compiles the graph up to the wrap call, and the resume function is 1/0.
    cap = captured("graph_break_in_body")
    assert [(f.compile_id, f.status) for f in cap.frames] == [("0/0", "restarted"), ("0/0_1", "compiled"), ("1/0", "compiled")]
    first, partial, resume = cap.frames
    (spec,) = first.speculations
    assert not spec.ok and spec.subgraph is None and "graph_break" in spec.reason
    assert first.subgraphs == {} and first.graph.nodes == [] and "graph_break" in first.status_reason
    assert partial.speculations == [] and partial.subgraphs == {} and partial.graph.nodes
    (gb,) = cap.graph_breaks
    assert gb.compile_id == "0/0" and gb.code_line == "torch._dynamo.graph_break()"
    assert gb.location.startswith("cases.py:") and gb.user_stack[-1].endswith(" in body")
    assert "resume_in_f" in resume.code
    assert cap.result is not None


def test_recompile_after_shape_change(captured):
    cap = captured("recompile_on_shape")
    assert [f.compile_id for f in cap.frames] == ["0/0", "0/1"]
    (rc,) = cap.recompiles
    assert rc.compile_id == "0/1"
    assert "size mismatch at index 0" in rc.reason and "expected 3, actual 5" in rc.reason
    assert rc.reason.startswith("0/0: ")  # the failed entry, in capture-local ids
    # automatic dynamic shapes: the recompile marks the size dynamic
    assert any(n.role == "lifted_symbol" for n in cap.frames[1].graph.placeholders)
    assert not any(n.role == "lifted_symbol" for n in cap.frames[0].graph.placeholders)


def test_guards(captured):
    f = captured("untracked_global").frames[0]
    kinds_ = {g.kind for g in f.guards}
    assert {"TENSOR_MATCH", "BACKEND_MATCH", "SHAPE_ENV"} <= kinds_
    tm = {g.source for g in f.guards if g.kind == "TENSOR_MATCH"}
    assert {"L['x']", "G['GLOBAL_W']"} <= tm
    x = next(g for g in f.guards if g.kind == "TENSOR_MATCH" and g.source == "L['x']")
    assert x.user_stack and x.user_stack[-1].startswith("cases.py:")
    (bm,) = [g for g in f.guards if g.kind == "BACKEND_MATCH"]
    assert "backend" in bm.code[0]


def test_print_tree(captured):
    text = str(captured("nested_wraps"))
    lines = text.splitlines()
    assert lines[0].startswith("Capture of nested_wraps.<locals>.f: 1 frame(s)")
    assert any("[wrap]" in ln and "lifted: sin<-sin" in ln for ln in lines)


def test_while_loop(captured):
    f = captured("while_loop").frames[0]
    bodies = {s.name: s for s in f.subgraphs.values()}
    assert {s.hop for s in bodies.values()} == {"while_loop"} and len(bodies) == 2
    for sg in bodies.values():
        # (i, y) carried; n (cond_fn) and c (body_fn) are closures, merged into both bodies
        assert [i.kind for i in sg.inputs] == ["hop_supplied", "hop_supplied", "lifted_freevar", "lifted_freevar"]
        assert [i.supplied for i in sg.inputs[:2]] == ["carry[0]", "carry[1]"]
        assert [i.source for i in sg.inputs][1:] == ["l_x_", "l_n_", "c"]
        assert f.graph.node("c").target == "sum"


def test_scan(captured):
    f = captured("scan").frames[0]
    (sg,) = f.subgraphs.values()
    assert sg.hop == "scan"
    assert [(i.kind, i.source) for i in sg.inputs] == [
        ("hop_supplied", "l_init_"), ("hop_supplied", "l_xs_"), ("lifted_freevar", "w")
    ]
    assert sg.inputs[1].meta["shape"] == [3]  # one slice of xs [4, 3]


def test_dynamic_int_argument_is_an_operand_at_the_root():
    from torch._higher_order_ops.wrap import wrap

    def f(x, n):
        def body(y):
            return y * n

        return wrap(body, x)

    import torch

    cap = tracer.capture(f, torch.randn(3), 4, dynamic=True)
    f0 = cap.frames[0]
    n = f0.graph.node("l_n_")
    assert n.meta["kind"] == "symint" and n.role == "operand"  # the user passed n
    (sg,) = f0.subgraphs.values()
    assert kinds(sg)["l_n_"] == "lifted_symbol"  # but the body closes over it
    tracer.validate(cap)
