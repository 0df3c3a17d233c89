"""Pause latency: ``s.step()`` over one heavy line until the next paused state (and its panel), against
the time Dynamo itself spends tracing that line.

Invariant: the line's own trace time is measured without any dynascope hook, as the difference of two
plain ``torch.compile(backend="eager")`` first calls (the function with and without the line), each
median of ``repeat`` runs from a fresh Dynamo state.
"""

from __future__ import annotations

from typing import Any

import torch

import tracer
from bench.timing import fresh, median, timed
from viz.session_panel import paused_html

__all__ = ["run"]


def _block(size: str) -> torch.nn.Module:
    """The heavy line's module: torch.nn code only, so stepping does not stop inside it."""
    torch.manual_seed(0)
    layers, hidden = (2, 128) if size == "full" else (1, 16)
    return torch.nn.Sequential(*[
        torch.nn.TransformerEncoderLayer(hidden, 4 if hidden >= 64 else 2, dim_feedforward=2 * hidden,
                                         dropout=0.0, batch_first=True)
        for _ in range(layers)
    ])


def _functions(block: torch.nn.Module) -> tuple[Any, Any]:
    def with_line(x):
        tracer.pause("before the line")
        y = x.sin()
        y = block(y)  # the line stepped over
        return y.cos()

    def without_line(x):
        tracer.pause("before the line")
        y = x.sin()
        return y.cos()

    return with_line, without_line


def _step_once(fn: Any, x: torch.Tensor) -> tuple[float, float]:
    """Pause before ``y = x.sin()``, step to before the heavy line, then time one more step (over it)."""
    s = tracer.trace(fn, x, pause_timeout=120.0)
    try:
        s.start().wait(timeout=120)  # at tracer.pause(...)
        s.step()
        s.wait(timeout=120)  # before ``y = x.sin()``
        s.step()
        s.wait(timeout=120)  # before ``y = block(y)``
        t = timed(lambda: (s.step(), s.wait(timeout=120))[1])  # over the heavy line
        panel = timed(lambda: paused_html(t.result))
        if t.result is None:
            raise RuntimeError(f"the session did not pause after the stepped line: {s!r}")
        return t.wall, t.wall + panel.wall
    finally:
        _finish(s)


def _finish(s: Any) -> None:
    """Resume until the session finishes (or abort it if it will not), so no hook outlives it."""
    for _ in range(100):
        if s.status != "paused":
            break
        s.resume()
        s.wait(timeout=120)
    if s.status in ("running", "paused"):
        s.abort()
        try:
            s.wait(timeout=120)
        except tracer.TraceAborted:
            pass


def run(*, repeat: int = 5, size: str = "full") -> dict[str, Any]:
    """``pause_step_ratio``: step-to-next-state seconds ÷ Dynamo's own seconds for that line."""
    block = _block(size)
    x = torch.randn(2, 8, 128 if size == "full" else 16)
    with_line, without_line = _functions(block)

    def compile_s(fn: Any) -> float:
        fresh()
        return timed(lambda: torch.compile(fn, backend="eager")(x)).wall

    compile_s(with_line)
    compile_s(without_line)  # warm-up
    _step_once(with_line, x)
    steps, panels, line = [], [], []
    for _ in range(repeat):
        a, b = compile_s(with_line), compile_s(without_line)
        line.append(a - b)
        fresh()
        s, p = _step_once(with_line, x)
        steps.append(s)
        panels.append(p)
    fresh()
    line_s = max(median(line), 1e-6)
    return {
        "pause_step_ratio": round(median(steps) / line_s, 3),
        "pause_step_panel_ratio": round(median(panels) / line_s, 3),
        "pause_step_seconds": round(median(steps), 4),
        "pause_line_trace_seconds": round(line_s, 4),
    }
