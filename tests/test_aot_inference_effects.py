"""AOTAutograd (tracer/_torch/aot.py): inference mode (no grad inputs, grad mode off), effect tokens,
and inputs that are desugared rather than crash: tensor subclasses and opaque objects.

Every expectation below is reasoned from AOTAutograd's own Notes and source, then checked against
the graphs torch really produced; each capture is also validated and round-tripped through JSON
(tests/aot_checks.py).
"""

from __future__ import annotations

import pytest
import torch
from aot_checks import _capture, _only_aot, _return_kinds
from torch._opaque_base import OpaqueBase

pytestmark = pytest.mark.timeout(300)


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
