"""Bad input gets a clear error; faults propagate with the partial capture attached."""

from __future__ import annotations

import pytest
import torch

import tracer


def test_not_callable():
    with pytest.raises(TypeError, match="needs a callable.*got int"):
        tracer.capture(3, torch.randn(2))


def test_bad_options_name_the_choices():
    with pytest.raises(ValueError, match=r"unknown partitioner 'fast' \(must be one of \['min_cut', 'default'\]\)"):
        tracer.capture(lambda x: x, torch.randn(2), partitioner="fast")
    with pytest.raises(TypeError, match="more_calls"):
        tracer.capture(lambda x: x, torch.randn(2), more_calls=[torch.randn(2)])
    with pytest.raises(ValueError, match="unknown torch._dynamo.config option"):
        tracer.capture(lambda x: x, torch.randn(2), dynamo_config={"no_such_option": 1})


def test_function_raises_in_eager():
    def f(x):
        y = x.sin()
        if True:
            raise KeyError("user error")
        return y

    with pytest.raises(KeyError) as info:
        tracer.capture(f, torch.randn(2))
    err = info.value
    assert isinstance(err.capture, tracer.Capture)
    assert any("tracer.capture" in n and "err.capture" in n for n in err.__notes__)
    tracer.validate(err.capture)
    assert err.capture.meta["error"] == "KeyError: 'user error'"  # the call's error
    # Dynamo saw the raise while tracing: torch's own failure of the compile (fail_type), not "interrupted"
    assert [(f.status, f.status_reason.split(":")[0]) for f in err.capture.frames][-1] == ("failed", "Unsupported")


def test_compile_fails_with_fullgraph():
    def f(x):
        x = x.sin()
        torch._dynamo.graph_break()
        return x.cos()

    with pytest.raises(Exception) as info:
        tracer.capture(f, torch.randn(2), fullgraph=True)
    cap = info.value.capture
    assert cap.fn.endswith("f")
    tracer.validate(cap)
    assert tracer.Capture.from_json(cap.to_json()) == cap


def test_wrong_arguments_propagate():
    def f(x, y):
        return x + y

    with pytest.raises(TypeError) as info:
        tracer.capture(f, torch.randn(2))
    assert hasattr(info.value, "capture")


def test_reentrant_capture_is_refused():
    def inner(x):
        return x + 1

    def outer(x):
        return tracer.capture(inner, x)

    with pytest.raises(RuntimeError, match="already running"):
        # the eager fallback of `outer` calls capture while the outer capture runs
        tracer.capture(torch._dynamo.disable(outer), torch.randn(2))
    cap = tracer.capture(inner, torch.randn(2))  # the lock was released
    assert len(cap.frames) == 1


def test_graph_break_in_cond_branch_raises_with_the_failed_speculation():
    # cond cannot fall back to eager (unlike wrap): Dynamo raises, the capture rides along.
    def f(x):
        def true_fn(y):
            torch._dynamo.graph_break()
            return y.sin()

        def false_fn(y):
            return y.cos()

        return torch.cond(x.sum() > 0, true_fn, false_fn, (x,))

    with pytest.raises(Exception, match="higher order operator") as info:
        tracer.capture(f, torch.randn(3))
    cap = info.value.capture
    (frame,) = cap.frames
    assert frame.compile_id == "0/0" and frame.code.endswith(" in f") and frame.status == "failed"
    assert frame.status_reason.startswith("UncapturedHigherOrderOpError: ") and frame.graph.nodes == []
    (spec,) = frame.speculations
    assert spec.hop == "cond" and not spec.ok and "graph_break" in spec.reason
    tracer.validate(cap)
