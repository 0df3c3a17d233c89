"""AOTAutograd stage (tracer/_torch/aot.py): real joint/forward/backward graphs and their metadata.

Every expectation below is reasoned from AOTAutograd's own Notes (torch/_functorch/_aot_autograd/
collect_metadata_analysis.py: Note [AOT Autograd: outputs aliasing inputs or intermediates!];
runtime_wrappers.py: Note [Handling mutations on an input that aliases other inputs]; graph_compile.py
maybe_inline_graph_saved_tensors_hooks) and then
checked against the graphs torch really produced; each capture is also validated and round-
tripped through JSON.
"""

from __future__ import annotations

import pytest
import torch
from cases import CASES
from torch._opaque_base import OpaqueBase

import tracer
from tracer.model import Capture, Frame

pytestmark = pytest.mark.timeout(300)


def _checked(cap: Capture) -> Capture:
    """validate() + lossless JSON round trip + no recording errors, for every capture in this file."""
    tracer.validate(cap)
    assert Capture.from_json(cap.to_json()) == cap
    for f in cap.frames:
        assert "aot_errors" not in f.meta, f.meta["aot_errors"]
        a = f.aot
        if a is not None and a.mode == "training" and a.backward is not None:
            # Note [Which forward outputs are saved]: the saved values are the forward's last
            # outputs, and exactly the backward's inputs other than tangents and tokens (saved
            # symints move to the front there, hence the sort).
            outs = _outputs(a.forward)
            assert [s.name for s in a.saved] == outs[len(outs) - len(a.saved) :]
            bw_in = [
                p.name
                for p in a.backward.placeholders
                if not any(k in p.meta.get("desc", "") for k in _NOT_SAVED)
            ]
            assert sorted(bw_in) == sorted(s.name for s in a.saved)
    return cap


_NOT_SAVED = ("TangentAOTInput", "BackwardTokenAOTInput")


def _capture(fn, *args, **kwargs) -> Capture:
    return _checked(tracer.capture(fn, *args, **kwargs))


def _only_aot(cap: Capture):
    assert len(cap.frames) == 1, cap.frames
    a = cap.frames[0].aot
    assert a is not None
    return a


def _outputs(g):
    """Names a graph returns, in order, repeats kept (``Node.inputs`` de-duplicates; the
    output node's display argument "(a, b, a)" does not)."""
    out = g.output
    if out is None or not out.args:
        return []
    text = out.args[0].strip("()[]")
    return [t.strip() for t in text.split(",") if t.strip()]


def _return_kinds(g):
    returns = g.output.meta["returns"]
    assert [name for name, _ in returns] == _outputs(g)
    return [kind for _, kind in returns]


def _ops(g):
    return [n for n in g.nodes if n.op not in ("placeholder", "output")]


def _tangents(g):
    return [n for n in g.placeholders if n.meta.get("desc", "").startswith("TangentAOTInput")]


# -- Note [AOT Autograd: input data mutations] ---------------------------------------------------


def test_input_data_mutation_copy_back_outside_the_graph():
    def f(x):
        x.mul_(2)
        return x.mul(3)

    x = torch.randn(3, requires_grad=True).clone()  # a non-leaf that requires grad may be mutated
    before = x.detach().clone()
    cap = _capture(f, x)
    a = _only_aot(cap)
    assert a.mode == "training"
    (inp,) = a.inputs
    assert inp.name == cap.frames[0].graph.placeholders[0].name
    assert (inp.mutates_data, inp.mutates_metadata, inp.requires_grad) == (True, False, True)
    # The input requires grad, so the mutation cannot stay in the graph: the forward returns
    # (x_updated, out) and the runtime epilogue copies x_updated back into x.
    assert inp.mutation_in_graph is False
    assert not a.forward.find(target="copy_")
    outs = _outputs(a.forward)
    assert len(outs) == 2 + len(a.saved)
    updated = a.forward.node(outs[0])
    assert updated.target == "aten.mul.Tensor" and updated.args[1] == "2"
    assert _return_kinds(a.forward) == ["mutated_input", "output"] + ["saved"] * len(a.saved)
    # x_updated participates in the backward: one tangent per forward output that needs grad.
    assert len(_tangents(a.backward)) == 2
    assert a.backward_ran
    # ... and the epilogue really ran.
    torch.testing.assert_close(x.detach(), before * 2)
    torch.testing.assert_close(cap.result.detach(), before * 6)


def test_input_data_mutation_stays_in_graph_under_inference():
    def f(x):
        x.mul_(2)
        return x.mul(3)

    x = torch.randn(3)
    before = x.clone()
    a = _only_aot(_capture(f, x))
    assert a.mode == "inference"
    (inp,) = a.inputs
    assert inp.mutates_data and not inp.requires_grad
    # aot_eager keeps inference input mutations: a copy_ into the input placeholder, in-graph.
    assert inp.mutation_in_graph is True
    (copy,) = a.inference.find(target="aten.copy_")
    assert _return_kinds(a.inference) == ["output"]  # no copy-back output: it happened in-graph
    assert copy.args[0] == a.inference.placeholders[0].name
    torch.testing.assert_close(x, before * 2)


def test_buffer_mutation_in_training_stays_in_graph():
    # BatchNorm in training mode updates its running stats in place. Those buffers do not
    # require grad, so even in a training graph aot_eager keeps the copy_ inside the graph.
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm1d(3)
    before = bn.running_mean.clone()
    cap = _capture(bn, torch.randn(4, 3), backward=True)
    a = _only_aot(cap)
    assert a.mode == "training" and a.backward_ran
    by_name = {i.name: i for i in a.inputs}
    params = [i for i in a.inputs if i.is_parameter]
    assert len(params) == 2 and all(i.requires_grad and not i.mutates_data for i in params)
    buffers = [i for i in a.inputs if i.mutates_data]
    assert len(buffers) == 3 and all(i.mutation_in_graph and not i.is_parameter for i in buffers)
    assert all(not i.requires_grad for i in buffers)
    # One copy_ per mutated buffer, writing into that buffer's forward placeholder.
    copies = a.forward.find(target="aten.copy_")
    placeholder_of = {p.meta["from"]["node"]: p.name for p in a.forward.placeholders if "from" in p.meta}
    assert sorted(c.args[0] for c in copies) == sorted(placeholder_of[i.name] for i in buffers)
    assert set(by_name) == {p.name for p in cap.frames[0].graph.placeholders}
    assert not torch.equal(bn.running_mean, before)


# -- Note [AOT Autograd: input metadata mutations] -----------------------------------------------


def test_input_metadata_mutation():
    # ``x.t_()`` on a graph input makes Dynamo graph-break ("Getting an inplace view on a graph
    # input is not supported"), so call the aten op: Dynamo traces it and AOT sees the mutation.
    def f(x):
        torch.ops.aten.t_.default(x)
        return x.mul(3)

    x = torch.randn(2, 3, requires_grad=True).clone()
    cap = _capture(f, x)
    a = _only_aot(cap)
    (inp,) = a.inputs
    assert (inp.mutates_data, inp.mutates_metadata, inp.mutation_in_graph) == (False, True, False)
    # The forward returns the updated input as a view (x.t()), applied to x outside the graph...
    updated = a.forward.node(_outputs(a.forward)[0])
    assert updated.target == "aten.t.default"
    chain = [updated]
    while chain[-1].op != "placeholder":
        (src,) = chain[-1].inputs
        chain.append(a.forward.node(src))
    assert chain[-1] == a.forward.placeholders[0]
    assert all(n.target in ("aten.t.default", "aten.view.default", "aten.alias.default") for n in chain[:-1])
    assert x.shape == (3, 2)
    # ...and that view gets no gradient in the compiled backward: only out's tangent.
    assert len(_tangents(a.backward)) == 1


# -- Note [AOT Autograd: outputs aliasing inputs or intermediates!] ------------------------------


def test_outputs_aliasing_inputs_and_intermediates():
    def f(x):
        out1 = x.t()
        intermediate = x.mul(2)
        out2 = intermediate.view(-1)
        out3 = intermediate[0]
        return out1, out2, out3

    cap = _capture(f, torch.randn(2, 3, requires_grad=True))
    a = _only_aot(cap)
    assert [o.name for o in a.outputs] == ["out1", "out2", "out3"]
    # out1 is a view of input 0; out2 is the first view of the intermediate, so its ._base is
    # appended as an extra forward output (intermediate base 0); out3 reuses that base.
    assert [(o.alias, o.base_index) for o in a.outputs] == [
        ("alias_of_input", 0),
        ("alias_of_intermediate_save_as_output", 0),
        ("alias_of_intermediate", 0),
    ]
    outs = _outputs(a.forward)
    assert len(outs) == 4 + len(a.saved)
    base = a.forward.node(outs[3])
    assert base.target == "aten.mul.Tensor"
    assert _return_kinds(a.forward) == ["output"] * 3 + ["intermediate_base"] + ["saved"] * len(a.saved)
    assert a.forward.node(outs[1]).inputs == [base.name]
    # Aliased outputs are regenerated outside the graph and get no gradient; the base does.
    assert len(_tangents(a.backward)) == 1


def test_single_view_of_intermediate_is_unsafe_view_alias():
    # Note [Intermediate Bases Optimization]: one alias of an intermediate needs no base output.
    def f(x):
        return x.mul(2).view(-1)

    a = _only_aot(_capture(f, torch.randn(2, 3, requires_grad=True)))
    assert [(o.alias, o.base_index) for o in a.outputs] == [("unsafe_view_alias", None)]
    assert len(_outputs(a.forward)) == 1 + len(a.saved)


# -- Note [AOT Autograd: mutations to inputs that alias other inputs] -----------------------------


def test_mutated_input_aliasing_another_input_gets_a_synthetic_base():
    def f(x, x_view):
        x.mul_(2)
        return x * x_view

    base = torch.randn(4, requires_grad=True).clone()
    x, x_view = base, base.view(-1)
    expected = (base.detach() * 2) * (base.detach() * 2)
    cap = _capture(f, x, x_view)
    a = _only_aot(cap)
    assert a.synthetic_bases == [[0, 1]]
    assert [(i.mutates_data, i.mutates_metadata) for i in a.inputs] == [(True, False), (False, False)]
    assert [i.name for i in a.inputs] == [p.name for p in cap.frames[0].graph.placeholders]
    # Both user inputs became one base placeholder in the compiled graphs.
    (primal,) = a.forward.placeholders
    assert "Base" in primal.meta["desc"]
    torch.testing.assert_close(cap.result.detach(), expected)


@pytest.mark.parametrize(
    "split, merged",
    [
        (lambda base: (base[:3], base[1:4]), [[0, 1]]),  # overlapping views: one synthetic base
        (lambda base: (base[:3], base[3:]), []),  # same storage, provably disjoint: no base needed
    ],
    ids=["overlapping", "disjoint"],
)
def test_synthetic_base_only_when_aliased_inputs_may_overlap(split, merged):
    def f(a, b):
        a.add_(1)
        return a + b

    base = torch.zeros(6)
    a_view, b_view = split(base)
    cap = _capture(f, a_view, b_view)
    a = _only_aot(cap)
    assert a.mode == "inference"
    assert a.synthetic_bases == merged
    descs = [p.meta["desc"] for p in a.inference.placeholders]
    if merged:
        assert len(descs) == 1 and "Base" in descs[0]
        assert a.inference.find(target="aten.as_strided_scatter")
    else:
        assert descs == ["PlainAOTInput(idx=0)", "PlainAOTInput(idx=1)"]
    assert [i.mutates_data for i in a.inputs] == [True, False]
    # Either way the mutation reached the caller's storage, and b saw it where they overlap.
    assert torch.equal(base[:3], torch.ones(3))
    expected_out = torch.ones(3) + (torch.tensor([1.0, 1.0, 0.0]) if merged else torch.zeros(3))
    assert torch.equal(cap.result, expected_out)


# -- saved activations ---------------------------------------------------------------------------


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


@pytest.mark.parametrize("partitioner", ["min_cut", "default"])
def test_mlp_saved_activations_are_the_forward_extra_outputs(partitioner):
    m = _mlp()
    x = torch.randn(3, 4)
    cap = _capture(m, x, partitioner=partitioner, backward=True)
    a = _only_aot(cap)
    assert a.partitioner == partitioner and a.mode == "training" and a.backward_ran
    # The forward returns the user output, then exactly the saved values, in order.
    outs = _outputs(a.forward)
    assert len(a.outputs) == 1
    assert [s.name for s in a.saved] == outs[1:]
    # The backward reads exactly those values (then the tangent).
    bw_inputs = [p.name for p in a.backward.placeholders if p not in _tangents(a.backward)]
    assert bw_inputs == [s.name for s in a.saved]
    for s in a.saved:
        node = a.forward.node(s.name)
        assert s.kind == "tensor" and s.dtype == "float32"
        assert s.shape == node.meta["shape"]
        numel = 1
        for d in s.shape:
            numel *= d
        assert s.nbytes == numel * 4
    assert a.saved_bytes == sum(s.nbytes for s in a.saved)
    # The parameters are graph inputs and say so, in the metadata and in the forward graph.
    assert [i.is_parameter for i in a.inputs].count(True) == 4
    assert len(a.forward.find(op="placeholder", role="param")) == 4
    assert all(
        a.backward.node(s.name).role == "param" for s in a.saved if a.forward.node(s.name).role == "param"
    )
    assert [i.requires_grad for i in a.inputs if not i.is_parameter] == [False]
    # relu's output is needed by both ReLU's and the second Linear's backward: saved (or its detach alias).
    saved_targets = {a.forward.node(s.name).target for s in a.saved}
    assert saved_targets & {"aten.relu.default", "aten.detach.default"}
    if partitioner == "min_cut":
        # min-cut saves no transposes: views are free to recompute in the backward.
        assert "aten.t.default" not in saved_targets
        assert a.backward.find(target="aten.t.default")


def test_training_graph_without_backward_run_still_records_the_backward():
    # Only the parameters require grad: a training graph, but capture's default (backward=None)
    # runs .backward() only when an input tensor requires grad, so torch never compiles it.
    cap = _capture(_mlp(), torch.randn(3, 4))
    a = _only_aot(cap)
    assert a.mode == "training" and cap.meta["backward_ran"] is False
    assert a.backward_ran is False
    # The backward the partitioner made (and torch would compile lazily) is still recorded.
    assert a.backward is not None and a.backward.find(target="aten.mm.default")
    assert [p.name for p in a.backward.placeholders if p not in _tangents(a.backward)] == [
        s.name for s in a.saved
    ]


@pytest.mark.parametrize("partitioner", ["min_cut", "default"])
def test_joint_partition_tags_match_the_graphs(partitioner):
    m = _mlp()
    a = _only_aot(_capture(m, torch.randn(3, 4), partitioner=partitioner, backward=True))
    assert a.joint is not None
    fw_ops = {n.name for n in _ops(a.forward)}
    bw_ops = {n.name for n in _ops(a.backward)}
    for n in a.joint.nodes:
        if n.op == "output" or n.meta.get("dead"):
            continue
        part = n.meta["partition"]
        if n.op == "placeholder":
            assert part == ("backward" if n.meta["desc"].startswith("TangentAOTInput") else "forward")
        elif part == "forward":
            assert n.name in fw_ops
            assert n.meta.get("recomputed", False) == (n.name in bw_ops)
        else:
            assert n.name in bw_ops and n.name not in fw_ops
    assert fw_ops <= {n.name for n in a.joint.nodes}


def test_dynamic_shapes_save_a_symint_and_size_at_hint():
    def f(x):
        return x.sin().sum(0)

    x = torch.randn(5, 3, requires_grad=True)
    torch._dynamo.mark_dynamic(x, 0)
    a = _only_aot(_capture(f, x))
    kinds = {s.kind for s in a.saved}
    assert kinds == {"tensor", "symint"}
    (t,) = [s for s in a.saved if s.kind == "tensor"]
    assert isinstance(t.shape[0], str) and t.shape[1] == 3
    assert t.nbytes == 5 * 3 * 4  # the symbolic size at its hint
    (s,) = [s for s in a.saved if s.kind == "symint"]
    assert s.nbytes == 0
    # Saved symints come last in the forward outputs and first in the backward inputs.
    assert _outputs(a.forward)[-1] == s.name
    assert a.backward.placeholders[0].name == s.name


# -- saved-tensor hooks in the graph (graph_compile.py maybe_inline_graph_saved_tensors_hooks) ------


def _hook_pair():
    def pack(x):
        return x.to(torch.bfloat16)

    def unpack(x):
        return x.to(torch.float32)

    return torch.fx.symbolic_trace(pack), torch.fx.symbolic_trace(unpack)


def _hooked_fn(x, w):
    y = (x @ w).sin()
    return y.cos()


@pytest.mark.parametrize("mode", ["donated", "all"])
def test_graph_module_saved_tensor_hooks_are_inlined(mode):
    from torch._functorch import config as functorch_config

    pack_gm, unpack_gm = _hook_pair()
    x = torch.randn(4, 4, requires_grad=True)
    w = torch.randn(4, 4, requires_grad=True)
    plain = _only_aot(_capture(_hooked_fn, x, w))
    x.grad = w.grad = None
    with functorch_config.patch(saved_tensors_hooks_filtering_mode=mode):
        with torch.autograd.graph.saved_tensors_hooks(pack_gm, unpack_gm):
            cap = _capture(_hooked_fn, x, w)
    compiled_grad = x.grad.clone()  # capture ran the backward through the bf16-packed values
    a = _only_aot(cap)
    assert plain.saved_tensor_hooks is None
    hooks = a.saved_tensor_hooks
    assert hooks is not None
    assert hooks.pack.find(target="to") and hooks.unpack.find(target="to")
    # Without hooks min-cut saves mm (sin's input) and the two transposes of the inputs.
    plain_saved = [s.name for s in plain.saved]
    plain_targets = {s.name: plain.forward.node(s.name).target for s in plain.saved}
    if mode == "donated":
        # Only donated buffers (intermediates no one else holds) are packed: mm, not the
        # transposes, which alias the user's inputs.
        assert hooks.applied_to == [n for n in plain_saved if plain_targets[n] != "aten.t.default"]
    else:
        assert hooks.applied_to == plain_saved
    assert hooks.applied_to
    # Each packed value is the pack hook's output: a bf16 copy inlined in the forward epilogue.
    by_name = {s.name: s for s in a.saved}
    for name in hooks.applied_to:
        packed = a.forward.node(f"{name}_hook_0")
        assert packed.target == "aten._to_copy.default" and packed.inputs == [name]
        assert packed.meta["saved_tensor_hook"] == "pack"
        assert by_name[packed.name].dtype == "bfloat16"
        assert by_name[packed.name].nbytes * 2 == next(s.nbytes for s in plain.saved if s.name == name)
    # The unpack hook is the backward's prologue: bf16 -> f32 copies of the packed inputs.
    unpacks = [
        n for n in a.backward.nodes if n.meta.get("saved_tensor_hook") == "unpack" and n.op != "placeholder"
    ]
    assert len(unpacks) == len(hooks.applied_to)
    assert all(n.target == "aten._to_copy.default" and n.meta["dtype"] == "float32" for n in unpacks)
    assert a.saved_bytes < plain.saved_bytes
    # The gradients still match eager (no hooks) within bf16 precision.
    x.grad = None
    _hooked_fn(x, w).sum().backward()
    torch.testing.assert_close(compiled_grad, x.grad, rtol=0.05, atol=0.05)
    assert not torch.equal(compiled_grad, x.grad)  # the bf16 round trip really ran


@pytest.mark.parametrize("mode", ["donated", "no_static", "all"])
def test_saved_tensor_hooks_filtering_mode_on_an_mlp(mode):
    # saved_tensors_hooks_filtering_mode picks which saved values get the hooks:
    #   "donated"   only donated buffers: intermediates nothing else holds (not inputs, not params)
    #   "no_static" everything but static inputs (the parameters)
    #   "all"       every saved tensor
    from torch._functorch import config as functorch_config

    pack_gm, unpack_gm = _hook_pair()
    m = _mlp()
    plain = _only_aot(_capture(m, torch.randn(3, 4), backward=True))
    with functorch_config.patch(saved_tensors_hooks_filtering_mode=mode):
        with torch.autograd.graph.saved_tensors_hooks(pack_gm, unpack_gm):
            a = _only_aot(_capture(m, torch.randn(3, 4), backward=True))
    saved = [plain.forward.node(s.name) for s in plain.saved]
    expected = {
        "donated": [n.name for n in saved if n.op != "placeholder"],
        "no_static": [n.name for n in saved if n.role != "param"],
        "all": [n.name for n in saved],
    }[mode]
    assert a.saved_tensor_hooks.applied_to == expected
    # The user input x is saved (for the first Linear's weight gradient), as is W2 and relu:
    # so the three modes really differ here.
    assert {n.role for n in saved if n.op == "placeholder"} == {"param", "operand"}
    hooked = {f"{name}_hook_0" for name in expected}
    for s in a.saved:
        assert s.dtype == ("bfloat16" if s.name in hooked else "float32")


# -- higher-order operators ----------------------------------------------------------------------


def test_invoke_subgraph_survives_into_aot():
    @torch.compiler.nested_compile_region
    def g(x):
        return torch.sin(x) * 2

    def f(x):
        return g(x) + g(x * 3)

    cap = _capture(f, torch.randn(4, requires_grad=True))
    a = _only_aot(cap)
    for graph, body_prefix in ((a.forward, "forward."), (a.backward, "backward.")):
        hops = graph.find(role="hop")
        assert len(hops) == 2 and all(h.target == "invoke_subgraph" for h in hops)
        for h in hops:
            (body,) = h.calls
            assert body.startswith(body_prefix) and body in a.subgraphs
    # The joint is the frame's (the bodies' own joints went through the partitioner first).
    assert a.joint.placeholders[0].meta["desc"] == "PlainAOTInput(idx=0)"
    assert len(a.joint.find(role="hop")) == 4  # two forward and two backward calls
    fw_body = a.subgraphs[a.forward.find(role="hop")[0].calls[0]]
    assert fw_body.find(target="aten.sin.default")
    bw_body = a.subgraphs[a.backward.find(role="hop")[0].calls[0]]
    assert bw_body.find(target="aten.cos.default")  # d/dx sin
    # Both calls share one body: a region compiled once.
    assert len({h.calls[0] for h in a.forward.find(role="hop")}) == 1
    # Each HOP call maps back to its own Dynamo invoke_subgraph node.
    dyn_calls = {n.name for n in cap.frames[0].graph.nodes if "invoke_subgraph" in n.target}
    assert {h.meta["from"]["node"] for h in a.forward.find(role="hop")} == dyn_calls


def test_checkpoint_is_desugared_and_recomputed():
    from torch.utils.checkpoint import checkpoint

    def g(x):
        return torch.sin(x).cos()

    def f(x):
        return checkpoint(g, x, use_reentrant=False) + 1

    cap = _capture(f, torch.randn(4, requires_grad=True))
    frame = cap.frames[0]
    a = _only_aot(cap)
    assert any(s.hop == "tag_activation_checkpoint" for s in frame.subgraphs.values())
    # AOT inlines the checkpoint HOP: no HOP left, and its body's ops are plain aten ops ...
    assert not a.forward.find(role="hop") and not a.backward.find(role="hop")
    (sin,) = a.forward.find(target="aten.sin.default")
    # ... whose activations are not saved but recomputed in the backward.
    assert [s.name for s in a.saved] == [a.forward.placeholders[0].name]
    assert a.joint.node(sin.name).meta.get("recomputed") is True
    assert sin.name in {n.name for n in a.backward.nodes}
    # Provenance points into the checkpoint body in the Dynamo graph.
    body = sin.meta["from"]["graph"]
    assert frame.subgraphs[body].hop == "tag_activation_checkpoint"
    assert sin.meta["from"]["node"] in {n.name for n in frame.subgraphs[body].graph.nodes}


# -- provenance ----------------------------------------------------------------------------------


def _provenance_cases():
    def mlp_like(x, w):
        y = torch.sin(x) @ w
        return y.relu().sum()

    def mutation(x):
        x.mul_(2)
        return x.mul(3)

    from torch.utils.checkpoint import checkpoint

    def ckpt(x):
        return checkpoint(lambda t: t.sin().cos(), x, use_reentrant=False) * 2

    return {
        "mlp_like": (
            mlp_like,
            (torch.randn(4, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True)),
        ),
        "mutation": (mutation, (torch.randn(3, requires_grad=True).clone(),)),
        "checkpoint": (ckpt, (torch.randn(3, requires_grad=True),)),
        "inference": (mlp_like, (torch.randn(4, 4), torch.randn(4, 4))),
    }


@pytest.mark.parametrize("case", list(_provenance_cases()))
def test_every_forward_node_with_a_user_line_maps_to_a_dynamo_node(case):
    fn, args = _provenance_cases()[case]
    cap = _capture(fn, *args)
    frame = cap.frames[0]
    a = frame.aot
    graphs = frame.graphs()
    this_file = __file__
    checked = 0
    for g in (a.forward, a.backward, a.joint):
        if g is None:
            continue
        for n in g.nodes:
            src = n.meta.get("source")
            if n.op in ("placeholder", "output") or not src or src["file"] != this_file:
                continue
            origin = n.meta.get("from")
            assert origin is not None, f"{g.name}.{n.name} has a user line but no Dynamo node"
            dyn_graph = graphs[origin["graph"]]
            dyn = dyn_graph.node(origin["node"])
            assert origin["line"] == src["line"] and origin["file"] == this_file
            assert dyn.meta["source"]["line"] == src["line"]
            checked += 1
    assert checked >= 3
    # Primal placeholders map to the Dynamo placeholder of the same input.
    for p in a.forward.placeholders:
        if p.meta.get("desc", "").startswith("PlainAOTInput"):
            assert graphs[""].node(p.meta["from"]["node"]).op == "placeholder"
    if a.backward is not None:
        # A tangent is the gradient of a user output: it maps to the node Dynamo returns there.
        returned = graphs[""].output.inputs
        for t in _tangents(a.backward):
            if "PlainAOTOutput" in t.meta["desc"]:
                assert t.meta["from"]["node"] in returned
        # A saved value's backward placeholder has the origin of the forward node it holds.
        for s in a.saved:
            assert a.backward.node(s.name).meta.get("from") == a.forward.node(s.name).meta.get("from")


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_capture_case_has_a_consistent_aot_record(name, captured):
    """The capture core's shared cases (tests/cases.py): provenance and names hold up everywhere."""
    cap = _checked(captured(name))
    assert any(f.status == "compiled" for f in cap.frames)
    for frame in cap.frames:
        a = frame.aot
        if frame.status != "compiled":  # a restarted or graph-less attempt never reached the backend
            assert a is None and frame.graph.nodes == []
            continue
        assert a is not None, f"frame {frame.compile_id}: AOT did not run"
        graphs = frame.graphs()
        for g in (a.joint, a.forward, a.backward, a.inference, *a.subgraphs.values()):
            for n in g.nodes if g is not None else ():
                origin = n.meta.get("from")
                if origin is not None:
                    graphs[origin["graph"]].node(origin["node"])  # raises KeyError if missing
                    # A HOP body's seq_nr belong to another trace: never used there.
                    assert not (g.name in a.subgraphs and origin["via"] == "seq_nr")
                for body in n.calls:
                    assert body in a.subgraphs
        assert len(a.inputs) == len(frame.graph.placeholders)
        assert [i.name for i in a.inputs] == [p.name for p in frame.graph.placeholders]
        if a.mode == "training":
            assert [s.name for s in a.saved] == _outputs(a.forward)[len(_outputs(a.forward)) - len(a.saved) :]


# -- inference, effects, subclasses --------------------------------------------------------------


def test_no_grad_inputs_record_inference_mode():
    def f(x, w):
        return (x @ w).relu()

    cap = _capture(f, torch.randn(3, 3), torch.randn(3, 3))
    a = _only_aot(cap)
    assert a.mode == "inference"
    assert a.joint is None and a.backward is None and not a.backward_ran
    assert a.saved == [] and a.saved_bytes == 0
    assert a.inference is not None and a.forward == a.inference
    assert a.inference.find(target="aten.mm.default")
    assert [i.requires_grad for i in a.inputs] == [False, False]
    assert cap.meta["backward_ran"] is False


def test_grad_mode_off_records_inference_even_for_inputs_that_require_grad():
    x = torch.randn(3, requires_grad=True)
    with torch.no_grad():
        cap = _capture(lambda t: t.sin() * 2, x)
    a = _only_aot(cap)
    assert a.mode == "inference" and a.joint is None and a.backward is None
    assert [i.requires_grad for i in a.inputs] == [True]
    assert not cap.result.requires_grad and cap.meta["backward_ran"] is False


def test_effectful_op_threads_an_effect_token():
    def f(x):
        torch.ops.aten._print("dynascope")
        return x.sin()

    a = _only_aot(_capture(f, torch.randn(4, requires_grad=True)))
    # aten::_print is registered as an ORDERED effect: one token in, one token out.
    assert a.effect_tokens == 1
    token = a.forward.placeholders[0]
    assert token.meta["desc"].startswith("ForwardTokenAOTInput")
    (effect,) = a.forward.find(target="with_effects")
    assert effect.role == "hop" and effect.args[0] == token.name
    # The token is returned first and is not a saved value; sin's backward saves the input.
    assert _return_kinds(a.forward) == ["token", "output", "saved"]
    assert token.name not in {s.name for s in a.saved}
    assert [s.name for s in a.saved] == [a.forward.placeholders[1].name]


def test_inference_effect_tokens():
    def f(x):
        torch.ops.aten._print("dynascope")
        return x.sin()

    a = _only_aot(_capture(f, torch.randn(4)))
    assert a.mode == "inference" and a.effect_tokens == 1
    assert a.inference.find(target="with_effects")


def test_tensor_subclass_input_is_desugared_not_a_crash():
    from torch.testing._internal.two_tensor import TwoTensor

    def f(x):
        return (x * 2).sin()

    t = TwoTensor(torch.randn(4), torch.randn(4)).requires_grad_()
    cap = _capture(f, t)
    a = _only_aot(cap)
    assert type(cap.result).__name__ == "TwoTensor"
    # The one subclass input is two plain tensors (its inner a and b) in the AOT graphs.
    descs = [p.meta.get("desc", "") for p in a.forward.placeholders]
    assert len(descs) == 2 and all("SubclassGetAttrAOTInput" in d for d in descs)
    assert {"attr='a'" in d for d in descs} == {True, False}
    assert len(a.inputs) == 1 and a.inputs[0].requires_grad


class Scale(OpaqueBase):
    """A user object a custom op takes as is: an opaque reference type (Note [Opaque Objects])."""

    def __init__(self, k):
        self.k = k


_OPAQUE: dict[str, object] = {}


def _opaque_scale_op():
    """Registers ``Scale`` as an opaque type and a custom op taking it, once per process."""
    if not _OPAQUE:
        from torch._library.opaque_object import register_opaque_type

        register_opaque_type(Scale, typ="reference")

        def scaled_impl(x, s):
            return x * s.k

        # Real types, not strings (this module uses ``from __future__ import annotations``).
        scaled_impl.__annotations__ = {"x": torch.Tensor, "s": Scale, "return": torch.Tensor}
        scaled = torch.library.custom_op("dynascope_test::scaled", mutates_args=())(scaled_impl)

        @scaled.register_fake
        def _(x, s):
            return torch.empty_like(x)

        def setup_context(ctx, inputs, output):
            ctx.s = inputs[1]  # the backward needs the opaque object itself

        def backward(ctx, grad):
            return scaled(grad, ctx.s), None

        scaled.register_autograd(backward, setup_context=setup_context)
        _OPAQUE.update(Scale=Scale, scaled=scaled)
    return _OPAQUE["Scale"], _OPAQUE["scaled"]


def test_opaque_object_is_an_input_and_a_saved_value_not_a_crash():
    Scale, scaled = _opaque_scale_op()

    def f(x, s):
        return scaled(x.sin(), s).cos()

    x = torch.randn(3, requires_grad=True)
    cap = _capture(f, x, Scale(2.0))
    a = _only_aot(cap)
    assert a.backward_ran
    torch.testing.assert_close(x.grad, -torch.sin(2 * x.sin()).detach() * 2 * x.cos().detach())
    # The opaque object is the second graph input; the backward's custom-op call needs it, so
    # it is saved, as an "opaque" value that costs no tensor memory.
    opaque = a.forward.placeholders[1]
    assert opaque.meta["kind"] == "opaque"
    (saved,) = [s for s in a.saved if s.kind == "opaque"]
    assert saved.name == opaque.name and saved.nbytes == 0 and saved.shape == []
    assert {s.kind for s in a.saved} == {"tensor", "opaque"}
    (call,) = a.backward.find(target="dynascope_test.scaled")
    assert opaque.name in call.inputs


# -- the contract of compile_aot -----------------------------------------------------------------


def test_compile_aot_works_as_a_plain_backend_and_rejects_unknown_partitioners():
    from tracer._torch.aot import compile_aot

    frames: list[Frame] = []

    def backend(gm, example_inputs):
        frames.append(Frame(compile_id=f"{len(frames)}/0", code="?"))
        return compile_aot(gm, example_inputs, frame=frames[-1], partitioner="default")

    torch._dynamo.reset()
    x = torch.randn(3, requires_grad=True)
    try:
        out = torch.compile(lambda t: t.cos() * 2, backend=backend)(x)
        assert frames[0].aot is not None and frames[0].aot.partitioner == "default"
        assert not frames[0].aot.backward_ran  # the backward compiles lazily ...
        out.sum().backward()
        assert frames[0].aot.backward_ran  # ... on the first .backward()
    finally:
        torch._dynamo.reset()  # leave no cache entry behind
    torch.testing.assert_close(x.grad, -2 * x.detach().sin())
    with pytest.raises(
        ValueError, match=r"unknown partitioner 'greedy' \(must be one of \['min_cut', 'default'\]\)"
    ):
        compile_aot(torch.fx.symbolic_trace(lambda t: t), [x], frame=Frame("0/0", "?"), partitioner="greedy")


def test_metadata_observer_is_removed_after_capture_and_after_errors(monkeypatch):
    import torch._functorch.aot_autograd as aot_autograd

    from tracer._torch import aot, patching

    real = aot_autograd.run_functionalized_fw_and_collect_metadata
    _capture(lambda x: x.sin(), torch.randn(2, requires_grad=True))
    assert aot_autograd.run_functionalized_fw_and_collect_metadata is real

    def broken_partitioner(name):
        def partition(*args, **kwargs):
            # Raised inside AOTAutograd, after the metadata was collected.
            assert aot_autograd.run_functionalized_fw_and_collect_metadata is not real
            assert (aot_autograd, "run_functionalized_fw_and_collect_metadata") in patching.ACTIVE
            raise RuntimeError("partitioner exploded")

        return partition

    monkeypatch.setattr(aot, "_real_partitioner", broken_partitioner)
    with pytest.raises(Exception, match="partitioner exploded") as info:
        tracer.capture(lambda x: x.sin(), torch.randn(3, requires_grad=True), fullgraph=True)
    assert aot_autograd.run_functionalized_fw_and_collect_metadata is real
    assert patching.ACTIVE == []
    # The partial capture says AOT did not finish: the joint was recorded, no compiler ran.
    partial = info.value.capture
    assert [f.aot for f in partial.frames] == [None]


def test_a_recording_failure_warns_and_never_breaks_the_compile(monkeypatch):
    from tracer._torch import aot

    def broken(*args, **kwargs):
        raise RuntimeError("saved values exploded")

    monkeypatch.setattr(aot, "saved_values", broken)
    x = torch.randn(3, requires_grad=True)
    with pytest.warns(
        UserWarning, match="could not record the AOT forward: RuntimeError: saved values exploded"
    ):
        cap = tracer.capture(lambda t: t.sin() * 2, x)
    torch.testing.assert_close(cap.result, x.sin() * 2)
    (frame,) = cap.frames
    assert frame.meta["aot_errors"] == ["forward: RuntimeError: saved values exploded"]
    # What was recorded before the failure is kept; the backward still compiled and was recorded.
    assert frame.aot is not None and frame.aot.forward is not None and frame.aot.saved == []
    assert frame.aot.backward_ran
    tracer.validate(cap)


def test_recording_does_not_change_what_aot_eager_compiles():
    # The same function through torch's own aot_eager (with spy compilers that only read the
    # graphs) gives the very forward/backward graphs capture recorded.
    from torch._dynamo.backends.debugging import aot_eager

    seen = {}

    def spy(kind):
        def compiler(gm, example_inputs):
            from torch._dynamo.backends.debugging import boxed_nop

            # Rendered as AOTAutograd's own log renders it: capture's Graph.code is that text
            # (Note [Graph text torch already rendered]).
            seen[kind] = gm.print_readable(print_output=False, include_stride=True, include_device=True,
                                           expanded_def=True)
            return boxed_nop(gm, example_inputs)

        return compiler

    def f(x, w):
        return (torch.sin(x) @ w).relu().sum()

    args = (torch.randn(4, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True))
    a = _only_aot(_capture(f, *args))
    torch._dynamo.reset()
    try:
        out = torch.compile(
            f, backend=lambda gm, ex: aot_eager(gm, ex, fw_compiler=spy("fw"), bw_compiler=spy("bw"))
        )(*args)
        out.backward()
    finally:
        torch._dynamo.reset()
    assert a.forward.code == seen["fw"]
    assert a.backward.code == seen["bw"]
