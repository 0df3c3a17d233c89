"""Bad input to tracer.export is one clear error raised before anything runs; what torch's own checks let
through and torch then rejects while exporting is the failure record (Note [Bad input or failed export]
in tracer/_torch/export_inputs.py)."""

from __future__ import annotations

import pytest
import torch
import torch._logging._internal as internal
from torch.export import Dim

import tracer
from tests.export_models import Reshape4


def _x():
    return torch.ones(8)


def test_a_function_is_not_a_module():
    def f(x):
        return x + 1

    with pytest.raises(ValueError, match="Expected `mod` to be an instance of `torch.nn.Module`"):
        torch.export.export(f, (_x(),))  # torch says the same
    with pytest.raises(TypeError, match=r"exports a torch\.nn\.Module .*got function; to export a function"):
        tracer.export(f, (_x(),))
    with pytest.raises(TypeError, match="got int"):
        tracer.export(3, (_x(),))


@pytest.mark.parametrize("args, got", [(torch.ones(8), "Tensor"), ([torch.ones(8)], "list"), (None, "NoneType")])
def test_args_must_be_a_tuple(args, got):
    with pytest.raises(Exception, match="Expecting `args` to be a tuple"):
        torch.export.export(Reshape4(), args)  # torch rejects it inside its export
    with pytest.raises(TypeError, match=rf"args must be a tuple of example positional inputs, e\.g\. \(x,\), got {got}$"):
        tracer.export(Reshape4(), args)


def test_kwargs_must_be_a_dict():
    with pytest.raises(TypeError, match="kwargs must be a dict of example keyword inputs or None, got list"):
        tracer.export(Reshape4(), (), [_x()])


def test_inputs_that_do_not_bind_to_forward():
    with pytest.raises(TypeError, match=r"args and kwargs do not fit Reshape4\.forward: too many positional arguments"):
        tracer.export(Reshape4(), (_x(), _x()))
    with pytest.raises(TypeError, match=r"do not fit Reshape4\.forward: .*'y'"):
        tracer.export(Reshape4(), (_x(),), {"y": _x()})
    with pytest.raises(TypeError, match=r"do not fit Reshape4\.forward: missing a required argument: 'x'"):
        tracer.export(Reshape4(), ())
    assert tracer.export(Reshape4(), (), {"x": _x()}).export.status == "exported"  # by keyword is fine


@pytest.mark.parametrize("name", ["strict", "decompose", "draft", "raise_on_failure"])
@pytest.mark.parametrize("value", ["yes", None, 1])
def test_flags_must_be_bools(name, value):
    with pytest.raises(TypeError, match=rf"{name} must be True or False, got {value!r}"):
        tracer.export(Reshape4(), (_x(),), **{name: value})


def test_dynamic_shapes_of_the_wrong_type():
    with pytest.raises(TypeError, match="dynamic_shapes must be None, a dict .*, a tuple or a list .*, got int"):
        tracer.export(Reshape4(), (_x(),), dynamic_shapes=5)


@pytest.mark.parametrize("shapes, says", [
    ({"y": {0: Dim("n")}}, "top-level keys must be the arg names"),  # a name forward does not have
    ({"x": {0: "n"}}, "Unexpected dimension mapped to index 0"),  # not a Dim
    (({0: Dim("n")}, {0: Dim("m")}), ""),  # two specs for one input
])
def test_dynamic_shapes_torchs_check_rejects_are_one_value_error_with_torchs_message(shapes, says):
    with pytest.raises(Exception) as torch_error:
        torch.export.export(Reshape4(), (_x(),), dynamic_shapes=shapes)
    handlers = list(internal.trace_log.handlers)
    with pytest.raises(ValueError, match=r"dynamic_shapes do not fit the inputs of Reshape4\.forward") as ours:
        tracer.export(Reshape4(), (_x(),), dynamic_shapes=shapes)
    # torch's own check raised it: the same exception torch's export raises, before export adds its advice
    cause = ours.value.__cause__
    assert type(cause) is type(torch_error.value) and str(torch_error.value).startswith(str(cause))
    assert str(cause) in str(ours.value) and says in str(cause)
    assert internal.trace_log.handlers == handlers  # raised before anything was installed


def test_a_dynamic_shapes_torchs_check_lets_through_is_the_failure_record():
    """A dimension index past the tensor's rank passes torch's check and fails inside the export: that
    is torch's failure, recorded with its own exception and message."""
    shapes = {"x": {3: Dim("n")}}
    with pytest.raises(Exception) as torch_error:
        torch.export.export(Reshape4(), (_x(),), dynamic_shapes=shapes)
    cap = tracer.export(Reshape4(), (_x(),), dynamic_shapes=shapes)
    tracer.validate(cap)
    f = cap.export.failure
    assert cap.export.status == "failed" and f.kind == "other"
    assert (f.error_type, f.message) == (type(torch_error.value).__name__, str(torch_error.value))
    assert f.user_line is None  # torch failed in its own code, before tracing forward
    assert any(p.startswith("draft_export failed too") for p in cap.problems)  # the same input fails there too
