"""The explorer widget: overview, subgraph tree, graph canvas, inspector, code, lifted inputs, guards, partition.

Invariant: the explorer reads only ``tracer.model`` and keeps its state (frame, graph, node, opened
module boxes) in plain Python values, so a Capture loaded from JSON gives the same widget state as
the live one. Only the selected graph is laid out, and only when it is shown (large graphs are
grouped into module boxes by ``viz.layout``). See Note [Canvas clicks].
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

import ipywidgets as W

from tracer._no_gc import no_cyclic_gc
from tracer._text import headline
from tracer.model import TIME_PHASES, Capture, Frame, Graph
from viz import code_view, export_tab, panels
from viz.canvas import GraphCanvas
from viz.diff_widget import recompiles_tab
from viz.graph_layout import opening
from viz.info import node_info
from viz.inspector import Inspector
from viz.layout_cache import Layouts
from viz.markup import render
from viz.module_view import module_html

__all__ = ["Explorer", "show"]

# Note [Canvas clicks]
# ~~~~~~~~~~~~~~~~~~~~
# The browser reports a click by setting the canvas's synced ``selected`` (a node) or ``expanded``
# (module boxes) trait. Python changes the same traits when it draws (a new graph clears the
# selection), so those writes happen inside ``_quiet()`` and the observers ignore them; any other
# change is a user's click. A click on a HOP call node opens its (first) body, as a double click on
# a submodule would in an IDE; ``select_node`` from Python only selects.


def largest_frame(cap: Capture) -> Frame | None:
    """The frame opened first: the largest graph (first of equals), never an empty one if any has nodes."""
    return max(cap.frames, key=lambda f: len(f.graph.nodes), default=None)


def frame_label(f: Frame) -> str:
    """A frame selector entry (plain text): id, code, and for an attempt that did not compile, its status."""
    return f"{f.compile_id}  {f.code}" + ("" if f.status == "compiled" else f"  [{f.status}: {headline(f.status_reason, 80)}]")


def collapsed_groups(lay: Any) -> list[str]:
    """The module paths drawn as collapsed boxes in a layout, in drawing order."""
    return list(dict.fromkeys(b.group for b in lay.boxes if getattr(b, "group", None)))


class Explorer:
    """The inline explorer of a :class:`~tracer.model.Capture`: display it (or evaluate the Capture).

    ``select`` shows a graph ("" is the root, else a HOP body's qualified name), ``select_node``
    fills the inspector, ``expand`` opens a module box; a click in the browser does the same.

    >>> from tracer.model import Capture, Frame, Graph, Node
    >>> g = Graph([Node("x", "placeholder", "x", role="operand", users=["sin"]),
    ...            Node("sin", "call_function", "torch.sin", ["x"], inputs=["x"], users=["output"]),
    ...            Node("output", "output", "output", ["sin"], inputs=["sin"], role="output")])
    >>> ex = Explorer(Capture(frames=[Frame("0/0", "f.py:1 in f", graph=g)], fn="f"))
    >>> ex.select_node("sin")
    >>> ex.inspector["target"], ex.inspector["users"]
    ('torch.sin', ['output'])
    >>> ex
    Explorer(f: frame 0/0, graph 'root', node 'sin')
    >>> ex.select("wrap_body_0")
    Traceback (most recent call last):
    KeyError: "no subgraph 'wrap_body_0' in frame 0/0 (choices: ['']; '' is the root graph)"
    """

    def __init__(self, cap: Capture, *, frame: str | None = None, height: int = 520) -> None:
        if not isinstance(cap, Capture):
            raise TypeError(f"Explorer needs a tracer.model.Capture, got {type(cap).__name__}")
        self.capture = cap
        self._frame: Frame | None = cap.frame(frame) if frame is not None else largest_frame(cap)
        self._graph_name, self._node, self._note = "", "", ""
        self._info: dict[str, Any] = {}
        self._expanded: dict[tuple[str, str], frozenset[str]] = {}  # (frame, graph) -> opened module boxes
        self._highlight: list[str] = []  # nodes marked in the shown graph (e.g. a kernel's), see highlight()
        self._layouts = Layouts()
        self._quiet_depth = 0
        self._partition = None
        with no_cyclic_gc():  # Note [No cyclic GC while the explorer builds] in tracer/_no_gc.py
            self._build(height)
            self._show_frame()

    # -- public API ------------------------------------------------------------------------------
    @property
    def frame(self) -> Frame | None:
        """The frame whose graphs are shown."""
        return self._frame

    @property
    def graph_name(self) -> str:
        """Qualified name of the shown graph ("" for the frame's root graph)."""
        return self._graph_name

    @property
    def graph(self) -> Graph | None:
        """The shown graph."""
        return None if self._frame is None else self._frame.graphs()[self._graph_name]

    @property
    def node(self) -> str:
        """Name of the selected node ("" when none)."""
        return self._node

    @property
    def inspector(self) -> dict[str, Any]:
        """The inspector's content: the facts of the selected node (``viz.node_info``), ``{}`` when none."""
        return dict(self._info)

    @property
    def expanded(self) -> frozenset[str]:
        """Module boxes opened in the shown graph (at first: the top-level modules, ``first_expanded``)."""
        key, graph = self._key(), self.graph
        return self._expanded[key] if key in self._expanded or graph is None else self._layouts.first(graph)

    def select(self, name: str = "", *, frame: str | None = None) -> None:
        """Show a graph of a frame: ``""`` is the root graph, else a HOP body's qualified name."""
        target = self.capture.frame(frame) if frame is not None else self._frame
        if target is None:
            raise KeyError("this capture has no frames, so there is no graph to select")
        if name not in (graphs := target.graphs()):
            raise KeyError(f"no subgraph {name!r} in frame {target.compile_id} (choices: {list(graphs)}; '' is the root graph)")
        if target is not self._frame:
            self._frame = target
            self._graph_name = name
            self._show_frame()
        else:
            self._graph_name = name
            self._show_graph()

    def select_node(self, name: str) -> None:
        """Select a node of the shown graph and show its facts in the inspector."""
        graph = self.graph
        if graph is None:
            raise KeyError("this capture has no frames, so there is no node to select")
        graph.node(name)  # KeyError naming the valid choices
        self._node = name
        self._note = ""
        self._info = self._node_info(name)
        with self._quiet():
            self.canvas.selected = name
        self._show_node()

    def highlight(self, names: Iterable[str] = (), *, reveal: bool = False) -> None:
        """Mark nodes of the shown graph (a kernel's, say; a box folding one too) until another graph is shown;
        ``highlight()`` clears; ``reveal`` first opens the boxes folding them. KeyError for an unknown name."""
        names, graph = list(dict.fromkeys(names)), self.graph
        if names and graph is None:
            raise KeyError("this capture has no frames, so there is no node to highlight")
        for name in names:
            graph.node(name)  # KeyError naming the valid choices
        if reveal and names:
            self._expanded[self._key()] = self.expanded | opening(graph, self._layouts.get(graph, self.expanded), names)
        self._highlight = names
        self._draw()

    def expand(self, path: str) -> None:
        """Open the collapsed module box ``path`` (e.g. ``"layers.0"``) of the shown graph."""
        graph = self.graph
        lay = None if graph is None else self._layouts.get(graph, self.expanded)
        choices = [] if lay is None else collapsed_groups(lay)
        if path not in choices:
            raise KeyError(f"no collapsed module box {path!r} in the shown graph (choices: {choices})")
        self._expanded[self._key()] = self.expanded | {path}
        self._draw()

    def collapse(self) -> None:
        """Close every module box of the shown graph."""
        self._expanded[self._key()] = frozenset()
        self._draw()

    @property
    def widget(self) -> W.Widget:
        """The ipywidgets tree to display."""
        return self._root

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, Any]:
        bundle = dict(self._root._repr_mimebundle_())
        bundle["text/plain"] = str(self)
        return bundle

    def __repr__(self) -> str:
        cid = self._frame.compile_id if self._frame else "-"
        return f"Explorer({self.capture.fn or '?'}: frame {cid}, graph {self._graph_name or 'root'!r}, node {self._node!r})"

    def __str__(self) -> str:
        lines = [str(self.capture)]
        if self._frame is not None:
            g = self.graph
            lines.append(f"showing frame {self._frame.compile_id}, graph {self._graph_name or 'root'!r} ({len(g.nodes)} nodes)"
                         + (f", node {self._node!r}" if self._node else "")
                         + (f", opened {sorted(self.expanded)}" if self.expanded else ""))
        return "\n".join(lines)

    # -- building --------------------------------------------------------------------------------
    def _build(self, height: int) -> None:
        cap = self.capture
        self._header = W.HTML(render("explorer_header.html.j2", summary=repr(cap)))
        self._overview = W.HTML(panels.overview_html(cap))
        self._frame_choice = W.Dropdown(  # across the whole page: a frame's label is long (Note [Fits its panel])
            options=[(frame_label(f), f.compile_id) for f in cap.frames],  # text, never HTML
            description="frame", layout=W.Layout(width="99%"), style={"description_width": "initial"},
        )
        self._frame_choice.observe(self._on_frame_choice, "value")
        self._tree = W.Select(options=[], rows=10, layout=W.Layout(width="98%"))
        self._tree.observe(self._on_tree, "value")
        self._speculations = W.HTML()
        self._crumbs = W.HTML()
        self._up = W.Button(description="parent", icon="arrow-up", tooltip="show the enclosing graph",
                            layout=W.Layout(width="90px", min_width="90px"))
        self._up.on_click(lambda _: self._go_up())
        self.canvas = GraphCanvas(height=height, layout=W.Layout(width="100%"))
        self.canvas.observe(self._on_canvas_selected, "selected")
        self.canvas.observe(self._on_canvas_expanded, "expanded")
        self._inspector = Inspector()
        self._code = W.HTML()
        self._lifted = W.HTML()
        self._side = W.Tab(children=[self._inspector, self._code, self._lifted], _dom_classes=["ds-side-tabs"])
        for i, title in enumerate(["Inspector", "Code", "Lifted inputs"]):
            self._side.set_title(i, title)
        left = W.VBox([W.HTML("<b>Subgraphs</b>"), self._tree, self._speculations],
                      layout=W.Layout(width="17%", min_width="150px", overflow="auto"))
        center = W.VBox([W.HBox([self._up, self._crumbs]), self.canvas], layout=W.Layout(width="54%", min_width="0"))
        right = W.Box([self._side], layout=W.Layout(width="29%", min_width="0", overflow_x="hidden", overflow_y="auto",
                                                    max_height=f"{height + 80}px"), _dom_classes=["ds-side"])
        graphs = W.VBox([self._frame_choice, W.HBox([left, center, right], layout=W.Layout(width="100%"))])
        self._guard_filter = W.Text(placeholder="filter guards (kind, source, code)", description="filter",
                                    continuous_update=True)
        self._guard_filter.observe(lambda _: self._show_guards(), "value")
        self._guards = W.HTML()
        self._modules = W.HTML()  # the nn_module_stack tree of the shown frame (viz.module_view)
        pages = [("Graphs", graphs), ("Overview", self._overview),
                 ("Guards", W.VBox([self._guard_filter, self._guards])), ("Modules", self._modules),
                 *code_view.pages(self), *export_tab.pages(self)]
        if any(f.aot is not None for f in cap.frames):
            self._partition_box = W.VBox([W.HTML("<i>opening the partition...</i>")])
            pages.append(("Partition", self._partition_box))
        pages += [("Recompiles", tab)] if (tab := recompiles_tab(cap)) is not None else []
        self._tabs = W.Tab(children=[p for _, p in pages], _dom_classes=["ds-main-tabs"])
        for i, (title, _) in enumerate(pages):
            self._tabs.set_title(i, title)
        self._tabs.observe(self._on_tab, "selected_index")
        self._root = W.VBox([self._header, self._tabs], _dom_classes=["ds-explorer"])  # Note [Code lines link to nodes]

    # -- drawing ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _quiet(self) -> Iterator[None]:
        self._quiet_depth += 1
        try:
            yield
        finally:
            self._quiet_depth -= 1

    def _key(self) -> tuple[str, str]:
        return (self._frame.compile_id if self._frame else "", self._graph_name)

    def _show_frame(self) -> None:
        f = self._frame
        with self._quiet():
            if f is not None:
                self._frame_choice.value = f.compile_id
                self._tree.options = self._tree_options(f)
        self._speculations.value = panels.speculations_html(f, compact=True) if f is not None else ""
        self._show_guards()
        self._modules.value = module_html(f) if f is not None and f.has_graph else ""
        if self._partition is not None:
            self._partition.show(f)
        self._show_graph()

    def _tree_options(self, f: Frame) -> list[tuple[str, str]]:
        # Note: Select shows labels as text (never HTML), so user names are safe here.
        opts = [(f"root graph  ({len(f.graph.nodes)} nodes)", "")]
        for sg in f.subgraphs.values():
            indent = "\u2003" * sg.depth
            short = sg.name.rsplit(".", 1)[-1]
            opts.append((f"{indent}{short}  [{sg.hop}]  {len(sg.lifted)} lifted  ({len(sg.graph.nodes)} nodes)", sg.name))
        return opts

    def _show_graph(self) -> None:
        self._node, self._info, self._note, self._highlight = "", {}, "", []
        f = self._frame
        with self._quiet():
            self._tree.value = self._graph_name if f is not None else None
        if f is None:
            self._crumbs.value = render("crumbs.html.j2", frame=None, chain=[], phases=TIME_PHASES)
            self._up.disabled = True
            self._lifted.value = ""
        else:
            chain, name = [], self._graph_name
            while name:
                chain.append(name.rsplit(".", 1)[-1])
                name = f.subgraphs[name].parent
            self._crumbs.value = render("crumbs.html.j2", frame=f, chain=["root", *reversed(chain)],
                                        phases=TIME_PHASES)
            self._up.disabled = self._graph_name == ""
            self._lifted.value = panels.lifted_html(f, self._graph_name)
        self._draw()
        self._show_node()

    def _draw(self) -> None:
        graph = self.graph
        with self._quiet():
            if graph is None:
                self.canvas.graph = ""
                self.canvas.draw(None)
                self.canvas.selected = ""
                self.canvas.expanded = []
                return
            expanded = self.expanded
            self.canvas.graph = f"{self._frame.compile_id}:{self._graph_name}"
            self.canvas.expanded = sorted(expanded)
            self.canvas.selected = self._node
            lay = self._layouts.get(graph, expanded)
            boxes = [b.id for b in lay.boxes if set(self._highlight).intersection(b.members)]  # folding a marked node
            self.canvas.draw(lay, highlight=[*self._highlight, *boxes], graph=graph)

    def _show_node(self) -> None:
        self._inspector.show(self._info, note=self._note)
        graph = self.graph
        self._code.value = panels.code_html(graph, highlight=self._node, link=self.canvas.graph) if graph is not None else ""

    def _show_guards(self) -> None:
        guards = self._frame.guards if self._frame is not None else []
        self._guards.value = panels.guards_html(guards, self._guard_filter.value)

    def _node_info(self, name: str) -> dict[str, Any]:
        return node_info(self._frame, self._graph_name, name)

    def _go_up(self) -> None:
        if self._frame is not None and self._graph_name:
            sg = self._frame.subgraphs[self._graph_name]
            self.select(sg.parent)
            with contextlib.suppress(KeyError):
                self.select_node(sg.call_node)

    # -- events (see Note [Canvas clicks]) -------------------------------------------------------
    def _on_frame_choice(self, change: dict[str, Any]) -> None:
        if not self._quiet_depth and change["new"] is not None:
            self.select("", frame=change["new"])

    def _on_tree(self, change: dict[str, Any]) -> None:
        if not self._quiet_depth and change["new"] is not None:
            self.select(change["new"])

    def _on_canvas_selected(self, change: dict[str, Any]) -> None:
        name = change["new"]
        graph = self.graph
        if self._quiet_depth or not name or graph is None or name not in {n.name for n in graph.nodes}:
            return
        self.select_node(name)
        self._side.selected_index = 0
        if folded := opening(graph, self._layouts.get(graph, self.expanded), [name]):  # Note [Code lines link to nodes]
            self._expanded[self._key()] = self.expanded | folded
            self._draw()
        node = graph.node(name)
        bodies = [c for c in node.calls if c in self._frame.subgraphs]
        if node.role == "hop" and bodies:
            info = self._info
            self.select(bodies[0])
            self._info = info
            self._note = f"opened {bodies[0]}" + (f" (also calls {', '.join(bodies[1:])})" if bodies[1:] else "")
            self._show_node()

    def _on_canvas_expanded(self, change: dict[str, Any]) -> None:
        if self._quiet_depth or self._frame is None:
            return
        self._expanded[self._key()] = frozenset(change["new"])
        self._draw()

    def _on_tab(self, change: dict[str, Any]) -> None:
        if self._tabs.get_title(change["new"]) == "Partition":
            self.partition_view()

    def partition_view(self) -> Any:
        """The Partition tab's view (built on first use: AOT graphs can be large)."""
        if self._partition is None:
            if not hasattr(self, "_partition_box"):
                raise ValueError("no frame of this capture ran AOTAutograd, so there is no partition to show")
            from viz.partition_view import PartitionView

            self._partition = PartitionView(self._layouts, height=self.canvas.height)
            self._partition_box.children = [self._partition.widget]
            self._partition.show(self._frame)
        return self._partition


def show(cap: Capture, **kwargs: Any) -> None:
    """Display the explorer of ``cap`` in the notebook (the same as evaluating ``cap`` in a cell)."""
    from IPython.display import display
    display(Explorer(cap, **kwargs))
