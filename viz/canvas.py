"""The graph canvas: an anywidget that draws one laid-out graph client-side, with pan, zoom and clicks.

Invariant: only JSON-friendly layout data crosses to the browser (``drawing``: boxes, edges, labels as
plain strings and numbers, from :func:`drawing`); ``canvas.js`` builds SVG elements from it with DOM
calls and sets every user string with ``textContent`` / ``setAttribute``, never as markup. The same
Layout drawn by :func:`viz.to_svg` and by the canvas has the same boxes, classes and ``data-*`` ids.
"""

from __future__ import annotations

import pathlib
from typing import Any, Iterable

import anywidget
import traitlets

from viz.graph_layout import Layout
from viz.style import css

__all__ = ["GraphCanvas", "drawing"]

_HERE = pathlib.Path(__file__).parent


def _num(v: float) -> float | int:
    """A coordinate as JSON sends it: 0.1 px precision, integral values without ``.0``."""
    r = round(float(v), 1)
    return int(r) if r.is_integer() else r


def drawing(layout: Layout, *, highlight: Iterable[str] = ()) -> dict[str, Any]:
    """The JSON state that ``canvas.js`` draws: ``layout`` minus what the browser does not need.

    A box is ``{"id", "label", "sub", "role", "x", "y", "w", "h"}`` plus ``"group"`` (a collapsed
    module box's path) and ``"part"`` (a joint graph's half) when set; an edge is ``{"src", "dst",
    "pts": [x0, y0, x1, y1, ...]}`` (bezier points as in :class:`viz.graph_layout.Edge`); ``"hi"`` lists
    highlighted box ids (edges between two of them are highlighted too); ``"src"`` is a node's user line,
    ``"find"`` maps a module box to the node names folded in it and ``"nodes"`` counts the graph's
    nodes (the search box and the minimap use them).

    >>> from viz.synthetic import chain_graph
    >>> from viz.graph_layout import layout
    >>> d = drawing(layout(chain_graph(3, layers=1), engine="linear"), highlight=["l_x_"])
    >>> [b["id"] for b in d["boxes"]], d["hi"], sorted(d["edges"][0])
    (['l_x_', 'linear_0', 'output'], ['l_x_'], ['dst', 'pts', 'src'])
    """
    boxes = []
    for b in layout.boxes:
        box: dict[str, Any] = {"id": b.id, "label": b.label, "sub": b.sublabel, "role": b.role,
                               "x": _num(b.x), "y": _num(b.y), "w": _num(b.w), "h": _num(b.h)}
        if b.group is not None:
            box["group"] = b.group
        if b.partition:
            box["part"] = b.partition
        if b.source:
            box["src"] = b.source
        boxes.append(box)
    edges = [{"src": e.src, "dst": e.dst, "pts": [_num(c) for p in e.points for c in p]} for e in layout.edges]
    ids = {b.id for b in layout.boxes}
    found = {b.id: b.members for b in layout.boxes if b.members}
    return {"w": _num(max(layout.width, 1.0)), "h": _num(max(layout.height, 1.0)), "engine": layout.engine,
            "nodes": layout.nodes, "boxes": boxes, "edges": edges, "find": found,
            "hi": [h for h in dict.fromkeys(highlight) if h in ids]}


class GraphCanvas(anywidget.AnyWidget):
    """One graph, drawn in the browser. A click on a node sets ``selected``; on a module box adds it to ``expanded``.

    Python owns what is drawn (``drawing``, set by :meth:`draw`); the browser owns the view (pan and
    zoom stay in the browser). ``graph`` names what is drawn, and a new value tells the browser to fit
    the new drawing; a new ``drawing`` of the same ``graph`` keeps the view.
    """

    _esm = _HERE / "canvas.js"
    _css = _HERE / "canvas.css"

    drawing = traitlets.Dict().tag(sync=True)  # from drawing(layout); {} draws nothing
    graph = traitlets.Unicode("").tag(sync=True)  # "0/0:wrap_body_0": what is drawn; a change refits the view
    selected = traitlets.Unicode("").tag(sync=True)  # name of the selected node ("" for none)
    expanded = traitlets.List(traitlets.Unicode()).tag(sync=True)  # module paths whose boxes are open
    height = traitlets.Int(520).tag(sync=True)  # pixels
    role_css = traitlets.Unicode(css(".ds-graph")).tag(sync=True)  # role colours (viz.style), no user text

    def draw(self, layout: Layout | None, *, highlight: Iterable[str] = ()) -> None:
        """Show ``layout`` (``None``: nothing); boxes in ``highlight`` are marked."""
        self.drawing = {} if layout is None else drawing(layout, highlight=highlight)

    def box_ids(self) -> list[str]:
        """Ids of the boxes drawn now (node names, ``module:<path>`` for groups), in drawing order."""
        return [b["id"] for b in self.drawing.get("boxes", [])]

    def group_paths(self) -> list[str]:
        """Module paths of the collapsed module boxes drawn now."""
        return [b["group"] for b in self.drawing.get("boxes", []) if "group" in b]
