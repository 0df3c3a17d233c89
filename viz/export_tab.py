"""The explorer's "Signature" tab for torch.export records: the shown frame's graph signature (input and
output roles, their table, range constraints beside the shape guards, module call signatures).

Invariant: the tab shows exactly ``viz.export_view.signature_html`` of the explorer's frame, the HTML the
static report shows for that frame, so the two views cannot drift apart; a capture without exported
programs gets no tab.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as W

from viz.export_view import signature_html
from viz.markup import fragment, render

__all__ = ["pages", "signature_tab_html"]


def signature_tab_html(frame: Any) -> str:
    """The tab's HTML for ``frame`` (a :class:`tracer.model.Frame` or None)."""
    if frame is None or frame.export is None:
        return render("export_tab.html.j2", frame=frame, body=None)
    return render("export_tab.html.j2", frame=frame, body=fragment(signature_html(frame)))


def pages(explorer: Any) -> list[tuple[str, Any]]:
    """("Signature", widget) when the explorer's capture holds an exported program; the widget follows the
    explorer's frame choice."""
    if not any(f.export is not None for f in explorer.capture.frames):
        return []
    box = W.HTML(signature_tab_html(explorer.frame))
    explorer._frame_choice.observe(lambda _: setattr(box, "value", signature_tab_html(explorer.frame)), "value")
    explorer.signature_tab = box
    return [("Signature", box)]
