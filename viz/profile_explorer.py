"""``viz.ProfileExplorer``: the explorer of a Profile's capture, its Dynamo graph coloured by time.

Invariant: an :class:`viz.explorer.Explorer` in every other respect; the colours are the drawing's
``"heat"`` (Note [Time on the drawing] in viz/report_graphs.py) from the Profile's own numbers
(:func:`viz.profile_view.graph_times`), and the inspector adds a node's time and its kernels or AOT
nodes (:func:`viz.profile_view.time_facts`). HOP bodies are drawn uncoloured: the profile's nodes
name nodes of the root graph only.
"""

from __future__ import annotations

from typing import Any

from tracer.model.profile import Profile
from viz.explorer import Explorer
from viz.profile_view import graph_times, time_facts

__all__ = ["ProfileExplorer"]


class ProfileExplorer(Explorer):
    """The explorer of ``prof.capture``, coloured by ``prof``'s time per node.

    >>> from tracer.model import Capture, Frame
    >>> from viz.synthetic import chain_graph
    >>> from tracer.model.profile import NodeTime, Profile
    >>> cap = Capture(fn="f", frames=[Frame("0/0", "f.py:1 in f", graph=chain_graph(3, layers=1))])
    >>> prof = Profile("f", "aot_eager", 1, 10.0, [NodeTime("0/0", "forward", "mm", 8.0, dynamo_nodes=["linear_0"])],
    ...                capture=cap)
    >>> ex = ProfileExplorer(prof)
    >>> ex.heat(), ex.node_info("linear_0")["time"]
    ({'linear_0': [1.0, 8.0]}, '0.008 ms forward, 0.000 ms backward per step')
    """

    def __init__(self, prof: Profile, **kwargs: Any) -> None:
        if not isinstance(prof, Profile) or prof.capture is None:
            raise TypeError(f"ProfileExplorer needs a tracer.Profile holding its capture, got {type(prof).__name__}")
        self.profile = prof
        super().__init__(prof.capture, **kwargs)

    def heat(self) -> dict[str, list[float]]:
        """Box id -> [share of the busiest node, µs] of the graph drawn now (root graph only)."""
        if self._frame is None or self._graph_name:
            return {}
        times = graph_times(self.profile, self._frame).get("root", {})
        top = max(times.values(), default=0.0)
        out = {}
        for b in self.canvas.drawing.get("boxes", []):
            members = self.canvas.drawing.get("find", {}).get(b["id"]) or [b["id"]]
            us = sum(times.get(m, 0.0) for m in members)
            if us > 0 and top > 0:
                out[b["id"]] = [round(min(us / top, 1.0), 3), round(us, 1)]
        return out

    def node_info(self, name: str) -> dict[str, Any]:
        """The inspector's facts about ``name`` in the graph shown, with its time (:func:`time_facts`)."""
        return self._node_info(name)

    def _node_info(self, name: str) -> dict[str, Any]:
        info = super()._node_info(name)
        if self._frame is not None and not self._graph_name:
            info |= time_facts(self.profile, self._frame, "root", name)
        return info

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, Any]:
        """The explorer's widget and text, and the capture's static HTML whose node facts carry each node's
        time (Note [Node facts without a script] in viz/node_facts.py): what a page without the script shows."""
        from viz.html import capture_html

        prof = self.profile
        html = capture_html(prof.capture, facts=True, extra=lambda f, kind, node: time_facts(prof, f, kind, node))
        return {**super()._repr_mimebundle_(include, exclude), "text/html": html}

    def _draw(self) -> None:
        super()._draw()
        heat = self.heat()
        if heat:
            self.canvas.drawing = {**self.canvas.drawing, "heat": heat}
