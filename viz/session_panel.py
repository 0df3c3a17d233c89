"""The session panel: where a paused trace stands (source, tracer stack, partial graph, locals, guards).

Invariant: the HTML is a pure function of a PausedState (static, self-contained, deterministic:
Pygments with inline styles and the linear layout) with every user string escaped; the widget adds
Resume / Step / Abort buttons that drive the session from ipywidgets callbacks (so they work while the
kernel is idle) and redraw after each step, through the public ``tracer.Session`` API only (as a user
would). ``text/plain`` is ``str()`` of the object.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any, Optional

import ipywidgets as W
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer
from pygments.styles.default import DefaultStyle

from tracer._text import plural
from tracer.paused import PausedState
from tracer.session import Session
from viz import panels
from viz.canvas import GraphCanvas
from viz.graph_layout import layout
from viz.mimebundle import WIDGET_MIME
from viz.panels import esc
from viz.svg import to_svg

__all__ = ["SessionPanel", "mimebundle", "paused_html", "source_html", "status_html"]

_STYLE = (
    "<style>.ds-session{font:13px/1.4 system-ui,sans-serif;color:#111827}"
    ".ds-session .ds-where{font:bold 13px monospace;margin:4px 0}"
    ".ds-session .ds-src pre{margin:0;font:12px/1.35 monospace;background:#f8fafc;border:1px solid #d0d7de;"
    "padding:4px 6px;overflow:auto}"
    ".ds-session ol.ds-stack{margin:2px 0 8px;padding-left:22px;font:12px monospace}"
    ".ds-session .ds-svg{overflow:auto;max-height:480px;border:1px solid #d0d7de;background:#fff}</style>"
)

class _PausedStyle(DefaultStyle):
    """Pygments' default colours, with the paused line marked in amber."""

    highlight_color = "#fde68a"


def source_html(state: PausedState) -> str:
    """The paused source lines, Pygments-highlighted, with the paused line marked."""
    loc = state.location
    if not loc.context:
        return f"<div class='ds-src'><pre>{esc(loc.code)}</pre></div>"
    formatter = HtmlFormatter(noclasses=True, nowrap=False, linenos="inline", linenostart=loc.context_start,
                              hl_lines=[loc.line - loc.context_start + 1], style=_PausedStyle)
    return f"<div class='ds-src'>{highlight(chr(10).join(loc.context) + chr(10), PythonLexer(stripnl=False), formatter)}</div>"


def _stack_html(state: PausedState) -> str:
    items = []
    for t in state.tracers:
        ops = sum(1 for n in t.graph.nodes if n.op not in ("placeholder", "output"))
        head = "root tracer" if not t.hop else f"{t.hop} body ({t.description})"
        lifted = ""
        if t.lifted:
            pairs = ", ".join(f"{esc(a)} \u2190 {esc(b)}"
                              for a, b in zip(t.lifted_labels(), t.lifted_from, strict=False))
            lifted = f"; lifted: {pairs}"
        items.append(f"<li>{esc(head)}: {plural(len(t.graph.nodes), 'node')}, {plural(ops, 'op')}{lifted}</li>")
    return f"<ol class='ds-stack' start='0'>{''.join(items)}</ol>"


def _locals_html(state: PausedState) -> str:
    rows = []
    for v in state.locals.values():
        if v.is_cell:
            inner = v.cell_contents
            value = f"cell -> {inner.kind} {inner.value}".rstrip() if inner else "cell (empty)"
            node = inner.node if inner else ""
        else:
            value, node = v.value, v.node
        rows.append([v.name, v.kind, value, node])
    return panels.table(["name", "kind", "value", "node"], rows)


def _frames_html(state: PausedState) -> str:
    if len(state.frames) <= 1:
        return ""
    lines = " \u2192 ".join(esc(str(f)) for f in state.frames)
    return f"<div class='ds-muted' style='font:11px monospace'>inlining stack: {lines}</div>"


def graph_svg(state: PausedState) -> str:
    """SVG of the innermost tracer's partial graph (linear layout: deterministic)."""
    return to_svg(layout(state.graph, engine="linear"))


def paused_html(state: PausedState, *, with_graph: bool = True) -> str:
    """Static HTML of a pause: header, highlighted source, tracer stack, graph, locals, guards."""
    label = f": {state.label}" if state.label else ""
    parts = [
        _STYLE, "<div class='ds-session'>",
        f"<div><b>{esc(state.session)}</b>, pause {state.index} ({esc(state.reason)}{esc(label)})</div>",
        f"<div class='ds-where'>{esc(str(state.location))}"
        f" <span class='ds-muted' style='font-weight:normal'>{esc(state.location.instruction)}</span></div>",
        source_html(state),
        _frames_html(state),
        (f"<div class='ds-muted'>Dynamo restarted analysis of this frame: attempt {state.attempt}</div>"
         if state.attempt else ""),
        "<h4>SubgraphTracer stack (root first)</h4>", _stack_html(state),
    ]
    if with_graph:
        name = state.tracers[-1].description or "root" if state.tracers else "root"
        parts.append(f"<h4>partial graph of the innermost tracer ({esc(name)})</h4>")
        parts.append(f"<div class='ds-svg'>{graph_svg(state)}</div>")
    parts.append("<h4>locals (symbolic_locals)</h4>")
    parts.append(panels.panel(_locals_html(state)))
    if state.problems:
        parts.append("<div class='ds-muted'>not read: " + "; ".join(esc(p) for p in state.problems) + "</div>")
    parts.append(f"<details><summary>guards so far ({len(state.guards)})</summary>"
                 f"{panels.guards_html(state.guards)}</details>")
    parts.append("</div>")
    return "".join(parts)


def status_html(text: str) -> str:
    return f"{_STYLE}<div class='ds-session'><pre style='margin:0'>{esc(text)}</pre></div>"


class SessionPanel:
    """The widget of a Session (or of one of its PausedStates): state views plus Resume / Step / Abort.

    It drives ``session`` through its public methods and redraws at every pause and at the end
    (``Session.on_change``), also when a cell rather than a button moved the session. ``state`` is a
    pause to show first (an older one stays visible until a click). ``wait_timeout`` bounds how long a
    button click waits for the next pause before showing "still running".
    """

    def __init__(self, session: Session, *, state: Optional[PausedState] = None, wait_timeout: float = 60.0,
                 height: int = 360) -> None:
        self.session = session
        self.wait_timeout = wait_timeout
        self._shown = state  # a pause to show first (an older one stays visible until a click)
        self.status = W.HTML()
        self.body = W.HTML()
        self.canvas = GraphCanvas(height=height)
        self.message = W.HTML()
        self.buttons = {name: W.Button(description=name, tooltip=tip) for name, tip in [
            ("Resume", "run to the next break or to the end"),
            ("Step", "run to the next source line"),
            ("Abort", "stop tracing"),
        ]}
        self.buttons["Resume"].on_click(lambda _: self.click("resume"))
        self.buttons["Step"].on_click(lambda _: self.click("step"))
        self.buttons["Abort"].on_click(lambda _: self.click("abort"))
        self.widget = W.VBox([self.status, W.HBox(list(self.buttons.values())), self.message, self.body,
                              self.canvas])
        self.refresh()
        session.on_change(self.refresh)  # redraw when the session moves on, whoever moved it

    def click(self, command: str) -> None:
        """What a button does; also callable from Python (tests)."""
        session = self.session
        try:
            if command == "abort":
                session.abort()
            else:
                {"step": session.step, "resume": session.resume}[command]()
                try:
                    session.wait(self.wait_timeout)
                except TimeoutError:
                    self.message.value = status_html(f"still running after {self.wait_timeout:g} s; "
                                                     "click again later or Abort")
                    self.refresh(keep_message=True)
                    return
            self.message.value = ""
        except BaseException as e:  # noqa: B036 - except: display text only (the trace's own error is shown)
            self.message.value = status_html(f"{type(e).__name__}: {e}")
            self.refresh(keep_message=True)
            return
        self.refresh()

    def refresh(self, keep_message: bool = False) -> None:
        """Redraw from the session's current state."""
        session = self.session
        status, state, head = session.status, session.state, session.description
        if self._shown is not None and self._shown != state:
            head = f"showing pause {self._shown.index}; now {head}"
            state = self._shown
        self._shown = None
        if status == "finished":
            err = session.error
            head += f": {type(err).__name__}: {err}" if err is not None else f": {session.capture!r}"
        self.status.value = status_html(head)
        for b in self.buttons.values():
            b.disabled = status != "paused" and not (b.description == "Abort" and status == "running")
        if state is not None:
            self.body.value = paused_html(state, with_graph=False)
            self.canvas.graph = f"{state.session}:{state.index}"  # before the drawing: a new graph is fitted
            self.canvas.draw(layout(state.graph))
            self.canvas.layout.display = ""
        else:
            self.body.value = ""
            self.canvas.draw(None)
            self.canvas.layout.display = "none"
        if not keep_message:
            self.message.value = ""


def mimebundle(obj: Any, include: Container[str] | None = None,
               exclude: Container[str] | None = None) -> dict[str, Any]:
    """``_repr_mimebundle_`` of a Session or PausedState: the panel widget, static HTML and text."""

    def wanted(mime: str) -> bool:
        return (not include or mime in include) and (not exclude or mime not in exclude)

    bundle: dict[str, Any] = {}
    session = obj if isinstance(obj, Session) else Session.of(obj)  # a loaded PausedState has none: no buttons
    if session is not None and wanted(WIDGET_MIME):
        view = SessionPanel(session, state=obj if isinstance(obj, PausedState) else None).widget._repr_mimebundle_()
        if view and WIDGET_MIME in view:
            bundle[WIDGET_MIME] = view[WIDGET_MIME]
    if wanted("text/html"):
        state = obj if isinstance(obj, PausedState) else getattr(obj, "state", None)
        bundle["text/html"] = paused_html(state) if state is not None else status_html(str(obj))
    bundle["text/plain"] = str(obj)
    return bundle
