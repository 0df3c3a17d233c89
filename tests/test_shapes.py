"""Shape symbols and specializations come from ShapeEnv's own events, with the user line that caused them."""

from __future__ import annotations

import inspect

import pytest
import torch

import tracer
from tracer.model import validate


def _line(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, ln in enumerate(lines) if text in ln)


def specialized(x, y):
    a = torch.sin(x) + y
    if x.shape[0] % 4 == 0:
        a = a - 1
    if x.shape[0] == 8:
        a = a * 3
    return a


@pytest.fixture(scope="module")
def cap():
    x, y = torch.randn(8), torch.randn(8)
    torch._dynamo.maybe_mark_dynamic(x, 0)
    torch._dynamo.maybe_mark_dynamic(y, 0)
    return tracer.capture(specialized, x, y)


def test_symbols_have_sources_and_match_the_graph_torch_handed_the_backend(cap):
    f = cap.frames[0]
    validate(cap)
    sources = {s.source: s for s in f.symbols}
    assert "L['x'].size()[0]" in sources and "L['y'].size()[0]" in sources
    sx = sources["L['x'].size()[0]"]
    assert sx.value == "8" and not sx.unbacked
    assert sx.user_stack and sx.user_stack[-1].line == _line(specialized, "a = torch.sin(x) + y")


def test_static_specialization_names_the_user_if(cap):
    f = cap.frames[0]
    static = [s for s in f.specializations if s.kind == "static"]
    assert {tuple(s.sources) for s in static} >= {("L['x'].size()[0]",), ("L['y'].size()[0]",)}
    want = _line(specialized, "if x.shape[0] == 8:")
    for s in static:
        assert s.value == "8"
        assert s.user_line is not None and s.user_line.line == want, s
        assert s.guard  # the guard that made it static


def test_divisibility_guard_is_a_specialization_with_its_line(cap):
    f = cap.frames[0]
    div = [s for s in f.specializations if s.kind == "divisibility"]
    assert div and div[0].value == "4"
    assert div[0].user_line.line == _line(specialized, "if x.shape[0] % 4 == 0:")
    assert any("Mod(" in g.expr for g in f.shape_guards)


def test_zero_one_specialization_from_the_symbol_range(cap):
    f = cap.frames[0]
    assert any(s.kind == "zero_one" and s.value.startswith("[2,") for s in f.specializations)


def test_round_trip(cap):
    assert tracer.Capture.from_json(cap.to_json()) == cap


@pytest.mark.problems_expected
def test_mark_dynamic_specialized_by_a_user_if_names_the_line():
    x = torch.randn(8)
    torch._dynamo.mark_dynamic(x, 0)
    with pytest.raises(Exception) as info:  # torch: ConstraintViolationError ("you marked ... as dynamic")
        tracer.capture(lambda t: specialized(t, t), x)
    assert "Constraints violated" in str(info.value)
    frames = info.value.capture.frames
    specs = [s for f in frames for s in f.specializations if s.kind == "static"]
    assert specs, frames
    assert specs[0].sources == ["L['t'].size()[0]"]
    assert specs[0].user_line.line == _line(specialized, "if x.shape[0] == 8:")


def test_shapes_view_names_the_line(cap):
    from viz import code_view

    html = code_view.shapes_html(cap.frames[0])
    assert "L[&#39;x&#39;].size()[0]" in html and "if x.shape[0] == 8:" in html


def test_inspector_names_each_symbol_of_a_size():
    """The inspector of a node whose size is symbolic says what the symbol stands for (ShapeEnv's
    source) and how it was specialized, read from Frame.symbols / Frame.specializations."""
    import viz

    def f(x):
        return x.sin() * 2

    x = torch.randn(6)
    torch._dynamo.mark_dynamic(x, 0)
    frame = tracer.capture(f, x).frames[0]
    (sym,) = frame.symbols
    sin = next(n for n in frame.graph.nodes if n.name == "sin")
    assert sym.name in sin.meta["shape"]
    (line,) = viz.node_info(frame, "", "sin")["symbols"]
    assert line.startswith(f"{sym.name} = L['x'].size()[0]")
    assert all(f"{sp.kind} {sp.value}" in line for sp in frame.specializations if sp.symbol == sym.name)
    assert "symbols" not in viz.node_info(tracer.capture(lambda y: y + 1, torch.randn(3)).frames[0], "", "add")
