"""No hook outlives a capture: after success and after an exception everything is as before."""

from __future__ import annotations

import importlib

import pytest
import torch

import tracer
from tracer._torch import patching


@pytest.fixture(autouse=True, scope="module")
def _warm():
    # torch installs its own lazy TORCH_TRACE handler and config caches on the first compile;
    # compare states after that, so only what a capture itself leaves behind shows up.
    tracer.capture(lambda x: x + 1, torch.randn(2))


def _state():
    """Every place a capture hooks into, as identities."""
    hop = importlib.import_module("torch._dynamo.variables.higher_order_ops")
    sc = importlib.import_module("torch._dynamo.symbolic_convert")
    cf = importlib.import_module("torch._dynamo.convert_frame")
    from torch._logging._internal import trace_log

    return {
        "speculate_subgraph": hop.speculate_subgraph,
        "speculate_subgraph_with_auto_output_flattening": hop.speculate_subgraph_with_auto_output_flattening,
        "log_graph_break": sc.InstructionTranslatorBase.__dict__["log_graph_break"],
        "log_graph_break_overrides": sorted(
            c.__name__ for c in _subclasses(sc.InstructionTranslatorBase) if "log_graph_break" in c.__dict__
        ),
        "trace_log_handlers": list(trace_log.handlers),
        "bytecode_hooks": list(cf._bytecode_hooks),
        "dynamo_config": torch._dynamo.config.get_config_copy(),
        "active_patches": list(patching.ACTIVE),
    }


def _subclasses(cls):
    out = []
    for c in cls.__subclasses__():
        out.append(c)
        out.extend(_subclasses(c))
    return out


def test_nothing_installed_after_success():
    before = _state()

    def f(x):
        return x.sin()

    tracer.capture(f, torch.randn(2), capture_scalar_outputs=True)
    assert _state() == before
    assert patching.ACTIVE == []


def test_nothing_installed_after_an_exception():
    before = _state()

    def f(x):
        y = x.sin()
        raise ValueError("boom")
        return y

    with pytest.raises(ValueError, match="boom"):
        tracer.capture(f, torch.randn(2), capture_scalar_outputs=True)
    assert _state() == before


def test_nothing_installed_after_a_compile_error():
    before = _state()

    def f(x):
        torch._dynamo.graph_break()
        return x.sin()

    with pytest.raises(Exception) as info:
        tracer.capture(f, torch.randn(2), fullgraph=True)
    assert hasattr(info.value, "capture")
    assert _state() == before


def test_hooks_are_live_during_a_capture():
    seen = {}

    def probe():
        import contextlib

        @contextlib.contextmanager
        def cm():
            seen["during"] = list(patching.ACTIVE)
            yield

        return cm()

    from tracer.capturing import _run_capture

    _run_capture(lambda x: x + 1, (torch.randn(2),), {}, extra_hooks=[probe])
    names = {name for _, name in seen["during"]}
    assert {"speculate_subgraph", "speculate_subgraph_with_auto_output_flattening", "log_graph_break"} <= names
    assert patching.ACTIVE == []


def test_automatic_dynamic_state_does_not_outlive_a_capture():
    import copy

    from torch._dynamo.pgo import get_code_state

    before = copy.deepcopy(dict(get_code_state()))

    def f(x):
        return x * 2

    cap = tracer.capture(f, torch.randn(3), more_calls=[(torch.randn(6),)])
    assert len(cap.recompiles) == 1  # Dynamo did mark the size dynamic inside the capture
    assert dict(get_code_state()) == before
