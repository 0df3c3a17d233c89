"""What a Capture shows when a cell evaluates it: the explorer widget, static HTML, and a text tree.

Invariant: ``text/plain`` is ``str(cap)`` (deterministic: no ids, no addresses, no timings) and is
always present; ``text/html`` is self-contained (no kernel, no script needed) for nbconvert and
GitHub, and carries every node's inspector facts as plain tables (viz/node_facts.py); the widget view is added when it is wanted, and a frontend with widgets prefers it.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any, Callable

from tracer.model import Capture

__all__ = ["WIDGET_MIME", "bundle", "mimebundle"]

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def mimebundle(cap: Capture, include: Container[str] | None = None,
               exclude: Container[str] | None = None) -> dict[str, Any]:
    """The ``_repr_mimebundle_`` of a Capture, honouring IPython's ``include``/``exclude``.

    >>> from tracer.model import Capture
    >>> mimebundle(Capture(fn="f"), include={"text/plain"})
    {'text/plain': 'Capture of f: 0 frame(s), 0 graph break(s), 0 recompile(s)'}
    """

    def explorer() -> Any:
        from viz.explorer import Explorer

        return Explorer(cap).widget

    def html() -> str:
        from viz.html import capture_html

        return capture_html(cap, facts=True)  # Note [Node facts without a script] in viz/node_facts.py

    return bundle(explorer, html, str(cap), include, exclude)


def bundle(widget: Callable[[], Any], html: Callable[[], str], text: str, include: Container[str] | None = None,
           exclude: Container[str] | None = None) -> dict[str, Any]:
    """A mime bundle of a widget view, static HTML and text, honouring IPython's ``include``/``exclude``;
    ``widget`` and ``html`` are built only when wanted. ``text/plain`` is always present."""

    def wanted(mime: str) -> bool:
        return (not include or mime in include) and (not exclude or mime not in exclude)

    out: dict[str, Any] = {}
    if wanted(WIDGET_MIME):
        view = widget()._repr_mimebundle_()
        if view and WIDGET_MIME in view:
            out[WIDGET_MIME] = view[WIDGET_MIME]
    if wanted("text/html"):
        out["text/html"] = html()
    out["text/plain"] = text
    return out
