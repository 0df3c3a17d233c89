"""The graph canvas: an anywidget that shows one laid-out graph as SVG with pan, zoom and clicks.

Invariant: only JSON-friendly state crosses to the browser (strings and lists of strings); the SVG
text it receives was escaped by ``viz.to_svg``, and the JavaScript never builds markup from names.
"""

from __future__ import annotations

import pathlib

import anywidget
import traitlets

__all__ = ["GraphCanvas"]

_HERE = pathlib.Path(__file__).parent


class GraphCanvas(anywidget.AnyWidget):
    """SVG of one graph. A click on a node sets ``selected``; a click on a module box adds it to ``expanded``.

    Python owns what is drawn (``svg``); the browser owns the view (pan and zoom stay in the browser).
    ``graph`` names what is drawn, and a new value tells the browser to fit the new drawing.
    """

    _esm = _HERE / "canvas.js"
    _css = _HERE / "canvas.css"

    svg = traitlets.Unicode("").tag(sync=True)  # the drawing, from viz.to_svg
    graph = traitlets.Unicode("").tag(sync=True)  # "0/0:wrap_body_0": what is drawn; a change refits the view
    selected = traitlets.Unicode("").tag(sync=True)  # name of the selected node ("" for none)
    expanded = traitlets.List(traitlets.Unicode()).tag(sync=True)  # module paths whose boxes are open
    height = traitlets.Int(520).tag(sync=True)  # pixels
