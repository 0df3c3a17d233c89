"""Static views of a FrameDiff: HTML (summary, input and guard tables, the two graphs side by side
with added / removed / changed nodes coloured) and its mime bundle. The explorer's linked view is in
:mod:`viz.diff_widget`.

Invariant: reads ``tracer.model`` only; every string from user code is escaped, by the templates
(autoescape) or, inside SVG, by :mod:`viz.svg`, which also writes the diff's classes (from a fixed
set) and ``data-partner`` attributes (``to_svg(classes=, data=)``): nothing here edits markup. The
static HTML is deterministic and has no script. See Note [Diff colours].
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any, Optional

from tracer.model import Capture, Frame, FrameDiff, Graph, GraphDiff
from tracer.model.diff import frame_graphs
from viz.markup import fragment, render
from viz.svg import to_svg

__all__ = ["decomposition_html", "diff_html", "frame_of", "graph_diff_svg", "mimebundle", "recompiles_html"]

# Note [Diff colours]
# ~~~~~~~~~~~~~~~~~~~
# A node of graph a without partner is "removed" (red), one of graph b "added" (green), a matched
# pair with a difference "changed" (amber) on both sides; unchanged partners keep their role colour.
# The class goes on the box's <g> next to viz.svg's own classes, so role styles and the diff style
# combine. Graphs above MAX_DRAWN nodes are listed in tables only (a joint graph of a 12-layer
# transformer is ~2k nodes: two of them side by side are unreadable and slow to lay out).
MAX_DRAWN = 400
MAX_ROWS = 60  # rows per node table; the rest is counted. Guard rows past it are folded (Note [Long guard diffs])
_CSS = (".ds-diff-added rect{fill:#dcfce7;stroke:#16a34a;stroke-width:2.5}"
        ".ds-diff-removed rect{fill:#fee2e2;stroke:#dc2626;stroke-width:2.5}"
        ".ds-diff-changed rect{fill:#fef3c7;stroke:#d97706;stroke-width:2.5}"
        ".ds-diff-partner rect{stroke:#7c3aed;stroke-width:4}")


# Note [Long guard diffs]
# ~~~~~~~~~~~~~~~~~~~~~~~
# Two frames of different shapes differ in nearly every guard (a 12-layer transformer: 1,469 changed
# TENSOR_MATCH rows, 0.55 MB of HTML), and a browser lays a table out whole: such a diff took most
# of a second to show on a busy machine, its own decoding 40-60 ms. So the first MAX_ROWS guard rows
# are the table and the others a second table inside a folded ``<details>``, which the browser lays
# out only when it is opened. Every row is still in the page (nothing is counted instead of shown).


def _status(gd: GraphDiff, side: str) -> tuple[dict[str, str], dict[str, str]]:
    """node name -> diff class, and node name -> partner name, for side "a" or "b"."""
    cls: dict[str, str] = {n: "ds-diff-removed" for n in gd.removed} if side == "a" else {n: "ds-diff-added" for n in gd.added}
    partner: dict[str, str] = {}
    for p in gd.pairs:
        mine, other = (p.a, p.b) if side == "a" else (p.b, p.a)
        partner[mine] = other
        if p.changes:
            cls[mine] = "ds-diff-changed"
    return cls, partner


def graph_diff_svg(graph: Graph, gd: GraphDiff, side: str) -> str:
    """The SVG of one side's graph (linear layout and first view as in the static report) with Note [Diff colours]."""
    from viz.graph_layout import first_view

    cls, partner = _status(gd, side)
    return to_svg(first_view(graph)[1],
                  classes={name: [c] for name, c in cls.items()},
                  data={name: {"partner": other} for name, other in partner.items()}, style=_CSS)


def _rows(gd: GraphDiff) -> list[list[str]]:
    rows = [["changed", p.a, p.b, "; ".join(p.changes)] for p in gd.changed]
    rows += [["removed", n, "", ""] for n in gd.removed] + [["added", "", n, ""] for n in gd.added]
    if len(rows) > MAX_ROWS:
        rows = rows[:MAX_ROWS] + [["", "", "", f"... {len(rows) - MAX_ROWS} more"]]
    return rows


def _graph_sections(d: FrameDiff, a: Optional[Frame], b: Optional[Frame]) -> list[dict[str, Any]]:
    ga = frame_graphs(a) if a is not None else {}
    gb = frame_graphs(b) if b is not None else {}
    out = []
    for gd in d.graphs:
        if not gd:
            continue
        title = gd.a or "root" if gd.a == gd.b else f"{gd.a or 'root'} ↔ {gd.b or 'root'}"
        left, right = ga.get(gd.a), gb.get(gd.b)
        drawn = left is not None and right is not None and max(len(left.nodes), len(right.nodes)) <= MAX_DRAWN
        out.append({
            "title": title, "counts": f"{len(gd.changed)} changed, {len(gd.added)} added, {len(gd.removed)} removed",
            "left": fragment(graph_diff_svg(left, gd, "a")) if drawn else None,
            "right": fragment(graph_diff_svg(right, gd, "b")) if drawn else None,
            "rows": _rows(gd),
        })
    return out


def diff_html(d: FrameDiff, a: Optional[Frame] = None, b: Optional[Frame] = None) -> str:
    """Static HTML of ``d``; with its two frames ``a`` and ``b`` also the graphs side by side."""
    guards = [[g.change, g.kind, g.source, "\n".join(g.before), "\n".join(g.after)] for g in d.guards]
    inputs = [[i.source, i.what, "" if i.dim is None else str(i.dim), i.before, i.after] for i in d.inputs]
    bodies = [[c.change, c.a, c.b, c.hop, "; ".join(c.changes)] for c in d.bodies]
    saved = [[s.change, s.a, s.b, s.nbytes_a, s.nbytes_b] for s in d.aot.saved] if d.aot else []
    return render("diff.html.j2", d=d, guards=guards[:MAX_ROWS], more_guards=guards[MAX_ROWS:], inputs=inputs,
                  bodies=bodies, saved=saved, graphs=_graph_sections(d, a, b))


def recompiles_html(cap: Capture) -> str:
    """Every recompile's diff against the compile it replaced, for the static report ("" if none)."""
    items = []
    for r in cap.recompiles:
        if r.diff is None:
            continue
        a, b = frame_of(cap, r.diff.a), frame_of(cap, r.diff.b)
        items.append((r, fragment(diff_html(r.diff, a, b))))
    return render("diff_recompiles.html.j2", items=items) if items else ""


def decomposition_html(cap: Capture, heading: bool = True, graphs: bool = True) -> str:
    """An export record's ``run_decompositions()`` before and after: the mutations that became outputs
    (from the decomposed program's graph signature) above the diff of the two programs, graphs side by
    side ("" without a decomposition). ``heading=False`` leaves out the heading (the one-file report
    shows it beside the folded payload); ``graphs=False`` the diff (the explorer shows it linked)."""
    d = cap.export.decomposition if cap.export is not None else None
    if d is None:
        return ""
    a, b = frame_of(cap, d.a), frame_of(cap, d.b)
    before = a.export.mutated() if a is not None and a.export is not None else {}
    outputs = []
    if b is not None and b.export is not None:
        after = b.export.mutated()
        outputs = [[o.name, o.kind, o.target] for o in b.export.outputs if o.name in after and o.name not in before]
    return render("diff_decomposition.html.j2", d=d, outputs=outputs, heading=heading,
                  body=fragment(diff_html(d, a, b)) if graphs else "")


def frame_of(cap: Capture, compile_id: str) -> Optional[Frame]:
    try:
        return cap.frame(compile_id)
    except KeyError:
        return None


def mimebundle(d: FrameDiff, include: Container[str] | None = None, exclude: Container[str] | None = None) -> dict[str, Any]:
    """The ``_repr_mimebundle_`` of a FrameDiff: its text diff, and the tables as HTML."""
    bundle: dict[str, Any] = {}
    if (not include or "text/html" in include) and (not exclude or "text/html" not in exclude):
        bundle["text/html"] = diff_html(d)
    bundle["text/plain"] = str(d)
    return bundle
