"""tracer.export on real torch.export runs: every graph node for node against the program's own
``ep.graph_module``, every HOP body with its inputs, the graph signature against ``ep.graph_signature``,
strict and non-strict on the same module, run_decompositions before/after, JSON and validate."""

from __future__ import annotations

import pytest
import torch

import tracer
from tests.export_models import CondLoop, MoreHops, Region
from tracer._torch.since_2_13 import strict_export_guards_unread
from tracer.hop_feeds import leaves


def _fx_nodes(gm: torch.fx.GraphModule) -> list[tuple[str, str, list[str], list[str]]]:
    return [(n.name, n.op, [a.name for a in n.all_input_nodes], [u.name for u in n.users]) for n in gm.graph.nodes]


def _ours(g: tracer.Graph) -> list[tuple[str, str, list[str], list[str]]]:
    return [(n.name, n.op, n.inputs, n.users) for n in g.nodes]


def _bodies(gm: torch.fx.GraphModule, prefix: str = "") -> dict[str, torch.fx.GraphModule]:
    """Every HOP body of torch's program by qualified name: get_attr of a GraphModule read by a HOP node."""
    out = {}
    for n in gm.graph.nodes:
        if n.op == "call_function" and isinstance(n.target, torch._ops.HigherOrderOperator):
            for a in leaves([n.args, n.kwargs]):
                if isinstance(a, torch.fx.Node) and a.op == "get_attr":
                    sub = gm.get_submodule(a.target)
                    if isinstance(sub, torch.fx.GraphModule):
                        name = f"{prefix}{a.target}"
                        out[name] = sub
                        out.update(_bodies(sub, name + "."))
    return out


def _same_target(ours: str, target) -> bool:
    if isinstance(target, torch._ops.OpOverload):
        return ours == str(target)  # "aten.add_.Tensor"
    if isinstance(target, torch._ops.HigherOrderOperator):
        return ours == target.name()  # "cond"
    return ours.rsplit(".", 1)[-1] == target.__name__  # "operator.getitem"


def _check_against_torch(frame: tracer.Frame, ep: torch.export.ExportedProgram) -> None:
    assert _ours(frame.graph) == _fx_nodes(ep.graph_module)
    for ours, fx in zip(frame.graph.nodes, ep.graph_module.graph.nodes, strict=True):
        val = fx.meta.get("val")
        if isinstance(val, torch.Tensor):
            assert ours.meta["shape"] == list(val.shape) and ours.meta["dtype"] == str(val.dtype)[6:]
        if fx.op == "call_function":
            assert _same_target(ours.target, fx.target), (ours.target, fx.target)
    bodies = _bodies(ep.graph_module)
    assert sorted(frame.subgraphs) == sorted(bodies)
    for name, gm in bodies.items():
        assert _ours(frame.subgraphs[name].graph) == _fx_nodes(gm), name
    sig = ep.graph_signature
    assert [(i.name, i.kind, i.target) for i in frame.export.inputs] == [
        (s.arg.name, s.kind.name.lower(), s.target or "") for s in sig.input_specs]
    assert [(o.name, o.kind, o.target) for o in frame.export.outputs] == [
        (s.arg.name, s.kind.name.lower(), s.target or "") for s in sig.output_specs]
    # module call signatures, entry for entry as ep.module_call_graph holds them
    calls = [(e.fqn, [a.name for a in e.signature.inputs], [a.name for a in e.signature.outputs],
              str(e.signature.in_spec), str(e.signature.out_spec), list(e.signature.forward_arg_names or []))
             if e.signature is not None else (e.fqn, [], [], "", "", []) for e in ep.module_call_graph]
    assert [(m.fqn, m.inputs, m.outputs, m.in_spec, m.out_spec, m.forward_arg_names)
            for m in frame.export.module_calls] == calls


@pytest.mark.parametrize("strict", [False, True])
def test_cond_while_loop_and_buffer_node_for_node(strict):
    torch.manual_seed(0)
    mod, x = CondLoop(), torch.randn(2, 4)
    ep = torch.export.export(mod, (x,), strict=strict)
    cap = tracer.export(mod, (x,), strict=strict)
    tracer.validate(cap)
    # strict on torch 2.11/2.12: the one problem says the Dynamo guards are not read (Note [Strict export's
    # guards before torch 2.13])
    unread = [u] if strict and (u := strict_export_guards_unread()) is not None else []
    assert cap.export.status == "exported" and cap.export.strict is strict and cap.all_problems() == unread
    frame = cap.frames[0]
    assert frame.export.stage == "exported"
    _check_against_torch(frame, ep)
    roles = {i.name: (i.kind, i.target) for i in frame.export.inputs}
    assert roles == {"p_lin_weight": ("parameter", "lin.weight"), "p_lin_bias": ("parameter", "lin.bias"),
                     "b_count": ("buffer", "count"), "c_lifted_tensor_0": ("constant_tensor", "lifted_tensor_0"),
                     "x": ("user_input", "")}
    assert [i.persistent for i in frame.export.inputs if i.kind == "buffer"] == [True]
    assert {n.name: n.role for n in frame.graph.placeholders} == {
        "p_lin_weight": "param", "p_lin_bias": "param", "b_count": "param", "c_lifted_tensor_0": "param", "x": "operand"}
    hops = {sg.name: sg.hop for sg in frame.subgraphs.values()}
    assert hops == {"true_graph_0": "cond", "false_graph_0": "cond", "while_loop_cond_graph_0": "while_loop",
                    "while_loop_body_graph_0": "while_loop"}
    # cond's branches get (*operands): x and the mutated buffer its closure read, from the parent graph
    true = frame.subgraphs["true_graph_0"]
    assert [(i.source, i.supplied, i.kind) for i in true.inputs] == [("x", "", "unknown"), ("add_", "", "unknown")]
    body = frame.subgraphs["while_loop_body_graph_0"]
    assert [i.kind for i in body.inputs] == ["hop_supplied", "hop_supplied"]
    assert all(i.supplied for i in body.inputs)
    # the buffer mutation stays an in-graph add_ in the training IR: no mutation output yet
    assert frame.export.mutated() == {}
    assert frame.graph.node("add_").meta["source"]["code"] == "self.count.add_(1)"
    assert frame.export.module_calls[0].fqn == "" and frame.export.module_calls[0].forward_arg_names == ["x"]


def test_strict_and_non_strict_same_signature():
    mod, x = CondLoop(), torch.randn(2, 4)
    a, b = tracer.export(mod, (x,)), tracer.export(mod, (x,), strict=True)
    assert a.frames[0].export == b.frames[0].export
    assert sorted(a.frames[0].subgraphs) == sorted(b.frames[0].subgraphs)


@pytest.mark.parametrize("strict", [False, True])
def test_scan_map_grad_and_autocast_bodies(strict):
    torch.manual_seed(0)
    mod, x = MoreHops(), torch.randn(3, 4)
    ep = torch.export.export(mod, (x,), strict=strict)
    cap = tracer.export(mod, (x,), strict=strict)
    tracer.validate(cap)
    frame = cap.frames[0]
    _check_against_torch(frame, ep)
    hops = sorted(sg.hop for sg in frame.subgraphs.values())
    assert hops == ["map_impl", "scan", "wrap_with_autocast", "wrap_with_set_grad_enabled"]
    scan_body = next(sg for sg in frame.subgraphs.values() if sg.hop == "scan")
    # scan's combine_fn gets (*carry, *slices of xs): the initial carry and x fed from the parent graph
    assert [(i.kind, i.supplied) for i in scan_body.inputs] == [("hop_supplied", "carry[0]"),
                                                                 ("hop_supplied", "slice of xs[0]")]
    assert scan_body.inputs[1].source == "x"
    map_body = next(sg for sg in frame.subgraphs.values() if sg.hop == "map_impl")
    assert [(i.kind, i.supplied, i.source) for i in map_body.inputs] == [
        ("hop_supplied", "slice of xs[0]", "x"), ("unknown", "", "p_w")]


@pytest.mark.parametrize("strict", [False, True])
def test_invoke_subgraph_body(strict):
    mod, x = Region(), torch.randn(3, 4)
    # keep the one-call region a body: torch 2.13 brought the pass that inlines it (README "Torch releases")
    config = torch._dynamo.config
    keep = ({"inline_single_use_invoke_subgraph": False} if hasattr(config, "inline_single_use_invoke_subgraph")
            else {})
    with config.patch(keep):
        ep = torch.export.export(mod, (x,), strict=strict)
        cap = tracer.export(mod, (x,), strict=strict)
    tracer.validate(cap)
    frame = cap.frames[0]
    _check_against_torch(frame, ep)
    (body,) = frame.subgraphs.values()
    assert body.hop == "invoke_subgraph" and [i.source for i in body.inputs] == ["x", "p_w"]
    assert frame.graph.node(body.call_node).calls == [body.name]


def test_decompose_turns_the_buffer_mutation_into_an_output():
    mod, x = CondLoop(), torch.randn(2, 4)
    cap = tracer.export(mod, (x,), decompose=True)
    tracer.validate(cap)
    before, after = cap.frames
    assert (before.export.stage, after.export.stage) == ("exported", "decomposed")
    _check_against_torch(after, torch.export.export(mod, (x,)).run_decompositions())
    assert before.graph.find(target="aten.add_.Tensor") and not after.graph.find(target="aten.add_.Tensor")
    (mut,) = [o for o in after.export.outputs if o.kind == "buffer_mutation"]
    assert mut.target == "count" and after.export.mutated() == {mut.name: "count"}
    assert after.graph.node(mut.name).target == "aten.add.Tensor"
    d = tracer.diff(before, after)
    root = next(g for g in d.graphs if g.a == "")
    assert "add_" in root.removed and mut.name in root.added
    assert cap.export.decomposition == d  # kept in the record for the views (and its JSON)
    assert tracer.export(mod, (x,)).export.decomposition is None


def test_a_mutated_user_input_in_the_signature_before_and_after_decompositions():
    from tests.export_models import InputMutation

    cap = tracer.export(InputMutation(), (torch.ones(3),), decompose=True)
    tracer.validate(cap)
    ep = torch.export.export(InputMutation(), (torch.ones(3),))
    before, after = cap.frames
    _check_against_torch(before, ep)
    _check_against_torch(after, ep.run_decompositions())
    (mut,) = [o for o in after.export.outputs if o.kind == "user_input_mutation"]
    assert after.export.mutated() == {mut.name: "x"} and after.graph.node(mut.name).target == "aten.mul.Tensor"
    assert [n.target for n in before.graph.nodes if n.op == "call_function"][0] == "aten.mul_.Tensor"
    assert cap.export.decomposition == tracer.diff(before, after)


def test_json_round_trip_and_validate_catches_a_bad_kind():
    cap = tracer.export(CondLoop(), (torch.randn(2, 4),), decompose=True)
    back = tracer.Capture.from_json(cap.to_json())
    assert back == cap and back.frames[1].export.outputs == cap.frames[1].export.outputs
    back.frames[0].export.inputs[0].kind = "weights"
    with pytest.raises(tracer.model.ValidationError, match="export input 'p_lin_weight' kind 'weights'"):
        tracer.validate(back)
    with pytest.raises(ValueError, match=r"frames\[0\]\.export\.inputs\[0\]\.kind"):
        tracer.Capture.from_json(cap.to_json().replace('"kind": "parameter"', '"kind": 3', 1))


def test_record_says_what_an_exported_program_does_not():
    cap = tracer.export(CondLoop(), (torch.randn(2, 4),))
    assert len(cap.limits) == 1 and "lifted free variables" in cap.limits[0]
    assert "frame 0/0" in str(cap) and "true_graph_0  [cond]" in str(cap)
