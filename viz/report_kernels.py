"""The static report's drawings of Inductor kernels: which kernels of a frame's root graph get a drawing
of their own, and that drawing (Note [One kernel chooser] in viz/report.js).

Invariant: a kernel gets one only when the drawing the report opens for its first node (the module
boxes folding it opened, one level at a time, as report.js goes down) does not draw every node it
computes; that drawing is the widget's (the first view with :func:`viz.graph_layout.opening` of the
kernel's nodes opened), and kernels opening the same module paths share one.
"""

from __future__ import annotations

from typing import Any

from tracer.model import Frame
from viz.code_view import kernel_choices, kernel_key, kernel_lines, kernel_nodes
from viz.drawing import drawing
from viz.graph_layout import layout, opening
from viz.grouping import first_expanded

__all__ = ["kernel_code_lines", "kernel_drawings"]


def _drawn(d: dict[str, Any]) -> set[str]:
    """The nodes drawing ``d`` draws as boxes of their own."""
    return {b["id"] for b in d["boxes"] if "group" not in b}


def _shown_for(d: dict[str, Any], opened: dict[str, Any], first: str) -> set[str]:
    """The nodes drawn by the drawing report.js shows for node ``first``: from the first view ``d`` (its
    module boxes' drawings ``opened``, Note [Folding in the report]) down through the box folding
    ``first`` until it is drawn."""
    below: dict[int, set[str]] = {}

    def folded(sd: dict[str, Any], so: dict[str, Any]) -> set[str]:
        if id(sd) not in below:
            below[id(sd)] = _drawn(sd).union(*(folded(*v) for v in so.values()))
        return below[id(sd)]

    while first not in _drawn(d):
        holder = next((v for v in opened.values() if first in folded(*v)), None)
        if holder is None:
            break
        d, opened = holder
    return _drawn(d)


def kernel_drawings(frame: Frame, d: dict[str, Any], opened: dict[str, Any]
                    ) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """For the root graph of ``frame`` (its report drawing ``d`` and module boxes' drawings ``opened``):
    kernel -> index into the drawings, and the drawings (unpacked, as :func:`viz.drawing.drawing`
    makes them, without ``find``). A kernel is named by its position in
    :func:`viz.code_view.kernel_nodes` from 1 (the chooser's option value); only kernels whose nodes
    the report's drawing of their first node does not all draw are listed."""
    graph = frame.graph
    known = {n.name for n in graph.nodes}  # a log may name others; they are drawn nowhere
    need = [(str(i), [n for n in names if n in known]) for i, (_, names) in enumerate(kernel_nodes(frame), 1)]
    need = [(i, names) for i, names in need if names and not set(names) <= _shown_for(d, opened, names[0])]
    if not need:
        return {}, []
    expanded = first_expanded(graph)
    top = layout(graph, expanded=expanded, engine="linear")
    index: dict[str, int] = {}
    shared: dict[frozenset[str], int] = {}
    out: list[dict[str, Any]] = []
    for key, names in need:
        paths = frozenset(opening(graph, top, names))
        if not paths:  # nothing folded: the first view draws them all
            continue
        if paths not in shared:
            shared[paths] = len(out)
            kd = drawing(layout(graph, expanded=expanded | paths, engine="linear"))
            kd["find"] = {}  # every node of the kernel is drawn; a module box opens the first view's drawing of it
            out.append(kd)
        index[key] = shared[paths]
    return index, out


def kernel_code_lines(frame: Frame) -> dict[str, list[Any]]:
    """Kernel (its chooser option value, from 1) -> [index of its Inductor graph in ``frame.inductor``,
    the lines of that graph's output code the widget's code tab marks for it (:func:`viz.code_view.kernel_lines`)];
    report.js marks them in the report's code tab when the kernel is chosen."""
    where = {kernel_key(g, k): (gi, g, k) for gi, g in enumerate(frame.inductor) for k in g.kernels}
    out = {}
    for i, (_, key) in enumerate(kernel_choices(frame), 1):
        gi, g, k = where[key]
        lines = kernel_lines(g, [k])
        if lines:
            out[str(i)] = [gi, lines]
    return out
