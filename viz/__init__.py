"""dynascope's rendering side: explorer widget, DOT/SVG, layout, static HTML. Reads ``tracer.model`` only.

Invariant: nothing here imports torch; a Capture loaded from JSON renders exactly like a live one.

>>> import viz
>>> from viz.synthetic import chain_graph
>>> viz.to_dot(chain_graph(5, layers=1)).splitlines()[0]
'digraph root {'
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

# Note [Lazy public names]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# ``import viz`` (and so every ``import viz.<module>``, the ``dynascope`` CLI included) must not pay
# for the widget stack (ipywidgets, IPython, anywidget) or graphviz when it only writes a static
# report: those imports were most of the CLI's start-up. So the public names below are loaded on
# first attribute access (PEP 562 module ``__getattr__``), and the renderers registered with
# tracer's display hook import their module on first display.
_PUBLIC = {
    "to_dot": "viz.dot", "Explorer": "viz.explorer", "show": "viz.explorer", "Box": "viz.graph_layout",
    "Edge": "viz.graph_layout", "Layout": "viz.graph_layout", "layout": "viz.graph_layout",
    "capture_html": "viz.html", "export_html": "viz.report_file", "node_info": "viz.info", "JobView": "viz.job_view",
    "export_job_html": "viz.job_page", "job_html": "viz.job_page", "mimebundle": "viz.mimebundle",
    "to_svg": "viz.svg", "ProfileExplorer": "viz.profile_explorer",
    "ProfileDiffView": "viz.profile_diff_view",
}


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'viz' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])


def _deferred(module: str) -> Callable[..., dict[str, Any]]:
    """``module.mimebundle``, imported at the first display. See Note [Lazy public names]."""

    def render(obj: Any, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return importlib.import_module(module).mimebundle(obj, include=include, exclude=exclude)

    return render


def _register_views() -> None:
    """Register viz's renderers with tracer's display hook (Note [Display through a registry]), by
    name: nothing of tracer is imported here (Note [Views registered by name] in tracer/display.py)."""
    from tracer import display

    for module, name, view in (("tracer.model.capture", "Capture", "viz.mimebundle"),
                               ("tracer.model.diff", "FrameDiff", "viz.diff_view"),
                               ("tracer.model.job", "Job", "viz.job_page"),
                               ("tracer.model.profile_diff", "ProfileDiff", "viz.profile_diff_view"),
                               ("tracer.paused", "PausedState", "viz.session_panel"),
                               ("tracer.session", "Session", "viz.session_panel")):
        display.register_by_name(module, name, _deferred(view))


_register_views()

__all__ = [
    "Box",
    "Edge",
    "Explorer",
    "JobView",
    "Layout",
    "ProfileDiffView",
    "ProfileExplorer",
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
