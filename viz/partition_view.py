"""The Partition tab: AOTAutograd's forward and backward graphs side by side (or the joint graph), saved values marked.

Invariant: reads only ``Frame.aot``; saved values are highlighted by name on both sides (the
partitioner names a backward placeholder after the forward value it receives); graphs are laid
out through the explorer's shared cache, so a large joint graph is grouped, never laid out whole by dot.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as W

from tracer.model import Aot, Frame, Graph
from viz import panels
from viz.canvas import GraphCanvas
from viz.info import node_info
from viz.inspector import Inspector
from viz.markup import render

__all__ = ["PartitionView"]

VIEWS = ("forward | backward", "joint")


class PartitionView:
    """Canvases for the AOT graphs of one frame, the tables of saved values, mutations and aliases."""

    def __init__(self, layouts: Any, *, height: int = 520) -> None:
        self._layouts = layouts
        self._frame: Frame | None = None
        self._aot: Aot | None = None
        self._graphs: dict[str, Graph] = {}
        self.choice = W.ToggleButtons(options=list(VIEWS), value=VIEWS[0])
        self.choice.observe(lambda _: self._draw(), "value")
        self.canvases = {side: GraphCanvas(height=height, layout=W.Layout(width="100%")) for side in ("left", "right")}
        self._titles = {side: W.HTML() for side in self.canvases}
        self._expanded: dict[str, frozenset[str]] = {}
        for side, canvas in self.canvases.items():
            canvas.observe(lambda ch, side=side: self._on_click(side, ch["new"]), "selected")
            canvas.observe(lambda ch, side=side: self._on_expand(side, ch["new"]), "expanded")
        self.inspector = Inspector()
        self.info: dict[str, Any] = {}
        self.tables = W.HTML()
        self._pair = W.HBox([
            W.VBox([self._titles["left"], self.canvases["left"]], layout=W.Layout(width="50%")),
            W.VBox([self._titles["right"], self.canvases["right"]], layout=W.Layout(width="50%")),
        ])
        self.widget = W.VBox([self.choice, self._pair, self.inspector, self.tables])
        self._drawing = False

    def show(self, frame: Frame | None) -> None:
        """Show the AOT data of ``frame`` (a note when AOTAutograd did not run on it)."""
        self._frame = frame
        self._aot = frame.aot if frame is not None else None
        self._expanded = {}
        self.info = {}
        self.inspector.show(None)
        a = self._aot
        if a is None:
            self.tables.value = panels.panel("<i>AOTAutograd did not run on this frame.</i>")  # no user text
            self._graphs = {}
        else:
            self.tables.value = panels.aot_tables_html(a)
            self._graphs = {k: g for k in ("forward", "backward", "joint", "inference")
                            if (g := getattr(a, k)) is not None}
        has_joint = "joint" in self._graphs
        self.choice.layout.display = None if has_joint else "none"
        if not has_joint:
            self.choice.value = VIEWS[0]
        self._draw()

    def sides(self) -> dict[str, str]:
        """Which AOT graph each canvas shows: {"left": "forward", "right": "backward"}, ..."""
        g = self._graphs
        if self.choice.value == "joint" and "joint" in g:
            return {"left": "joint"}
        if self._aot is not None and self._aot.mode == "inference" and "inference" in g:
            return {"left": "inference"}
        if "forward" in g or "backward" in g:
            return {k: v for k, v in (("left", "forward"), ("right", "backward")) if v in g}
        return {"left": "inference"} if "inference" in g else {}

    def _first(self, g: Graph) -> frozenset[str]:
        """The module boxes a graph is first shown with (the explorer's cache when it has one)."""
        first = getattr(self._layouts, "first", None)
        if first is not None:
            return first(g)
        from viz.grouping import first_expanded

        return first_expanded(g)

    def _draw(self) -> None:
        saved = tuple(s.name for s in self._aot.saved) if self._aot is not None else ()
        shown = self.sides()
        self._drawing = True
        left, right = self._pair.children  # the joint graph alone takes the whole width
        left.layout.width = "50%" if "right" in shown else "100%"
        right.layout.display = None if "right" in shown else "none"
        try:
            for side, canvas in self.canvases.items():
                which = shown.get(side)
                box = canvas.layout
                if which is None:
                    canvas.graph, self._titles[side].value = "", ""
                    canvas.draw(None)
                    box.display = "none"
                    continue
                box.display = None
                g = self._graphs[which]
                expanded = self._expanded.get(which) if which in self._expanded else self._first(g)
                canvas.graph = which
                canvas.expanded = sorted(expanded)
                canvas.selected = ""
                canvas.draw(self._layouts.get(g, expanded), highlight=saved, graph=g)
                marked = sum(1 for n in g.nodes if n.name in saved)
                self._titles[side].value = render("partition_title.html.j2", which=which, nodes=len(g.nodes),
                                                  marked=marked)
        finally:
            self._drawing = False

    def _on_click(self, side: str, name: str) -> None:
        which = self.sides().get(side)
        if self._drawing or not name or which is None or name not in {n.name for n in self._graphs[which].nodes}:
            return
        self.info = node_info(self._frame, f"aot.{which}", name)  # saved_for_backward among its keys
        self.inspector.show(self.info)

    def _on_expand(self, side: str, paths: list[str]) -> None:
        which = self.sides().get(side)
        if self._drawing or which is None:
            return
        self._expanded[which] = frozenset(paths)
        self._draw()
