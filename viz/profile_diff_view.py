"""Views of a ProfileDiff (eager against compiled): both sides' time per source line and per module as
static HTML, the :class:`ProfileDiffView` widget (the same tables, sorted as picked), and its mime bundle.

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

__all__ = ["ProfileDiffView", "SORTS", "export_profile_diff_html", "mimebundle", "profile_diff_html", "row_class"]

MAX_ROWS = 200  # rows per table; the rest is counted
# how the widget orders the rows: the ProfileDiff's own order (the larger side's time), or by difference
SORTS = {"time": None, "compiled faster first": lambda r: r.difference_us, "compiled slower first": lambda r: -r.difference_us}


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


def profile_diff_html(d: ProfileDiff, sort: str = "time") -> str:
    """Static HTML of ``d``: totals, lines and modules with both sides' ms per step and the difference;
    ``sort``: one of SORTS (side b's rows called "compiled")."""
    if sort not in SORTS:
        raise ValueError(f"unknown sort {sort!r} (must be one of {list(SORTS)})")
    key = SORTS[sort]
    lines, line_classes = _rows(sorted(d.lines, key=key) if key else d.lines, True)
    modules, module_classes = _rows(sorted(d.modules, key=key) if key else d.modules, False)
    return render("profile_diff.html.j2", d=d, total_a=_ms(d.total_a_us), total_b=_ms(d.total_b_us),
                  rest_a=_ms(d.unattributed_a_us), rest_b=_ms(d.unattributed_b_us), lines=lines,
                  line_classes=line_classes, modules=modules, module_classes=module_classes)


def export_profile_diff_html(d: ProfileDiff, path: Union[str, pathlib.Path]) -> pathlib.Path:
    """Write ``d`` as one standalone HTML page (no script); return its path."""
    p = pathlib.Path(path)
    p.write_text(render("page.html.j2", title=f"{d.a} → {d.b}: {d.fn}", body=fragment(profile_diff_html(d))) + "\n",
                 encoding="utf-8")
    return p


class ProfileDiffView:
    """The widget of a ProfileDiff: a choice of order (SORTS) above the tables of :func:`profile_diff_html`.

    ``view.sort.value = "compiled slower first"`` does from Python what picking it does in the browser;
    ``view.widget`` is the ipywidgets box to display.
    """

    def __init__(self, d: ProfileDiff) -> None:
        import ipywidgets as W

        self.diff = d
        self.sort = W.Dropdown(options=list(SORTS), value="time", description="order")  # labels are text, never HTML
        self.tables = W.HTML(profile_diff_html(d))
        self.sort.observe(lambda _: setattr(self.tables, "value", profile_diff_html(d, self.sort.value)), "value")
        self.widget = W.VBox([self.sort, self.tables])

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
        return self.widget._repr_mimebundle_(include=include, exclude=exclude)


def mimebundle(d: ProfileDiff, include: Container[str] | None = None, exclude: Container[str] | None = None) -> dict[str, Any]:
    """The ``_repr_mimebundle_`` of a ProfileDiff: the widget, its tables as static HTML, and its text table."""
    from viz.mimebundle import bundle

    return bundle(lambda: ProfileDiffView(d).widget, lambda: profile_diff_html(d), str(d), include, exclude)
