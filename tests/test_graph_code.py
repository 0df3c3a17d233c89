"""Graph.code is print_readable text; during a capture it is the text torch itself already rendered.

See Note [Graph text torch already rendered] in tracer/_torch/structured.py.
"""

from __future__ import annotations

import logging

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


def _with_setitem(x, idx, v):
    y = x.clone()
    y[idx] = v  # operator.setitem in Dynamo's graph: fx prints "y[idx] = v;  setitem = y"
    y += 1  # operator.iadd: "y += 1;  y_1 = y"
    return y.sin()


class _Payloads(logging.Handler):
    """Keeps the ``dynamo_output_graph`` payload torch logs (the handler is real; torch formats for it)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "metadata", None)
        if isinstance(meta, dict) and "dynamo_output_graph" in meta:
            self.texts.append(record.payload)


def test_the_dynamo_graph_text_with_setitem_is_torch_s_own():
    # Dynamo's graph of an indexed assignment holds an operator.setitem node, printed as an in-place
    # statement; its text is still recognised as the backend's graph, so the capture keeps torch's
    # text (the very string torch logged) instead of rendering the graph a second time.
    from torch._logging._internal import trace_log

    seen = _Payloads()
    trace_log.addHandler(seen)
    try:
        cap = tracer.capture(_with_setitem, torch.randn(4, 3), torch.tensor([0, 2]), torch.randn(3))
    finally:
        trace_log.removeHandler(seen)
    fr = cap.frames[0]
    assert "operator.setitem" in {n.target for n in fr.graph.nodes}
    assert "] = " in fr.graph.code and "setitem = " in fr.graph.code and " += " in fr.graph.code
    assert len(seen.texts) == 1 and fr.graph.code is seen.texts[0]


def test_statement_names_read_in_place_and_setitem_lines():
    # The names of fx's printed statements, read from torch's own print_readable of a real Dynamo graph.
    from tracer._torch.graph_passes import _expected_names, _statement_names

    got: list = []

    def keep(gm, example_inputs):
        got.append(gm)
        return gm.forward

    torch.compile(_with_setitem, backend=keep)(torch.randn(4, 3), torch.tensor([0, 2]), torch.randn(3))
    (gm,) = got
    text = gm.print_readable(print_output=False, include_stride=True, include_device=True)
    assert "y[l_idx_] = l_v_;  setitem = y" in text and "y += 1;  y_1" in text
    assert _statement_names(text) == _expected_names(gm) == ["l_x_", "l_idx_", "l_v_", "y", "setitem", "y_1", "sin"]
