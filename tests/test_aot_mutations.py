"""AOTAutograd (tracer/_torch/aot.py): input data and metadata mutations, outputs aliasing inputs or
intermediates, and synthetic bases for mutated inputs that alias each other.

Reasoned from torch/_functorch/_aot_autograd/collect_metadata_analysis.py (Note [AOT Autograd: outputs
aliasing inputs or intermediates!]) and runtime_wrappers.py (Note [Handling mutations on an input that
aliases other inputs]). Every expectation below is reasoned from AOTAutograd's own Notes and source, then checked against
the graphs torch really produced; each capture is also validated and round-tripped through JSON
(tests/aot_checks.py).
"""

from __future__ import annotations

import pytest
import torch
from aot_checks import _capture, _only_aot, _outputs, _return_kinds, _tangents

pytestmark = pytest.mark.timeout(300)


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
