"""tracer.profile: time per AOT node and per user line, checked against torch's own profiler attribution."""

from __future__ import annotations

import contextlib
import inspect
import json

import pytest
import torch

import tracer


def model(x, w):
    h = torch.sin(x) * 2
    big = h @ w
    return torch.relu(big) + 1


@contextlib.contextmanager
def one_thread():
    """torch on one intra-op thread, restored after. The profile tests rank lines by wall time; with two
    threads on a loaded two-core machine (CI runs two suites at once) a parallel region waits whenever one
    of its threads is descheduled, which made a small fused kernel's line outweigh 8 steps of the matmul."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _line(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, ln in enumerate(lines) if text in ln)


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    torch.manual_seed(0)
    # the matmul: 64*512*2048 multiply-adds, against elementwise work on 64*512 values
    x, w = torch.randn(64, 512, requires_grad=True), torch.randn(512, 2048, requires_grad=True)
    trace = tmp_path_factory.mktemp("prof") / "trace.json"
    # 8 steps: times are wall time, and one preemption in an elementwise line on a loaded CI machine can
    # outweigh a few steps of the matmul (it did in test_profile_inductor and test_profile_compare)
    with one_thread():
        return tracer.profile(model, x, w, steps=8, trace_file=str(trace)), trace


def test_the_expensive_line_comes_first_forward_and_backward(profiled):
    prof, _ = profiled
    top = prof.by_line()[0]
    assert (top.line, top.code) == (_line(model, "big = h @ w"), "big = h @ w")
    assert top.forward_us > 0 and top.backward_us > 0  # mm forward; two mms (grad of h and of w) backward
    backward_mms = [n for n in prof.nodes if n.graph == "backward" and n.dynamo_node == "big"]
    assert len(backward_mms) >= 2 and all("aten::mm" in n.ops for n in backward_mms)
    assert {n.line for n in prof.nodes if n.dynamo_node == "sin"} == {_line(model, "h = torch.sin(x) * 2")}


def test_attributed_and_unattributed_add_up_to_the_profilers_total(profiled):
    prof, _ = profiled
    assert prof.attributed_us + sum(prof.unattributed.values()) == pytest.approx(prof.total_us, rel=1e-9)
    assert prof.attributed_us > 0.5 * prof.total_us  # the matmuls dominate
    # gradient accumulation into .grad is autograd's work, on no graph node: kept by name, not spread
    assert prof.unattributed.get("aten::add_", 0) > 0
    assert not prof.problems


def test_nodes_agree_with_torchs_own_attribution_of_the_trace(profiled):
    """torch's map_recorded_events_to_aten_ops_with_stack_trace reads the same markers from the Chrome
    trace: every aten op it puts on a node, we put on a node of that name (and nothing else)."""
    from torch.profiler._utils import map_recorded_events_to_aten_ops_with_stack_trace

    prof, trace = profiled
    data = json.loads(trace.read_text())
    map_recorded_events_to_aten_ops_with_stack_trace(data)
    theirs = {(e["args"]["node_name"], e["name"]) for e in data["traceEvents"]
              if e.get("cat") == "cpu_op" and e["name"].startswith("aten::") and "node_name" in e.get("args", {})}
    ours = {(n.node, op) for n in prof.nodes for op in n.ops if op.startswith("aten::")}
    assert len(theirs) >= 8 and ours == theirs


def test_round_trip_and_text(profiled):
    prof, _ = profiled
    again = tracer.Profile.from_json(prof.to_json())
    assert again.by_line() == prof.by_line() and again.capture.frames[0].compile_id == "0/0"
    assert "big = h @ w" in prof.table().splitlines()[2] and "attributed" in repr(prof)
    with pytest.raises(ValueError, match="not a dynascope profile"):
        tracer.Profile.from_json('{"fn": 1, "what": 2}')


def test_bad_options_and_nothing_left_patched():
    import torch.fx.experimental._config as fx_config

    x = torch.randn(4)
    with pytest.raises(ValueError, match="unknown backend 'eager'"):
        tracer.profile(torch.sin, x, backend="eager")
    with pytest.raises(ValueError, match="steps must be an int >= 1"):
        tracer.profile(torch.sin, x, steps=0)

    def boom(t):
        return torch.cos(t) + t.item() / 0 if t.sum() > 1e9 else (_ for _ in ()).throw(KeyError("user"))

    with pytest.raises(KeyError):
        tracer.profile(boom, x)
    assert fx_config.enrich_profiler_metadata is False
    from tracer._torch import fx_marks

    assert fx_marks._ACTIVE is None
