"""Graph.code is print_readable text; during a capture it is the text torch itself already rendered.

See Note [Graph text torch already rendered] in tracer/_torch/structured.py.
"""

from __future__ import annotations

import torch

import tracer
from tracer._torch import structured
from tracer._torch.aot import compile_aot
from tracer.model import Frame


def f(x, w):
    return (x @ w).relu().sum(0)


def test_capture_reuses_the_graph_text_torch_logged():
    cap = tracer.capture(f, torch.randn(3, 4, requires_grad=True), torch.randn(4, 5, requires_grad=True))
    fr = cap.frames[0]
    a = fr.aot
    # The logged variant is rendered with strides and devices: "f32[3, 4][4, 1]cpu".
    assert 'L_x_: "f32[3, 4][4, 1]cpu"' in fr.graph.code
    assert '"f32[3, 4][4, 1]cpu"' in a.forward.code and "aten.mm.default" in a.forward.code
    assert "tangents_1" in a.backward.code and "tangents" in a.joint.code
    # Every node of each graph appears in its text (the text is of the same graph).
    for g in (fr.graph, a.joint, a.forward, a.backward):
        for n in g.nodes:
            if n.op not in ("output", "placeholder"):
                assert f"{n.name}:" in g.code or f"{n.name} =" in g.code, (g.name, n.name)
    assert structured._ACTIVE_HANDLER is None  # detached after the capture


def test_without_a_capture_the_text_is_rendered_here():
    frame = Frame(compile_id="0/0", code="?")
    compiled = torch.compile(f, backend=lambda gm, ex: compile_aot(gm, ex, frame=frame))
    compiled(torch.randn(3, 4), torch.randn(4, 5))
    code = frame.aot.inference.code
    assert code.startswith("class ") and "aten.mm.default" in code
    assert "[4, 1]cpu" not in code  # our own print_readable, without strides
