"""torch.export's part of a record as HTML: the run (why an export failed, draft_export's report with
user lines) for the overview, and one program's graph signature (inputs and outputs by role, range
constraints beside the shape guards that narrowed them, module call signatures) for its frame: the same
HTML in the static report and in the explorer widget's Signature tab.

Invariant: pure functions from ``tracer.model`` data to HTML text through the autoescaping templates
(viz/markup.py); "" for a record without an export part, so captures render as before.
"""

from __future__ import annotations

from typing import Iterable

from tracer.model import Capture, Frame
from viz.markup import render, user_line_text

__all__ = ["export_run_html", "signature_html"]


def export_run_html(cap: Capture) -> str:
    """The torch.export run: strict or not, status, the failure and draft_export's report; "" for a capture."""
    if cap.export is None:
        return ""
    return render("export.html.j2", run=cap.export, program=None)


def signature_html(frame: Frame) -> str:
    """The frame's graph signature as tables of roles (torch.export's InputKind / OutputKind); "" without one.

    >>> from tracer.model import ExportInput, ExportProgram
    >>> html = signature_html(Frame("0/0", "m.py:1", export=ExportProgram("exported", [ExportInput("p_w", "parameter", "w")])))
    >>> "<td>p_w</td><td>parameter</td><td>w</td>" in html
    True
    """
    p = frame.export
    if p is None:
        return ""
    inputs = [[i.name or "(constant)", i.kind, i.target, "" if i.persistent is None else str(i.persistent)]
              for i in p.inputs]
    outputs = [[o.name or "(constant)", o.kind, o.target] for o in p.outputs]
    ranges = [[r.symbol, f"[{r.lower}, {r.upper}]"] for r in p.range_constraints]
    shape_guards = [[g.expr, user_line_text(g)] for g in frame.shape_guards]
    roles = [_roles(i.kind for i in p.inputs), _roles(o.kind for o in p.outputs)]
    calls = [[c.fqn or "(root)", ", ".join(c.inputs), ", ".join(c.outputs), ", ".join(c.forward_arg_names), c.in_spec]
             for c in p.module_calls]
    return render("export.html.j2", run=None, program=p, inputs=inputs, outputs=outputs, ranges=ranges, calls=calls,
                  shape_guards=shape_guards, roles=roles)


def _roles(kinds: Iterable[str]) -> str:
    """"parameter 2, user_input 1": how many inputs (or outputs) have each role, in signature order."""
    counts: dict[str, int] = {}
    for k in kinds:
        counts[k] = counts.get(k, 0) + 1
    return ", ".join(f"{k} {n}" for k, n in counts.items()) or "none"
