"""The static report's graphs: every graph of a frame (root, HOP bodies, AOT joint / forward / backward /
inference) as layout data, and the one script that draws them (``canvas.js`` + ``report.js``).

Invariant: the report sends layout data, never SVG markup, and the drawing code exactly once per page;
user strings reach the page only inside the JSON block (``<``, ``>``, ``&`` written as ``\\u`` escapes, so
no string can end the ``<script>`` element) and from there only through ``textContent`` /
``setAttribute``. Layout is the explorer's (``viz.layout``, linear engine: deterministic), grouped the
same way, with the same first view (:func:`viz.grouping.first_expanded`). See Note [Folding in the report].
"""

from __future__ import annotations

import pathlib
from typing import Any

from tracer.model import Frame, Graph
from viz.drawing import drawing
from viz.graph_layout import layout
from viz.grouping import first_expanded
from viz.markup import json_block
from viz.style import css

__all__ = ["canvas_css", "frame_graphs", "graph_drawing", "pack", "report_data", "report_module",
           "report_script"]

_HERE = pathlib.Path(__file__).parent
_EXPORT = "export default { render };"

# Note [Folding in the report]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A static page has no Python to lay out a graph with a module box opened. So each collapsed module
# box of a graph's first view carries (``open``) the layout of the nodes folded in it; a click on the
# box shows that layout in the same view, "back" returns. Every node is laid out at most twice (in
# its box, and inside it), which keeps the 12-layer transformer's training report under 1 MB; the
# search box finds a folded node through the box's ``find`` list and centres on the box.


def _drawing_code() -> str:
    """canvas.js's drawing code (its anywidget export removed), then report.js."""
    canvas = (_HERE / "canvas.js").read_text(encoding="utf-8")
    if _EXPORT not in canvas:
        raise RuntimeError(f"viz/canvas.js no longer ends with {_EXPORT!r}: update viz/report_graphs.py")
    return canvas.replace(_EXPORT, "") + "\n" + (_HERE / "report.js").read_text(encoding="utf-8")


def report_script() -> str:
    """The page's one script: canvas.js's drawing code (its anywidget export removed) and report.js."""
    script = _drawing_code()
    if "</" in script or "<!--" in script or "<script" in script.lower():  # would end or confuse the <script> element
        raise RuntimeError("viz/canvas.js or viz/report.js contains '</', '<!--' or '<script': write them differently")
    # One function scope: a page with several reports (the CLI's) declares nothing twice.
    return "(() => {\n" + script + "\n})();"


_PAGE_LOOP = "// A page may hold several reports"  # report.js's last part: set up every report of the page


def report_module(module: str) -> str:
    """The anywidget module ``module`` with ``dsReports`` defined before it: report.js's set-up
    functions (``dsReport``, ``dsGuards``, ``dsModuleLinks``), which the module calls on the report
    fragments it places in its element (markup placed in a widget runs no script of its own). The
    page's loop over every report of the document is left out: a widget sets up only its own."""
    code = _drawing_code()
    if code.count(_PAGE_LOOP) != 1:
        raise RuntimeError(f"viz/report.js no longer has one {_PAGE_LOOP!r} part: update viz/report_graphs.py")
    code = code[:code.index(_PAGE_LOOP)]
    return ("const dsReports = (() => {\n" + code + "\nreturn { dsReport, dsGuards, dsModuleLinks };\n})();\n"
            + module)


def canvas_css() -> str:
    """The canvas's stylesheet (viz/canvas.css), for the report's one ``<style>``."""
    return (_HERE / "canvas.css").read_text(encoding="utf-8").replace("</", "<\\/")


def frame_graphs(frame: Frame) -> list[tuple[str, str, Graph, list[str]]]:
    """(kind, title, graph, highlighted node names) of every non-empty graph of ``frame``, in the order
    the report shows them: root, HOP bodies (parents first), then AOT joint, forward, backward,
    inference with the saved values highlighted on both sides."""
    out: list[tuple[str, str, Graph, list[str]]] = [("root", "Root graph (Dynamo)", frame.graph, [])]
    for name, sg in frame.subgraphs.items():
        out.append(("body", f"HOP body {name} [{sg.hop}]", sg.graph, []))
    if frame.aot is not None:
        saved = [s.name for s in frame.aot.saved]
        for kind in ("joint", "forward", "backward", "inference"):
            g = getattr(frame.aot, kind)
            if g is not None:
                out.append((kind, f"AOT {kind} graph", g, saved if kind != "inference" else []))
    return [e for e in out if e[2].nodes]


# Note [Compact drawings]
# ~~~~~~~~~~~~~~~~~~~~~~~
# The report holds every node of a training step's graphs about twice (Note [Folding in the report]),
# so the drawing is packed: a box is a list [id, label (0: same as id), sub, role, x, y, w, h, group,
# part, src] (trailing empties dropped) where sub, role, group, part and src are indices into the
# report's one string table (a layer's nodes share their source line and many their op line), a
# module box's ``find`` list is left out when the box's own drawing (``open``) names its nodes, an edge is [src box index, dst box index] when its path is the
# linear layout's plain S-curve between the two boxes (viz/layout_linear.py place) and
# [src, dst, points] otherwise (an edge routed through a lane). report.js's unpack() rebuilds the
# drawing canvas.js draws. Coordinates keep viz.canvas's 0.1 px.
_BOX_KEYS = ("id", "label", "sub", "role", "x", "y", "w", "h", "group", "part", "src")


_INTERNED = (2, 3, 8, 9, 10)  # positions of sub, role, group, part, src in a packed box


def pack(d: dict[str, Any], strings: dict[str, int]) -> dict[str, Any]:
    """``d`` (from :func:`viz.canvas.drawing`) packed as in Note [Compact drawings]; ``strings`` is the
    report's string table (string -> index, index 0 is ""), extended in place.

    >>> from viz.synthetic import chain_graph
    >>> from viz.graph_layout import layout
    >>> table = {"": 0}
    >>> p = pack(drawing(layout(chain_graph(3, layers=1), engine="linear", threshold=9)), table)
    >>> p["b"][0][:4], p["e"], list(table)[1:3]
    (['l_x_', 0, 1, 2], [[0, 1], [1, 2]], ['input · f32[s0, 128, 512]', 'operand'])
    """
    index = {b["id"]: i for i, b in enumerate(d["boxes"])}
    boxes = []
    for b in d["boxes"]:
        row = [b.get(k, 0) or 0 for k in _BOX_KEYS]
        if row[1] == row[0]:
            row[1] = 0
        for k in _INTERNED:
            row[k] = strings.setdefault(row[k], len(strings)) if row[k] else 0
        while row and row[-1] == 0 and len(row) > 8:
            row.pop()
        boxes.append(row)
    edges = []
    for e in d["edges"]:
        s, t = d["boxes"][index[e["src"]]], d["boxes"][index[e["dst"]]]
        x0, y0, x1, y1 = s["x"] + s["w"] / 2, s["y"] + s["h"], t["x"] + t["w"] / 2, t["y"]
        mid = (y0 + y1) / 2
        plain = [x0, y0, x0, mid, x1, mid, x1, y1]
        pts = e["pts"]
        same = len(pts) == 8 and all(abs(a - b) <= 0.11 for a, b in zip(pts, plain, strict=True))
        edges.append([index[e["src"]], index[e["dst"]]] + ([] if same else [pts]))
    out = {k: v for k, v in d.items() if k not in ("boxes", "edges")}
    out["b"], out["e"] = boxes, edges
    return out


def graph_drawing(graph: Graph, highlight: list[str], strings: dict[str, int]) -> dict[str, Any]:
    """The first view's drawing of ``graph`` plus, per collapsed module box, the drawing of its nodes
    (``"open"``: box id -> drawing). See Note [Folding in the report]."""
    lay = layout(graph, expanded=first_expanded(graph), engine="linear")
    wanted = set(highlight)  # a module box holding a highlighted node (a saved value) is marked too
    d = drawing(lay, highlight=[*highlight, *(b.id for b in lay.boxes if wanted.intersection(b.members))])
    by_name = {n.name: n for n in graph.nodes}
    opened = {}
    for b in lay.boxes:
        if b.members:
            sub = Graph(nodes=[by_name[m] for m in b.members], name=graph.name)
            opened[b.id] = pack(drawing(layout(sub, engine="linear", threshold=len(sub.nodes)), highlight=highlight),
                                strings)
    d["find"] = {k: v for k, v in d["find"].items() if k not in opened}
    d = pack(d, strings)
    d["open"] = opened
    return d


def report_data(frames: list[Frame]) -> tuple[str, list[list[tuple[str, str, int, int]]]]:
    """The JSON block of a report (role CSS and every graph's drawing) and, per frame, its graphs as
    (kind, title, index into the block's ``graphs``, node count)."""
    graphs: list[dict[str, Any]] = []
    strings: dict[str, int] = {"": 0}
    per_frame = []
    for f in frames:
        rows = []
        for kind, title, g, hi in frame_graphs(f):
            rows.append((kind, title, len(graphs), len(g.nodes)))
            graphs.append(graph_drawing(g, hi, strings))
        per_frame.append(rows)
    return json_block({"css": css(".ds-graph"), "strings": list(strings), "graphs": graphs}), per_frame
