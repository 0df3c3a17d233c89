"""Where compile time went: one horizontal bar per compile attempt, split by phase, as inline SVG.

Invariant: every number drawn is torch's own (``Frame.times``, from its compilation metrics) or a
difference of two of them; an attempt whose total torch did not report has no bar (it says "?"),
and a phase torch did not report is not drawn (never guessed). Rendered by an autoescaping template.

>>> from tracer.model import Capture, Frame
>>> f = Frame("0/0", "f.py:1 in f", times={"total": 2.0, "dynamo": 1.5, "backend": 0.5, "aot_autograd": 0.4})
>>> [(s.phase, s.seconds) for s in bars(Capture(frames=[f]))[0].segments]
[('dynamo', 1.5), ('aot_autograd', 0.4), ('backend (other)', 0.1)]
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tracer.model import Capture
from viz.markup import render

__all__ = ["Bar", "Segment", "bars", "time_chart_svg"]

# Phase colours (text legend beside them; colour is never the only carrier of meaning).
COLOURS = {"before restart": "#cbd5e1", "dynamo": "#60a5fa", "aot_autograd": "#34d399",
           "backend (other)": "#fb923c", "unattributed": "#e5e7eb"}


@dataclass
class Segment:
    phase: str  # a COLOURS key
    seconds: float


@dataclass
class Bar:
    compile_id: str
    label: str  # "0/0 compiled  f.py:1 in f"
    total: float | None  # torch's total for the attempt (None: not reported)
    segments: list[Segment] = field(default_factory=list)


def bars(cap: Capture) -> list[Bar]:
    """One bar per attempt. Segments: time before a restart (torch counts the restarted attempts'
    time again in this one's total), Dynamo itself, AOTAutograd, the rest of the backend, and what
    torch's numbers leave unattributed."""
    out = []
    for f in cap.frames:
        t = f.times
        total = t.get("total")
        bar = Bar(f.compile_id, f"{f.compile_id} {f.status}  {f.code}", total)
        if total is not None:
            before = t.get("before_restart") or 0.0
            backend, aot = t.get("backend"), t.get("aot_autograd")
            parts: list[tuple[str, float]] = [("before restart", before)]
            if "dynamo" in t:
                parts.append(("dynamo", t["dynamo"] - before if t["dynamo"] >= before else t["dynamo"]))
            if aot is not None:
                parts.append(("aot_autograd", min(aot, backend) if backend is not None else aot))
            if backend is not None:
                parts.append(("backend (other)", backend - (aot or 0.0) if aot is not None and aot <= backend else backend))
            rest = total - sum(s for _, s in parts)
            parts.append(("unattributed", rest))
            bar.segments = [Segment(p, round(s, 6)) for p, s in parts if s > 1e-6]
        out.append(bar)
    return out


def time_chart_svg(cap: Capture, width: int = 900) -> str:
    """The chart as an inline ``<svg>`` (labels left, bars scaled to the longest total), "" without frames."""
    rows = bars(cap)
    if not rows:
        return ""
    longest = max((b.total or 0.0) for b in rows) or 1.0
    label_w, bar_w, row_h = 330, width - 330 - 70, 18
    drawn = []
    for i, b in enumerate(rows):
        x, rects = float(label_w), []
        for s in b.segments:
            w = s.seconds / longest * bar_w
            rects.append((round(x, 1), round(max(w, 0.5), 1), COLOURS[s.phase], f"{s.phase}: {s.seconds:.3f} s"))
            x += w
        drawn.append((i * row_h + 4, b, rects, round(x + 4, 1)))
    return render("timechart.svg.j2", rows=drawn, width=width, height=len(rows) * row_h + 30,
                  legend=list(COLOURS.items()), label_w=label_w, row_h=row_h)
