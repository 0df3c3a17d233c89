"""CaptureOptions: one validated options object shared by capture(), trace() and Session."""

from __future__ import annotations

import pytest
import torch

import tracer
from tracer.options import CaptureOptions, split_options


def test_invalid_options_name_the_choices():
    with pytest.raises(ValueError, match=r"unknown partitioner 'x' \(must be one of \['min_cut', 'default'\]\)"):
        CaptureOptions(partitioner="x")
    with pytest.raises(TypeError, match=r"dynamic must be one of \[None, True, False\], got 'yes'"):
        CaptureOptions(dynamic="yes")
    with pytest.raises(TypeError, match="more_calls must be a list of argument tuples"):
        CaptureOptions(more_calls=[1])
    with pytest.raises(TypeError, match="dynamo_config must be a dict"):
        CaptureOptions(dynamo_config=[("a", 1)])


def test_split_keeps_the_function_kwargs_and_refuses_both_forms():
    opts, rest = split_options({"dynamic": True, "scale": 2})
    assert opts == CaptureOptions(dynamic=True) and rest == {"scale": 2}
    with pytest.raises(TypeError, match=r"either options= or the option keywords \['dynamic'\]"):
        split_options({"dynamic": True}, CaptureOptions())
    with pytest.raises(TypeError, match="either options="):
        tracer.capture(lambda x: x, torch.randn(2), options=CaptureOptions(), fullgraph=True)


def test_options_reach_the_compile_and_are_recorded():
    def f(x):
        return (x * 2).sum().item() + 1

    opts = CaptureOptions(capture_scalar_outputs=True, fullgraph=True, more_calls=[(torch.randn(4),)])
    cap = tracer.capture(f, torch.randn(3), options=opts)
    assert cap.meta["options"] == opts.to_meta()
    assert cap.meta["options"]["more_calls"] == 1
    assert cap.meta["options"]["dynamo_config"] == {"capture_scalar_outputs": "True"}
    assert cap.graph_breaks == []  # .item() was traced (fullgraph would have raised otherwise)
    s = tracer.trace(f, torch.randn(3), options=opts)
    assert s.options is opts
    s.abort()


def inductor_paused(x):
    y = torch.sin(x) * 2
    tracer.pause("before the add")  # a pause inside a Dynamo trace that Inductor then compiles
    return y + 1


@pytest.mark.slow
@pytest.mark.parametrize("how", ["keyword", "options"])
def test_a_session_compiles_with_the_backend_it_was_given(how):
    """``backend`` reaches the session's compile like capture's: the keyword and CaptureOptions both."""
    x = torch.randn(8)
    s = (tracer.trace(inductor_paused, x, backend="inductor") if how == "keyword"
         else tracer.trace(inductor_paused, x, options=CaptureOptions(backend="inductor")))
    assert s.options.backend == "inductor"
    s.start()
    try:
        st = s.wait(timeout=120)
        assert st is not None and st.label == "before the add"
        s.resume()
        assert s.wait(timeout=300) is None
    finally:
        s.abort()
    cap = s.capture
    assert cap.meta["options"]["backend"] == "inductor"
    (f,) = [f for f in cap.frames if f.has_graph]
    assert f.aot is None and len(f.inductor) == 1  # Inductor compiled it (aot_eager would fill f.aot)
    g = f.inductor[0]
    assert "def call(" in g.output_code and g.kernels and all(k.name in g.output_code for k in g.kernels)
    torch.testing.assert_close(cap.result, torch.sin(x) * 2 + 1)
