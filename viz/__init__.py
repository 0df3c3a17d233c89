"""dynascope's rendering side: explorer widget, DOT/SVG, layout, static HTML. Reads ``tracer.model`` only.

Invariant: nothing here imports torch; a Capture loaded from JSON renders exactly like a live one.

>>> import viz
>>> from viz.synthetic import chain_graph
>>> viz.to_dot(chain_graph(5, layers=1)).splitlines()[0]
'digraph root {'
"""

from viz.dot import to_dot
from viz.explorer import Explorer, show
from viz.html import capture_html, export_html
from viz.info import node_info
from viz.layout import Box, Edge, Layout, layout
from viz.mimebundle import mimebundle
from viz.svg import to_svg
from viz.text import text_tree

__all__ = [
    "Box",
    "Edge",
    "Explorer",
    "Layout",
    "capture_html",
    "export_html",
    "layout",
    "mimebundle",
    "node_info",
    "show",
    "text_tree",
    "to_dot",
    "to_svg",
]
