"""The explorer's tabs for torch.export records: "Signature", the shown frame's graph signature (input
and output roles, their table, range constraints beside the shape guards, module call signatures), and
"Decompositions", ``run_decompositions()`` before and after (the mutations that became outputs above
the linked diff of the two programs).

Invariant: the tab shows exactly ``viz.export_view.signature_html`` of the explorer's frame, the HTML the
static report shows for that frame, so the two views cannot drift apart; a capture without exported
programs gets no tab.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as W

from viz.diff_view import decomposition_html
from viz.diff_widget import diffs_tab
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
    explorer's frame choice. ("Decompositions", widget) too when the record has ``run_decompositions()``'s diff."""
    cap = explorer.capture
    if not any(f.export is not None for f in cap.frames):
        return []
    box = W.HTML(signature_tab_html(explorer.frame))
    explorer._frame_choice.observe(lambda _: setattr(box, "value", signature_tab_html(explorer.frame)), "value")
    explorer.signature_tab = box
    out: list[tuple[str, Any]] = [("Signature", box)]
    d = cap.export.decomposition if cap.export is not None else None
    if d is not None:
        linked = diffs_tab(cap, [(f"{d.a} → {d.b}: {d.summary[:120]}", d)], "decomposition")
        explorer.decomposition_tab = W.VBox([W.HTML(decomposition_html(cap, graphs=False)), linked])
        explorer.decomposition_tab.linked = linked
        out.append(("Decompositions", explorer.decomposition_tab))
    return out
