"""AOTAutograd (tracer/_torch/aot.py): the values the forward saves for the backward (both
partitioners, dynamic shapes) and saved-tensor hooks inlined into the graphs (graph_compile.py
``maybe_inline_graph_saved_tensors_hooks``).

Every expectation below is reasoned from AOTAutograd's own Notes and source, then checked against
the graphs torch really produced; each capture is also validated and round-tripped through JSON
(tests/aot_checks.py).
"""

from __future__ import annotations

import pytest
import torch
from aot_checks import _capture, _only_aot, _ops, _outputs, _tangents

pytestmark = pytest.mark.timeout(300)


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
