"""tracer.profile with backend="inductor": time per kernel through the recorded kernel provenance, per user line."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
import torch

import tracer
from tests.test_profile import _line, one_thread  # the line of `fn` holding `text`; torch on one thread


def fused(x, w):
    s = torch.sin(x)
    h = s * 2
    big = h @ w
    return torch.relu(big) + 1


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    torch.manual_seed(0)
    # the matmul: 64*512*2048 multiply-adds, against elementwise work on 64*512 values
    x, w = torch.randn(64, 512, requires_grad=True), torch.randn(512, 2048, requires_grad=True)
    trace = tmp_path_factory.mktemp("prof") / "trace.json"
    tracer.capture(lambda t: t.cos() + 1, torch.randn(3))  # so torch's compile ids differ from the capture's own
    # 8 steps on one thread: kernel times are wall time, so on a loaded machine (CI runs two suites on two
    # cores) one preemption inside the small fused kernel once outweighed 3 steps of the matmul, and with two
    # threads its parallel regions' waits outweighed 8 (torch 2.11)
    with one_thread():
        prof = tracer.profile(fused, x, w, backend="inductor", steps=8, trace_file=str(trace))
    assert prof.capture.frames[0].dynamo_id != prof.capture.frames[0].compile_id == "0/0"
    return prof, trace


def _trace_cpu_time(data: dict) -> float:
    """The profiler's own total from its Chrome trace: per thread, the time covered by its CPU op events."""
    spans: dict[tuple, list[tuple[float, float]]] = defaultdict(list)
    for e in data["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation"):
            spans[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    total = 0.0
    for iv in spans.values():
        end = float("-inf")
        for s, t in sorted(iv):
            if t > end:
                total += t - max(s, end)
                end = t
    return total


def test_the_expensive_line_comes_first(profiled):
    prof, _ = profiled
    top = prof.by_line()[0]
    assert (top.line, top.code) == (_line(fused, "big = h @ w"), "big = h @ w")
    assert top.forward_us > 0 and top.backward_us > 0 and top.shared_us == 0
    mms = [n for n in prof.nodes if n.node.startswith("extern_kernels.mm:")]
    assert {n.graph for n in mms} == {"forward", "backward"} and all("aten::mm" in n.ops for n in mms)
    assert all(n.dynamo_nodes == ["big"] for n in mms)
    assert not prof.problems


def test_a_fused_kernel_is_shown_on_both_its_lines_as_shared(profiled):
    prof, _ = profiled
    k = next(n for n in prof.nodes if n.graph == "forward" and set(n.dynamo_nodes) == {"s", "h"})
    assert k.node.startswith("cpp_fused_") and k.ops.get("(kernel)", 0) > 0
    assert {ln for _, ln, _ in k.lines()} == {_line(fused, "s = torch.sin(x)"), _line(fused, "h = s * 2")}
    rows = {r.line: r for r in prof.by_line()}
    for ln in (_line(fused, "s = torch.sin(x)"), _line(fused, "h = s * 2")):
        assert rows[ln].shared_us >= k.self_us > 0 and f"{k.compile_id} forward.{k.node}" in rows[ln].nodes
    assert "shared" in prof.table()


def test_every_kernel_the_profiler_saw_is_a_recorded_kernel(profiled):
    """The kernel markers in torch's own trace name kernels of the capture's Inductor graphs, and each is on a node."""
    prof, trace = profiled
    data = json.loads(trace.read_text())
    marked = {e["name"].split("_", 2)[2] for e in data["traceEvents"] if e.get("name", "").startswith("graph_")}
    recorded = {k.name for g in prof.capture.frames[0].inductor for k in g.kernels}
    ours = {n.node.rpartition(":")[0] for n in prof.nodes}
    assert marked and marked <= recorded and marked <= ours
    assert {g.aot_id.rpartition("_")[2] for g in prof.capture.frames[0].inductor} == {"forward", "backward"}


def test_attributed_and_unattributed_add_up_to_the_profilers_total(profiled):
    prof, trace = profiled
    assert prof.attributed_us + sum(prof.unattributed.values()) == pytest.approx(prof.total_us, rel=1e-9)
    assert prof.total_us == pytest.approx(_trace_cpu_time(json.loads(trace.read_text())), rel=0.01)
    assert prof.attributed_us > 0.3 * prof.total_us
    assert prof.unattributed.get("aten::add_", 0) > 0  # gradient accumulation: autograd's, on no kernel


def test_round_trip(profiled):
    prof, _ = profiled
    again = tracer.Profile.from_json(prof.to_json())
    assert again.by_line() == prof.by_line() and again.nodes == prof.nodes and again.backend == "inductor"


def _raises_after_a_graph(t):
    y = torch.cos(t) + 1
    raise KeyError(f"user error after {y.shape}")


def test_modes_other_than_default_are_refused_and_the_kernel_markers_are_switched_off_after():
    import torch._inductor.config as config

    with pytest.raises(ValueError, match="default mode"):
        tracer.profile(torch.sin, torch.randn(4), backend="inductor", mode="max-autotune")
    before = config.cpp.enable_kernel_profile
    with pytest.raises(KeyError):
        tracer.profile(_raises_after_a_graph, torch.randn(4), backend="inductor")
    assert config.cpp.enable_kernel_profile == before


def _two_graphs(x):
    y = x.sin()
    torch._dynamo.graph_break()
    return y.cos() @ x.T


def test_two_frames_each_backward_kernel_on_its_own_frame():
    """After a graph break each frame has its own forward and backward compile; a backward call is
    tied to its frame by the graph id its kernel markers carry (Note [Profiler time per Inductor kernel])."""
    prof = tracer.profile(_two_graphs, torch.randn(128, 128, requires_grad=True), backend="inductor", steps=1)
    compiled = [f for f in prof.capture.frames if f.inductor]  # the first frame restarts once at the break
    assert not prof.problems and len(compiled) == 2
    first, second = (f.compile_id for f in compiled)
    kinds = {(n.compile_id, n.graph): set() for n in prof.nodes}
    for n in prof.nodes:
        kinds[(n.compile_id, n.graph)].update(n.dynamo_nodes)
    assert set(kinds) == {(first, "forward"), (first, "backward"), (second, "forward"), (second, "backward")}
    assert kinds[(first, "backward")] == {"y"} and "matmul" in kinds[(second, "backward")]
