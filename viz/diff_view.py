"""Views of a FrameDiff: static HTML (summary, input and guard tables, the two graphs side by side
with added / removed / changed nodes coloured), its mime bundle, and the explorer's linked view
(:class:`DiffView`: select a node in one graph, its partner is marked in the other).

Invariant: reads ``tracer.model`` only; every string from user code is escaped, by the templates
(autoescape) or, inside SVG, by :mod:`viz.svg`; the only markup added to an SVG here is a class
from a fixed set and a ``data-partner`` attribute escaped like every other attribute. The static
HTML is deterministic and has no script. See Note [Diff colours].
"""

from __future__ import annotations

import html
import re
from collections.abc import Container
from typing import Any, Optional

import anywidget
import traitlets

from tracer.model import Capture, Frame, FrameDiff, Graph, GraphDiff
from tracer.model.diff import frame_graphs
from viz.grouping import default_expanded
from viz.markup import fragment, render
from viz.svg import to_svg

__all__ = ["DiffView", "diff_html", "graph_diff_svg", "mimebundle", "recompiles_html", "recompiles_tab"]

# Note [Diff colours]
# ~~~~~~~~~~~~~~~~~~~
# A node of graph a without partner is "removed" (red), one of graph b "added" (green), a matched
# pair with a difference "changed" (amber) on both sides; unchanged partners keep their role colour.
# The class goes on the box's <g> next to viz.svg's own classes, so role styles and the diff style
# combine. Graphs above MAX_DRAWN nodes are listed in tables only (a joint graph of a 12-layer
# transformer is ~2k nodes: two of them side by side are unreadable and slow to lay out).
MAX_DRAWN = 400
MAX_ROWS = 60  # rows per node table; the rest is counted
_BOX = re.compile(r'<g class="(node[^"]*)" data-node="([^"]*)">')
_CSS = (".ds-diff-added rect{fill:#dcfce7;stroke:#16a34a;stroke-width:2.5}"
        ".ds-diff-removed rect{fill:#fee2e2;stroke:#dc2626;stroke-width:2.5}"
        ".ds-diff-changed rect{fill:#fef3c7;stroke:#d97706;stroke-width:2.5}"
        ".ds-diff-partner rect{stroke:#7c3aed;stroke-width:4}")


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
    """The SVG of one side's graph (linear layout, as in the static report) with Note [Diff colours]."""
    from viz.graph_layout import layout

    svg = to_svg(layout(graph, expanded=default_expanded(graph), engine="linear"))
    cls, partner = _status(gd, side)

    def mark(m: re.Match) -> str:
        name = html.unescape(m.group(2))
        extra = f" {cls[name]}" if name in cls else ""
        link = f' data-partner="{html.escape(partner[name], quote=True)}"' if name in partner else ""
        return f'<g class="{m.group(1)}{extra}" data-node="{m.group(2)}"{link}>'

    svg = _BOX.sub(mark, svg)
    return svg.replace("</style>", _CSS + "</style>", 1)


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
    return render("diff.html.j2", d=d, guards=guards, inputs=inputs, bodies=bodies, saved=saved,
                  graphs=_graph_sections(d, a, b))


def recompiles_html(cap: Capture) -> str:
    """Every recompile's diff against the compile it replaced, for the static report ("" if none)."""
    items = []
    for r in cap.recompiles:
        if r.diff is None:
            continue
        a, b = _frame(cap, r.diff.a), _frame(cap, r.diff.b)
        items.append((r, fragment(diff_html(r.diff, a, b))))
    return render("diff_recompiles.html.j2", items=items) if items else ""


def _frame(cap: Capture, compile_id: str) -> Optional[Frame]:
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


_ESM = """
// Two SVGs side by side; a click on a node marks its partner (data-partner) in the other SVG.
// Names are compared as attribute values, never put into a selector or into markup.
function render({ model, el }) {
  const row = document.createElement("div");
  row.style.display = "flex"; row.style.gap = "8px";
  const panes = ["a", "b"].map(() => {
    const p = document.createElement("div");
    p.style.flex = "1"; p.style.overflow = "auto"; p.style.maxHeight = model.get("height") + "px";
    p.style.border = "1px solid #d0d7de"; row.appendChild(p); return p;
  });
  el.appendChild(row);
  const find = (pane, name) => [...pane.querySelectorAll("[data-node]")].find(g => g.getAttribute("data-node") === name);
  const mark = () => {
    for (const p of panes) for (const g of p.querySelectorAll(".ds-diff-partner")) g.classList.remove("ds-diff-partner");
    for (const [i, key] of [[0, "selected_a"], [1, "selected_b"]]) {
      const g = find(panes[i], model.get(key));
      if (g) { g.classList.add("ds-diff-partner"); g.scrollIntoView({block: "nearest", inline: "nearest"}); }
    }
  };
  const draw = () => {
    panes[0].innerHTML = model.get("svg_a"); panes[1].innerHTML = model.get("svg_b"); mark();
  };
  panes.forEach((pane, i) => pane.addEventListener("click", (ev) => {
    const g = ev.target.closest("[data-node]");
    if (!g) return;
    const partner = g.getAttribute("data-partner") || "";
    model.set(i === 0 ? "selected_a" : "selected_b", g.getAttribute("data-node"));
    model.set(i === 0 ? "selected_b" : "selected_a", partner);
    model.save_changes();
  }));
  model.on("change:svg_a", draw); model.on("change:svg_b", draw);
  model.on("change:selected_a", mark); model.on("change:selected_b", mark);
  draw();
}
export default { render };
"""


class DiffView(anywidget.AnyWidget):
    """One graph pair of a FrameDiff side by side; selecting a node in one marks its partner in the other.

    ``select("a", name)`` does from Python what a click does in the browser.
    """

    _esm = _ESM
    svg_a = traitlets.Unicode("").tag(sync=True)  # from graph_diff_svg: escaped by viz.svg
    svg_b = traitlets.Unicode("").tag(sync=True)
    selected_a = traitlets.Unicode("").tag(sync=True)  # node of graph a selected or partnered ("" none)
    selected_b = traitlets.Unicode("").tag(sync=True)
    height = traitlets.Int(480).tag(sync=True)

    def __init__(self, d: FrameDiff, a: Frame, b: Frame, graph: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.diff = d
        self.gd = d.graph(graph)
        ga, gb = frame_graphs(a)[self.gd.a], frame_graphs(b)[self.gd.b]
        self.svg_a, self.svg_b = graph_diff_svg(ga, self.gd, "a"), graph_diff_svg(gb, self.gd, "b")

    def select(self, side: str, name: str) -> None:
        """Select node ``name`` of graph ``side`` ("a" or "b") and mark its partner (none: "")."""
        if side not in ("a", "b"):
            raise ValueError(f"unknown side {side!r} (must be one of ['a', 'b'])")
        partner = self.gd.partner(name, side) or ""
        self.selected_a, self.selected_b = (name, partner) if side == "a" else (partner, name)


def recompiles_tab(cap: Capture) -> Optional[Any]:
    """The explorer's "Recompiles" tab (None when no recompile has a diff): pick a recompile and a
    graph, see both sides linked (:class:`DiffView`) above the diff's tables. Nothing is laid out
    until a recompile is picked."""
    import ipywidgets as W

    recs = [r for r in cap.recompiles if r.diff is not None]
    if not recs:
        return None
    choice = W.Dropdown(options=[("choose a recompile to compare", -1)]  # labels are text, never HTML
                        + [(f"{r.compile_id} replaced {r.replaced}: {r.diff.summary[:120]}", i) for i, r in enumerate(recs)],
                        description="recompile", layout=W.Layout(width="98%"))
    graph = W.Dropdown(options=[], description="graph", layout=W.Layout(width="60%"))
    body = W.VBox([])
    box = W.VBox([choice, graph, body])
    picking = []  # non-empty while pick() refills the graph choice: show() once, after it

    def show(_: Any = None) -> None:
        if picking:
            return
        if choice.value is None or choice.value < 0:
            body.children = []
            return
        r = recs[choice.value]
        a, b = _frame(cap, r.diff.a), _frame(cap, r.diff.b)
        children = []
        if a is not None and b is not None and graph.value is not None:
            children.append(DiffView(r.diff, a, b, graph=graph.value))
        body.children = [*children, W.HTML(diff_html(r.diff))]
        box.view = children[0] if children else None  # the linked view shown, for callers and tests

    def pick(_: Any) -> None:
        if choice.value is not None and choice.value >= 0:
            d = recs[choice.value].diff
            names = [(f"{g.a or 'root'} ({len(g.changed)} changed, {len(g.added)} added, {len(g.removed)} removed)", g.a)
                     for g in d.graphs if g]
            picking.append(True)
            try:
                graph.options = names or [("root (no difference)", "")]
                graph.value = graph.options[0][1]
            finally:
                picking.clear()
        show()

    choice.observe(pick, "value")
    graph.observe(show, "value")
    box.choice, box.graph, box.view = choice, graph, None
    return box
