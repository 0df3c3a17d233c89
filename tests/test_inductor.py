"""backend="inductor": Inductor's post-grad graph, output code and kernel provenance, per frame.

One real CPU Inductor capture for the module (a cold compile takes ~10 s on 2 cores).
"""

from __future__ import annotations

import inspect
import re

import pytest
import torch

import tracer
from tracer.model import validate

pytestmark = pytest.mark.slow


def _line(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, ln in enumerate(lines) if text in ln)


def model(x, w):
    h = torch.sin(x) * 2
    h = h + 1
    m = h @ w
    return torch.relu(m) - 3


@pytest.fixture(scope="module")
def captured():
    import torch._inductor.config as config

    before = (config.trace.provenance_tracking_level, config.fx_graph_cache)
    x, w = torch.randn(4, 8), torch.randn(8, 4)
    cap = tracer.capture(model, x, w, backend="inductor")
    assert (config.trace.provenance_tracking_level, config.fx_graph_cache) == before  # never left patched
    return cap, model(x, w)


@pytest.fixture
def cap(captured):
    return captured[0]


def _kernels_at(graph, line):
    return [k for k in graph.kernels if any(s.line == line for s in k.source_lines)]


def test_one_frame_one_inference_graph_with_code(cap, captured):
    validate(cap)
    assert cap.meta["options"]["backend"] == "inductor"
    (f,) = cap.frames
    assert f.aot is None and len(f.inductor) == 1
    g = f.inductor[0]
    assert g.aot_id.endswith("_inference") and g.provenance
    assert "def call(" in g.output_code and "class <lambda>" in g.post_grad_graph
    torch.testing.assert_close(cap.result, captured[1])  # the compiled code computed the function


def test_output_code_contains_the_kernel_of_a_named_line(cap):
    g = cap.frames[0].inductor[0]
    (k,) = _kernels_at(g, _line(model, "return torch.relu(m) - 3"))
    assert f"{k.name}(" in g.output_code or f"{k.name} = " in g.output_code
    for n in k.post_grad_nodes:
        assert f"{n}: " in g.post_grad_graph  # the post-grad nodes torch names are in its own graph text


def test_fused_kernel_maps_to_two_source_lines(cap):
    f = cap.frames[0]
    g = f.inductor[0]
    a, b = _line(model, "h = torch.sin(x) * 2"), _line(model, "h = h + 1")
    fused = [k for k in g.kernels if {a, b} <= {s.line for s in k.source_lines}]
    assert len(fused) == 1, g.kernels
    k = fused[0]
    # cross-check with Dynamo's graph: the kernel's Dynamo nodes carry those lines in their own meta
    nodes = {n.name: n for n in f.graph.nodes}
    lines = {nodes[n].meta.get("source", {}).get("line") for n in k.dynamo_nodes}
    assert {a, b} <= lines


def test_every_kernel_is_in_the_code_and_maps_to_graph_nodes(cap):
    f = cap.frames[0]
    g = f.inductor[0]
    graph_nodes = {n.name for n in f.graph.nodes}
    assert g.kernels
    for k in g.kernels:
        assert k.name in g.output_code and k.post_grad_nodes and set(k.dynamo_nodes) <= graph_nodes


def test_round_trip(cap):
    cap = tracer.Capture.from_json(cap.to_json())
    assert cap.frames[0].inductor[0].kernels


def test_code_tab_colours_kernels_and_choosing_one_selects_its_nodes(cap):
    from viz import code_view
    from viz.explorer import Explorer

    f = cap.frames[0]
    g = f.inductor[0]
    colours = code_view.kernel_colours(g)
    assert set(colours) == {n for k in g.kernels for n in k.post_grad_nodes}
    ex = Explorer(cap)
    fused = next(k for k in g.kernels if len(k.source_lines) >= 2)
    assert len(fused.dynamo_nodes) >= 2 and len(fused.post_grad_nodes) >= 2
    ex.code_tab.kernel_choice.value = code_view.kernel_key(g, fused)
    assert ex.node == fused.dynamo_nodes[0]  # the kernel's first node selected in the graph...
    assert set(ex.canvas.drawing["hi"]) == set(fused.dynamo_nodes)  # ...and every node it computes highlighted
    html = ex.code_tab.html.value
    assert f"font-weight:bold\"><code>{fused.name}</code>" in html
    for n in fused.post_grad_nodes:  # every post-grad node of the kernel marked in the post-grad graph
        assert re.search(rf'font-weight:bold">\s*{n}: ', html), n
    others = [n for k in g.kernels if k is not fused for n in k.post_grad_nodes if n not in fused.post_grad_nodes]
    assert others and not any(re.search(rf'font-weight:bold">\s*{n}: ', html) for n in others)
    # and the reverse: a node selected in the graph marks its kernel and highlights all the kernel's nodes
    ex.code_tab.kernel_choice.value = ""
    ex.select("")  # clears the highlight
    assert ex.canvas.drawing["hi"] == []
    ex.select_node(fused.dynamo_nodes[-1])
    assert set(ex.canvas.drawing["hi"]) == set(fused.dynamo_nodes)
    assert f"font-weight:bold\"><code>{fused.name}</code>" in ex.code_tab.html.value


def trained(x, w):
    h = torch.sin(x) * 2
    return torch.relu(h @ w) - 3


def test_backward_kernels_map_to_the_dynamo_nodes_they_differentiate():
    """A real training capture: every backward kernel maps to Dynamo nodes (by autograd seq_nr, Note
    [Backward kernels and their Dynamo nodes]); checked against torch's own, independent record: the
    kernel stack traces Inductor logs for the backward name exactly the lines of those nodes."""
    x, w = torch.randn(4, 8, requires_grad=True), torch.randn(8, 4, requires_grad=True)
    cap = tracer.capture(trained, x, w, backend="inductor")
    validate(cap)
    (f,) = cap.frames
    fw, bw = f.inductor
    assert fw.aot_id.endswith("_forward") and bw.aot_id.endswith("_backward") and bw.provenance
    nodes = {n.name: n for n in f.graph.nodes}
    assert bw.kernels
    for k in bw.kernels:
        assert k.post_grad_nodes and k.dynamo_nodes, k
        for p in k.post_grad_nodes:
            assert f"{p}: " in bw.post_grad_graph  # nodes of torch's own backward post-grad graph
        assert {nodes[n].meta["source"]["line"] for n in k.dynamo_nodes} == {s.line for s in k.source_lines}, k
    by_name = {k.name: k for k in bw.kernels}
    relu_grad = next(k for name, k in by_name.items() if "threshold_backward" in name)
    assert relu_grad.dynamo_nodes == ["relu"]  # relu's derivative: where(le, 0, grad)
    mms = [k for k in bw.kernels if k.name == "extern_kernels.mm"]
    assert len(mms) == 2 and all(k.dynamo_nodes == ["matmul"] for k in mms)  # grad wrt h and wrt w
    chain = next(k for k in bw.kernels if "cos" in k.name)
    assert set(chain.dynamo_nodes) == {"sin", "h"}  # d/dx of sin(x) * 2: cos(x) * 2 * grad
    assert not cap.all_problems()
    # Note [Kernel identity]: the forward's mm and the backward's two are three entries, each chosen alone
    from viz import code_view, node_info
    from viz.explorer import Explorer

    choices = code_view.kernel_choices(f)
    assert len(choices) == len(fw.kernels) + len(bw.kernels) == len({key for _, key in choices})
    mm_labels = [label for label, _ in choices if label.startswith("extern_kernels.mm ")]
    assert mm_labels == [f"extern_kernels.mm ({fw.aot_id})", f"extern_kernels.mm ({bw.aot_id}, call 1 of 2)",
                         f"extern_kernels.mm ({bw.aot_id}, call 2 of 2)"]
    ex = Explorer(cap)
    ex.code_tab.kernel_choice.value = code_view.kernel_key(bw, chain)
    assert ex.node == chain.dynamo_nodes[0] and set(ex.canvas.drawing["hi"]) == set(chain.dynamo_nodes)
    bold = re.findall(r'font-weight:bold"><code>([^<]+)</code>', ex.code_tab.html.value)
    # that kernel, and the kernels of the node it selected (sin's forward kernel), never a namesake
    assert chain.name in bold and "extern_kernels.mm" not in bold
    # a node lists every kernel that computes it, forward and backward
    assert node_info(f, "", "matmul")["kernels"] == [f"extern_kernels.mm ({fw.aot_id})",
                                                      f"extern_kernels.mm ({bw.aot_id})", f"extern_kernels.mm ({bw.aot_id})"]


def addmm_pattern(x, w):
    h = torch.sin(x) * 2
    return torch.relu(h @ w).sum(0) - 3 * torch.relu(h @ w).mean()


@pytest.mark.problems_expected
def test_a_backward_node_without_recorded_origin_is_a_problem_not_a_guess():
    """Inductor's mm+add -> addmm pattern makes backward nodes whose NodeSource names no node: their
    kernels keep the post-grad nodes, map no Dynamo node for them, and the problem names them."""
    x, w = torch.randn(4, 8, requires_grad=True), torch.randn(8, 4, requires_grad=True)
    cap = tracer.capture(addmm_pattern, x, w, backend="inductor")
    validate(cap)
    bw = cap.frames[0].inductor[1]
    unmapped = [k for k in bw.kernels if not k.dynamo_nodes]
    if not unmapped:
        pytest.skip("Inductor made no pattern node without origin for this graph in this torch")
    for k in unmapped:
        assert any(k.name in p and "whose forward node torch did not record" in p for p in cap.frames[0].problems)
    mapped = [k for k in bw.kernels if k.dynamo_nodes]
    assert mapped and all(set(k.dynamo_nodes) <= {n.name for n in cap.frames[0].graph.nodes} for k in mapped)
