"""The explorer's linked diff view: :class:`DiffView` (select a node in one graph, its partner is
marked in the other) and the "Recompiles" tab that holds it.

Invariant: the SVGs come from :func:`viz.diff_view.graph_diff_svg` (escaped by viz.svg); the script
compares node names as attribute values and never puts them into a selector or markup.
"""

from __future__ import annotations

from typing import Any, Optional

import anywidget
import traitlets

from tracer.model import Capture, Frame, FrameDiff
from tracer.model.diff import frame_graphs
from viz.diff_view import diff_html, frame_of, graph_diff_svg

__all__ = ["DiffView", "diffs_tab", "recompiles_tab"]

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
    recs = [r for r in cap.recompiles if r.diff is not None]
    return diffs_tab(cap, [(f"{r.compile_id} replaced {r.replaced}: {r.diff.summary[:120]}", r.diff) for r in recs],
                     "recompile")


def diffs_tab(cap: Capture, diffs: list[tuple[str, FrameDiff]], noun: str) -> Optional[Any]:
    """A tab comparing frames of ``cap``: pick one of ``diffs`` (label, FrameDiff) and a graph, see both
    sides linked (:class:`DiffView`) above the diff's tables; None without diffs. Nothing is laid out
    until a diff is picked."""
    import ipywidgets as W

    if not diffs:
        return None
    choice = W.Dropdown(options=[(f"choose a {noun} to compare", -1)]  # labels are text, never HTML
                        + [(label, i) for i, (label, _) in enumerate(diffs)],
                        description=noun, layout=W.Layout(width="98%"))
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
        d = diffs[choice.value][1]
        a, b = frame_of(cap, d.a), frame_of(cap, d.b)
        children = []
        if a is not None and b is not None and graph.value is not None:
            children.append(DiffView(d, a, b, graph=graph.value))
        body.children = [*children, W.HTML(diff_html(d))]
        box.view = children[0] if children else None  # the linked view shown, for callers and tests

    def pick(_: Any) -> None:
        if choice.value is not None and choice.value >= 0:
            d = diffs[choice.value][1]
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
