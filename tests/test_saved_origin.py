"""Saved values split by origin (Note [Origin of a saved value] in tracer/_torch/aot_meta.py).

The expected split is computed without dynascope: torch's own AOTAutograd pipeline (aot_eager's
compilers and partitioner) runs the model, a forward compiler keeps the *real* tensors the
compiled forward returns where its output descriptors say ``SavedForBackwardsAOTOutput``, and
each is classified by the storage it shares with ``named_parameters()``, ``named_buffers()`` or
the input.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch._dynamo.backends.common import aot_autograd
from torch._dynamo.backends.debugging import boxed_nop
from torch._functorch._aot_autograd.descriptors import (
    SavedForBackwardsAOTOutput,
    SavedForBackwardsNoVcCheckAOTOutput,
)
from torch._functorch.partitioners import default_partition, min_cut_rematerialization_partition

import tracer
from tracer.model import Capture

pytestmark = pytest.mark.timeout(300)

_SAVED = (SavedForBackwardsAOTOutput, SavedForBackwardsNoVcCheckAOTOutput)


def _reference(model: torch.nn.Module, x: torch.Tensor, partitioner: str) -> list[tuple[str, Any]]:
    """(forward node name, real tensor) of every value torch's own forward saves, in order."""
    saved: list[tuple[str, Any]] = []

    def fw_compiler(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        (out,) = gm.graph.find_nodes(op="output")
        idx = [i for i, d in enumerate(out.meta["desc"]) if isinstance(d, _SAVED)]
        names = [out.args[0][i].name for i in idx]
        inner = boxed_nop(gm, example_inputs)

        def run(args: list[Any]) -> Any:
            outs = inner(args)
            saved[:] = [(name, outs[i]) for name, i in zip(names, idx, strict=True)]
            return outs

        run._boxed_call = True
        return run

    backend = aot_autograd(
        fw_compiler=fw_compiler,
        bw_compiler=boxed_nop,
        partition_fn=min_cut_rematerialization_partition if partitioner == "min_cut" else default_partition,
        keep_inference_input_mutations=True,
    )

    def step(x: torch.Tensor) -> torch.Tensor:
        return model(x)

    try:
        torch.compile(step, backend=backend)(x)
    finally:
        torch._dynamo.reset()
    return saved


def _expected(model: torch.nn.Module, x: torch.Tensor, saved: list[tuple[str, Any]]):
    """Origins by storage, and activation/param bytes counting each storage once."""
    owners = {p.untyped_storage().data_ptr(): "parameter" for p in model.parameters()}
    owners.update({b.untyped_storage().data_ptr(): "buffer" for b in model.buffers()})
    owners[x.untyped_storage().data_ptr()] = "input"
    origins: dict[str, str] = {}
    largest: dict[int, tuple[str, int]] = {}
    for name, t in saved:
        assert isinstance(t, torch.Tensor), (name, t)
        ptr = t.untyped_storage().data_ptr()
        origins[name] = owners.get(ptr, "activation")
        nbytes = t.numel() * t.element_size()
        largest[ptr] = (origins[name], max(nbytes, largest.get(ptr, ("", 0))[1]))
    act = sum(n for o, n in largest.values() if o == "activation")
    par = sum(n for o, n in largest.values() if o in ("parameter", "buffer"))
    return origins, act, par


def _check(model: torch.nn.Module, x: torch.Tensor, partitioner: str = "min_cut") -> Capture:
    ref = _reference(model, x, partitioner)
    origins, act, par = _expected(model, x, ref)
    cap = tracer.capture(model, x, partitioner=partitioner, backward=True)
    tracer.validate(cap)
    assert Capture.from_json(cap.to_json()) == cap
    (frame,) = cap.frames
    a = frame.aot
    assert a is not None and a.mode == "training"
    assert [s.name for s in a.saved] == [name for name, _ in ref]
    assert {s.name: s.origin for s in a.saved} == origins
    assert a.activation_bytes == act
    assert a.param_bytes == par
    assert a.saved_bytes == sum(t.numel() * t.element_size() for _, t in ref)
    assert frame.problems == []
    return cap


def test_conv_batchnorm_training_saves_weights_input_and_activations():
    torch.manual_seed(0)
    m = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(144, 5)
    )
    a = _check(m, torch.randn(2, 3, 8, 8)).frames[0].aot
    origins = {s.origin for s in a.saved}
    assert {"parameter", "input", "activation"} <= origins
    assert a.param_bytes > 0 and a.activation_bytes > 0
    # Everything saved is one of the three, so the split adds up.
    assert a.saved_bytes == a.activation_bytes + a.param_bytes + sum(s.nbytes for s in a.saved if s.origin == "input")


def test_linear_batchnorm_eval_saves_its_running_buffers():
    # In eval mode batch norm's backward reads running_mean/running_var: saved buffers.
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.BatchNorm1d(5), torch.nn.ReLU()).eval()
    a = _check(m, torch.randn(3, 4, requires_grad=True)).frames[0].aot
    buffers = [s for s in a.saved if s.origin == "buffer"]
    assert len(buffers) == 2
    assert sum(s.nbytes for s in buffers) == m[1].running_mean.nbytes + m[1].running_var.nbytes


def test_saved_view_of_a_parameter_is_a_parameter_alias():
    # The default partitioner saves t(weight) for the second Linear's backward: a view that
    # costs no memory the module does not hold anyway.
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    a = _check(m, torch.randn(3, 4), partitioner="default").frames[0].aot
    (view,) = [s for s in a.saved if a.forward.node(s.name).target == "aten.t.default"]
    assert view.origin == "parameter"
    weight = a.forward.node(view.alias_of)
    assert weight.op == "placeholder" and weight.role == "param"
    assert a.param_bytes == view.nbytes == m[2].weight.nbytes
    # detach(relu) shares relu's storage: the activation is counted once.
    (det,) = [s for s in a.saved if s.alias_of and s.origin == "activation"]
    assert a.forward.node(det.alias_of).target == "aten.relu.default"
    assert a.activation_bytes < sum(s.nbytes for s in a.saved if s.origin == "activation")


class _Gram(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 3)

    def forward(self, x):
        return self.fc(x @ x.T).sum()


def test_model_saving_only_activations():
    # x needs no grad, so only fc.weight's gradient needs a saved value: the Gram matrix.
    torch.manual_seed(0)
    a = _check(_Gram(), torch.randn(6, 6)).frames[0].aot
    assert [s.origin for s in a.saved] == ["activation"]
    assert a.param_bytes == 0 and a.activation_bytes == a.saved_bytes == 6 * 6 * 4
