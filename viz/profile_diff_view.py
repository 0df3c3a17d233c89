"""Static views of a ProfileDiff (eager against compiled): both sides' time per source line and per module, and its mime bundle.

Invariant: reads ``tracer.model`` only; every string from user code (a line's code, a module path) is
escaped by the template (autoescape); the numbers are the ProfileDiff's own, per step. Rows use the
diff colours of :mod:`viz.diff_view` (Note [Diff colours]) with the diff panel's style: side b faster
green, slower red, a row on one side only in italics.
"""

from __future__ import annotations

import pathlib
from collections.abc import Container
from typing import Any, Union

from tracer.model.profile_diff import ProfileDiff, TimeDelta
from viz.markup import fragment, render

__all__ = ["export_profile_diff_html", "mimebundle", "profile_diff_html", "row_class"]

MAX_ROWS = 200  # rows per table; the rest is counted


def _ms(us: float) -> str:
    return f"{us / 1000:.3f}"


def row_class(r: TimeDelta) -> str:
    """The row's diff class: on one side only ("ds-diff-removed": a only), else b faster or slower ("" equal)."""
    if not r.b_us:
        return "ds-diff-removed"
    if not r.a_us:
        return "ds-diff-added"
    return "ds-diff-faster" if r.b_us < r.a_us else "ds-diff-slower" if r.b_us > r.a_us else ""


def _rows(rows: list[TimeDelta], line: bool) -> tuple[list[list[str]], list[str]]:
    cells, classes = [], []
    for r in rows[:MAX_ROWS]:
        where = (f"{r.key.rsplit('/', 1)[-1]}" if r.key != ":0" else "?") if line else r.key
        cell = [where, r.label, _ms(r.a_us), _ms(r.b_us), f"{r.difference_us / 1000:+.3f}", _ms(r.a_backward_us),
                _ms(r.b_backward_us)]
        cells.append(cell + ([_ms(r.shared_b_us) if r.shared_b_us else ""] if line else []))
        classes.append(row_class(r))
    if len(rows) > MAX_ROWS:
        cells.append(["", f"... {len(rows) - MAX_ROWS} more", "", "", "", "", ""] + ([""] if line else []))
        classes.append("")
    return cells, classes


def profile_diff_html(d: ProfileDiff) -> str:
    """Static HTML of ``d``: totals, lines and modules with both sides' ms per step and the difference."""
    lines, line_classes = _rows(d.lines, True)
    modules, module_classes = _rows(d.modules, False)
    return render("profile_diff.html.j2", d=d, total_a=_ms(d.total_a_us), total_b=_ms(d.total_b_us),
                  rest_a=_ms(d.unattributed_a_us), rest_b=_ms(d.unattributed_b_us), lines=lines,
                  line_classes=line_classes, modules=modules, module_classes=module_classes)


def export_profile_diff_html(d: ProfileDiff, path: Union[str, pathlib.Path]) -> pathlib.Path:
    """Write ``d`` as one standalone HTML page (no script); return its path."""
    p = pathlib.Path(path)
    p.write_text(render("page.html.j2", title=f"{d.a} → {d.b}: {d.fn}", body=fragment(profile_diff_html(d))) + "\n",
                 encoding="utf-8")
    return p


def mimebundle(d: ProfileDiff, include: Container[str] | None = None, exclude: Container[str] | None = None) -> dict[str, Any]:
    """The ``_repr_mimebundle_`` of a ProfileDiff: its text table, and the tables as HTML."""
    bundle: dict[str, Any] = {}
    if (not include or "text/html" in include) and (not exclude or "text/html" not in exclude):
        bundle["text/html"] = profile_diff_html(d)
    bundle["text/plain"] = str(d)
    return bundle
