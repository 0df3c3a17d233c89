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
