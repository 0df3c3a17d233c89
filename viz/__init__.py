"""dynascope's rendering side: explorer widget, DOT/SVG, layout, static HTML. Reads ``tracer.model`` only.

Invariant: nothing here imports torch; a Capture loaded from JSON renders exactly like a live one.

>>> import viz
>>> from viz.synthetic import chain_graph
>>> viz.to_dot(chain_graph(5, layers=1)).splitlines()[0]
'digraph root {'
"""

from viz.dot import to_dot
from viz.explorer import Explorer, show
from viz.graph_layout import Box, Edge, Layout, layout
from viz.html import capture_html, export_html
from viz.info import node_info
from viz.job_view import JobView, export_job_html, job_html
from viz.mimebundle import mimebundle
from viz.svg import to_svg


def _register_views() -> None:
    """Register viz's renderers with tracer's display hook (Note [Display through a registry])."""
    from tracer import display
    from tracer.model import Capture, FrameDiff, Job
    from tracer.paused import PausedState
    from tracer.session import Session
    from viz import diff_view, job_view, session_panel

    display.register(Capture, mimebundle)
    display.register(FrameDiff, diff_view.mimebundle)
    display.register(Job, job_view.mimebundle)
    display.register(PausedState, session_panel.mimebundle)
    display.register(Session, session_panel.mimebundle)


_register_views()

__all__ = [
    "Box",
    "Edge",
    "Explorer",
    "JobView",
    "Layout",
    "capture_html",
    "export_html",
    "export_job_html",
    "job_html",
    "layout",
    "mimebundle",
    "node_info",
    "show",
    "to_dot",
    "to_svg",
]
