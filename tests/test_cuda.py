"""CUDA: Inductor's Triton kernels and their provenance, a CUDA-graphs capture, a CUDA run's TORCH_TRACE log.

Every test but the option checks needs a GPU and skips with the reason where there is none (CI has none;
``bench/RESULTS.md`` says where and when these ran on one). The package itself never needs CUDA: the CPU
suite imports and renders everything. Expected values come from torch's own records: the Dynamo nodes'
source lines (kernel provenance, Note [What Inductor tells us] in tracer/_torch/inductor.py) are checked
against the kernel stack traces Inductor logs, which are an independent record; the log's graphs against
the live capture of the same function; results against eager.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import tracer
from tracer.model import validate


def needs_cuda(test):
    """Marked ``cuda`` (``-m cuda`` selects them on a GPU machine), skipped with the reason without a GPU."""
    skip = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none on this machine)")
    return pytest.mark.cuda(skip(test))


def model(x, w):
    h = torch.sin(x) * 2
    h = h + 1
    m = h @ w
    return torch.relu(m) - 3


def _line(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, ln in enumerate(lines) if text in ln)


def test_mode_is_an_inductor_option():
    with pytest.raises(ValueError, match='pass backend="inductor" too'):
        tracer.CaptureOptions(mode="reduce-overhead")
    with pytest.raises(ValueError, match="unknown mode 'fast'"):
        tracer.CaptureOptions(backend="inductor", mode="fast")


@pytest.mark.slow
def test_reduce_overhead_reaches_inductor_and_is_not_left_set():
    """mode= is passed as torch.compile passes it: Inductor's ``triton.cudagraphs`` is on for this compile
    only. On a CPU graph Inductor then counts a cudagraph skip (torch's own counter), which it does not
    without the mode; on a GPU the graph is recorded and replayed (test below)."""
    from torch._dynamo.utils import counters
    from torch._inductor import config

    device = "cuda" if torch.cuda.is_available() else "cpu"
    x, w = torch.randn(4, 8, device=device), torch.randn(8, 4, device=device)
    skips = counters["inductor"]["cudagraph_skips"]
    plain = tracer.capture(model, x, w, backend="inductor")
    assert counters["inductor"]["cudagraph_skips"] == skips and "mode" not in plain.meta["options"]
    cap = tracer.capture(model, x, w, backend="inductor", mode="reduce-overhead", more_calls=[(x, w), (x, w)])
    validate(cap)
    assert cap.meta["options"]["mode"] == "reduce-overhead" and config.triton.cudagraphs is False
    assert counters["inductor"]["cudagraph_skips"] == skips + (device == "cpu")
    assert [f.compile_id for f in cap.frames] == ["0/0"] and cap.frames[0].inductor[0].kernels
    torch.testing.assert_close(cap.result, model(x, w))


@needs_cuda
@pytest.mark.slow
def test_triton_kernels_map_to_the_nodes_and_lines_they_compute():
    x, w = torch.randn(4, 8, device="cuda"), torch.randn(8, 4, device="cuda")
    cap = tracer.capture(model, x, w, backend="inductor")
    validate(cap)
    assert not cap.all_problems()
    (f,) = cap.frames
    (g,) = f.inductor
    nodes = {n.name: n for n in f.graph.nodes}
    triton = [k for k in g.kernels if k.name.startswith("triton_")]
    assert triton, g.kernels
    for k in g.kernels:
        assert k.name in g.output_code and k.post_grad_nodes and set(k.dynamo_nodes) <= set(nodes)
        # the node mapping and the kernel stack traces are two records torch logs: they name the same lines
        assert {nodes[n].meta["source"]["line"] for n in k.dynamo_nodes} == {s.line for s in k.source_lines}, k
    a, b = _line(model, "h = torch.sin(x) * 2"), _line(model, "h = h + 1")
    fused = [k for k in triton if {a, b} <= {s.line for s in k.source_lines}]
    assert len(fused) == 1, triton  # sin, mul and add in one pointwise Triton kernel
    torch.testing.assert_close(cap.result, model(x, w))
    cap = tracer.Capture.from_json(cap.to_json())
    assert [k.name for k in cap.frames[0].inductor[0].kernels] == [k.name for k in g.kernels]


@needs_cuda
@pytest.mark.slow
def test_backward_triton_kernels_map_to_the_nodes_they_differentiate():
    x = torch.randn(4, 8, device="cuda", requires_grad=True)
    w = torch.randn(8, 4, device="cuda", requires_grad=True)
    cap = tracer.capture(model, x, w, backend="inductor")
    validate(cap)
    (f,) = cap.frames
    fw, bw = f.inductor
    assert fw.aot_id.endswith("_forward") and bw.aot_id.endswith("_backward") and bw.provenance
    nodes = {n.name: n for n in f.graph.nodes}
    assert any(k.name.startswith("triton_") for k in bw.kernels)
    for k in bw.kernels:
        if not k.dynamo_nodes:  # a pattern node without origin: said as a problem, never guessed
            assert any(k.name in p for p in f.problems), k
            continue
        assert {nodes[n].meta["source"]["line"] for n in k.dynamo_nodes} == {s.line for s in k.source_lines}, k
    relu_grad = [k for k in bw.kernels if "threshold_backward" in k.name]
    assert relu_grad and all("relu" in k.dynamo_nodes for k in relu_grad)


@needs_cuda
@pytest.mark.slow
def test_cuda_graphs_capture_records_and_replays():
    """mode="reduce-overhead" on a GPU: Inductor records a CUDA graph (no skip counted) and the
    capture's later calls replay it with the right results."""
    from torch._dynamo.utils import counters

    x, w = torch.randn(4, 8, device="cuda"), torch.randn(8, 4, device="cuda")
    skips = counters["inductor"]["cudagraph_skips"]
    x2 = torch.randn(4, 8, device="cuda")
    cap = tracer.capture(model, x, w, backend="inductor", mode="reduce-overhead", more_calls=[(x2, w), (x, w)])
    validate(cap)
    assert counters["inductor"]["cudagraph_skips"] == skips
    assert [f.compile_id for f in cap.frames] == ["0/0"] and not cap.recompiles
    assert any(k.name.startswith("triton_") for k in cap.frames[0].inductor[0].kernels)
    torch.testing.assert_close(cap.result, model(x, w))


_CHILD = textwrap.dedent('''
    import torch
    def model(x, w):
        h = torch.sin(x) * 2
        h = h + 1
        m = h @ w
        return torch.relu(m) - 3
    x = torch.randn(4, 8, device="cuda", requires_grad=True)
    w = torch.randn(8, 4, device="cuda", requires_grad=True)
    torch.compile(model, backend="inductor")(x, w).sum().backward()
''')


@needs_cuda
@pytest.mark.slow
def test_log_of_a_cuda_run_loads_like_the_live_capture(tmp_path):
    """A CUDA training run's TORCH_TRACE, written by torch in a fresh process with Inductor's provenance
    tracking on and its caches off, loads with the same Dynamo graph (nodes, targets, devices), AOT graphs
    and forward Triton kernels as a live capture of the same function; its backward kernels are unknown,
    and said so (Note [Backward provenance in a log] in tracer/inductor_events.py)."""
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    env = {**os.environ, "TORCH_TRACE": str(tmp_path / "trace"), "INDUCTOR_PROVENANCE": "1",
           "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}
    subprocess.run([sys.executable, str(script)], env=env, check=True, timeout=600)
    logged = tracer.load_trace(str(tmp_path / "trace"))
    validate(logged)
    (problem,) = logged.all_problems()
    assert problem.startswith("frame 0/0: inductor 0_backward: the provenance Inductor logs for a backward compile")
    x = torch.randn(4, 8, device="cuda", requires_grad=True)
    w = torch.randn(8, 4, device="cuda", requires_grad=True)
    live = tracer.capture(model, x, w, backend="inductor")
    (lf,), (vf,) = logged.frames, live.frames

    def nodes(f):
        return [(n.name, n.op, n.target, n.meta.get("device")) for n in f.graph.nodes]

    assert nodes(lf) == nodes(vf)
    assert {n.meta.get("device") for n in lf.graph.nodes if n.meta.get("kind") == "tensor"} == {"cuda:0"}
    assert lf.aot is not None and lf.aot.forward is not None and lf.aot.backward is not None
    (lfw, lbw), (vfw, vbw) = lf.inductor, vf.inductor
    # The child defines ``model`` in a file of its own, so stack frames differ by file and line: compared by
    # function and source text. The output code is not compared line for line: Triton kernels embed the
    # Inductor config they were compiled under (inductor_meta: cache settings) and their cache path.

    def graph(g):
        return [line for line in g.post_grad_graph.split("\n") if not line.lstrip().startswith("# File: ")]

    def kernels(g):
        return [(k.name, k.post_grad_nodes, k.dynamo_nodes, [(s.fn, s.code) for s in k.source_lines]) for k in g.kernels]

    assert graph(lfw) == graph(vfw) and graph(lbw) == graph(vbw)
    assert kernels(lfw) == kernels(vfw) and any(k.name.startswith("triton_") for k in lfw.kernels)
    assert all(f"def {k.name}(" in lfw.output_code for k in lfw.kernels if k.name.startswith("triton_"))
    assert vbw.kernels and not lbw.kernels and "def call(" in lbw.output_code


# Two TORCH_TRACE logs written by torch 2.11.0+cu130 on an NVIDIA H200 (2026-11-26), by a plain script:
# ``torch.compile(model, backend="inductor"[, mode="reduce-overhead"])`` on CUDA tensors that require grad,
# three training steps. ``model`` is the function above; the live capture of it on that machine gave the
# same Dynamo nodes (test_log_of_a_cuda_run_loads_like_the_live_capture passed there).
CUDA_LOGS = os.path.join(os.path.dirname(__file__), "cuda_logs")
# the Dynamo graph of ``model``, as Dynamo names and targets it (torch.sin, operator.mul, ...)
MODEL_NODES = [("l_x_", "L_x_"), ("l_w_", "L_w_"), ("sin", "torch.sin"), ("h", "operator.mul"),
               ("h_1", "operator.add"), ("m", "operator.matmul"), ("relu", "torch.relu"), ("sub", "operator.sub"),
               ("output", "output")]


@pytest.mark.parametrize("log", ["inductor_train.log.gz", "reduce_overhead_train.log.gz"])
def test_a_cuda_runs_log_loads_and_reports_without_a_gpu(log, tmp_path):
    from viz.cli import main

    path = os.path.join(CUDA_LOGS, log)
    cap = tracer.load_trace(path)
    validate(cap)
    assert cap.meta["torch"] == "2.11.0+cu130"
    (f,) = cap.frames
    # Inductor's compiles: code as logged; kernels unknown (a cache hit's provenance, or none logged), and said so
    # (Note [Provenance replayed from a compile cache] in tracer/inductor_events.py); no other problem (runtime
    # metrics events are known)
    assert [g.aot_id for g in f.inductor] == ["0_forward", "0_backward"]
    assert all("def call(" in g.output_code and g.post_grad_graph and not g.kernels for g in f.inductor)
    why = "loaded from the FX graph cache" if log == "inductor_train.log.gz" else "Inductor logged no provenance mapping"
    problems = cap.all_problems()
    assert len(problems) == 2 and all(p.startswith(f"frame 0/0: inductor 0_{kind}: {why}")
                                      and p.endswith("its kernels and their nodes are unknown")
                                      for kind, p in zip(("forward", "backward"), problems, strict=True))
    assert f.status == "compiled" and [(n.name, n.target) for n in f.graph.nodes] == MODEL_NODES
    assert {n.meta["device"] for n in f.graph.nodes if n.op != "output"} == {"cuda:0"}
    assert f.aot is not None and f.aot.forward is not None and f.aot.backward is not None
    assert all(n.meta.get("device") in (None, "cuda:0") for n in f.aot.forward.nodes)
    # the log does not say what the forward saves: said, not printed as "0 saved"
    assert not f.aot.saved_known and not f.aot.saved and "saved values not known" in str(cap)
    again = tracer.Capture.from_json(cap.to_json())
    assert [n.meta.get("device") for n in again.frames[0].graph.nodes] == [n.meta.get("device") for n in f.graph.nodes]
    out = tmp_path / "r.html"
    assert main(["report", path, "-o", str(out)]) == 0  # the static report, in a process without CUDA
    assert "train.py:2 in model" in out.read_text()
