"""The explorer's cache of laid-out graphs, and the module boxes each graph is first shown with.

Invariant: layout is pure, so a cached Layout is the one :func:`viz.layout` would return for the same
graph and opened boxes; cached graphs are kept alive so their ``id()`` keys stay valid.
"""

from __future__ import annotations

from typing import Any

from tracer.model import Graph

__all__ = ["Layouts"]


class Layouts:
    """Laid-out graphs, by (graph identity, opened module boxes). Layout is pure, so caching is safe."""

    def __init__(self) -> None:
        self._cache: dict[tuple[int, frozenset[str]], Any] = {}
        self._keep: list[Graph] = []  # keeps ids valid while cached
        self._first: dict[int, frozenset[str]] = {}

    def first(self, graph: Graph) -> frozenset[str]:
        """The module boxes ``graph`` is first shown with (:func:`viz.grouping.first_expanded`), cached."""
        from viz.grouping import first_expanded

        return self._first.setdefault(id(graph), first_expanded(graph))

    def get(self, graph: Graph, expanded: frozenset[str] = frozenset()) -> Any:
        from viz.graph_layout import layout

        key = (id(graph), expanded)
        if key not in self._cache:
            self._cache[key] = layout(graph, expanded=expanded)
            self._keep.append(graph)
        return self._cache[key]
