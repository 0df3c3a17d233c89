"""The graph canvas: an anywidget that draws one laid-out graph client-side, with pan, zoom and clicks.

Invariant: only JSON-friendly layout data crosses to the browser (``drawing``: boxes, edges, labels as
plain strings and numbers, from :func:`viz.drawing.drawing`, re-exported here); the browser code
(``canvas.js`` and the modules it imports, joined by :mod:`viz.browser_code`) builds SVG elements from it with DOM
calls and sets every user string with ``textContent`` / ``setAttribute``, never as markup. The same
Layout drawn by :func:`viz.to_svg` and by the canvas has the same boxes, classes and ``data-*`` ids.
"""

from __future__ import annotations

import pathlib
from typing import Any, Iterable

import anywidget
import traitlets

from tracer.model import Graph
from viz.browser_code import bundle
from viz.drawing import drawing, search_index
from viz.graph_layout import Layout
from viz.style import css

__all__ = ["GraphCanvas", "drawing"]

_HERE = pathlib.Path(__file__).parent


class GraphCanvas(anywidget.AnyWidget):
    """One graph, drawn in the browser. A click on a node sets ``selected``; on a module box adds it to ``expanded``.

    Python owns what is drawn (``drawing``, set by :meth:`draw`); the browser owns the view (pan and
    zoom stay in the browser). ``graph`` names what is drawn, and a new value tells the browser to fit
    the new drawing; a new ``drawing`` of the same ``graph`` keeps the view.
    """

    _esm = bundle("canvas")  # canvas.js and the modules it imports (viz/browser_code.py)
    _css = _HERE / "canvas.css"

    drawing = traitlets.Dict().tag(sync=True)  # from drawing(layout); {} draws nothing
    graph = traitlets.Unicode("").tag(sync=True)  # "0/0:wrap_body_0": what is drawn; a change refits the view
    selected = traitlets.Unicode("").tag(sync=True)  # name of the selected node ("" for none)
    expanded = traitlets.List(traitlets.Unicode()).tag(sync=True)  # module paths whose boxes are open
    height = traitlets.Int(520).tag(sync=True)  # pixels
    role_css = traitlets.Unicode(css(".ds-graph")).tag(sync=True)  # role colours (viz.style), no user text
    search_for = traitlets.Unicode("").tag(sync=True)  # the browser's search box asks for this `graph`'s index
    search = traitlets.Dict().tag(sync=True)  # {"graph": graph, **search_index(...)} once asked for, else {}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._laid_out: Graph | None = None  # the graph of the drawing
        self._indexed: Graph | None = None  # the graph whose search index was sent last
        self.observe(lambda _: self._send_index(), "search_for")

    def draw(self, layout: Layout | None, *, highlight: Iterable[str] = (), graph: Graph | None = None) -> None:
        """Show ``layout`` (``None``: nothing); boxes in ``highlight`` are marked. ``graph``, the graph laid
        out, lets search find its folded nodes by op and source line (Note [Search reaches folded nodes]
        in viz/drawing.py): its index is sent once the search box asks for it, once per graph."""
        self._laid_out = graph
        self._send_index()
        self.drawing = {} if layout is None else drawing(layout, highlight=highlight)

    def _send_index(self) -> None:
        want = self._laid_out if self.graph and self.search_for == self.graph else None
        if want is not self._indexed:
            self._indexed = want
            self.search = {} if want is None else {"graph": self.graph, **search_index(want)}

    def box_ids(self) -> list[str]:
        """Ids of the boxes drawn now (node names, ``module:<path>`` for groups), in drawing order."""
        return [b["id"] for b in self.drawing.get("boxes", [])]

    def group_paths(self) -> list[str]:
        """Module paths of the collapsed module boxes drawn now."""
        return [b["group"] for b in self.drawing.get("boxes", []) if "group" in b]
