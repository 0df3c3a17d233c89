"""``viz.layout()``: node boxes and edge paths for a graph, from ``dot`` or the linear layout; never hangs.

Invariant: only visible boxes (after module grouping) are laid out; ``dot`` runs only on graphs under
the measured limits (Note [dot limits]) and under a hard deadline, else the linear layout runs, so a
call returns in bounded time for any graph. Coordinates are px with y pointing down.

(``viz.layout`` is this module's ``layout`` function, re-exported; no name shadows a module.)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from tracer.model import Graph
from viz import layout_dot, layout_linear
from viz.backward_groups import RUN_TYPE_PREFIX
from viz.grouping import Item, Visible, first_expanded, graph_chains, threshold_for, visible
from viz.per_graph import per_graph
from viz.style import GROUP_ROLE, box_size, node_labels, shorten

__all__ = ["DOT_MAX_BOXES", "DOT_MAX_VIRTUAL", "ENGINES", "Box", "Edge", "Layout", "first_view", "layout", "opening", "visible_boxes"]

ENGINES = ("auto", "dot", "linear")
# See Note [dot limits] in viz/layout_dot.py for the measurements behind these two numbers.
DOT_MAX_BOXES = 600
DOT_MAX_VIRTUAL = 4000


@dataclass
class Box:
    """One drawn box: a node, or a collapsed module group. ``x, y`` is the top-left corner."""

    id: str  # node name, or "module:<path>" for a group (+ " [backward]" for a joint graph's backward half)
    label: str  # first line: node name or module path
    sublabel: str  # second line: op/target and format_meta, or module type and node count
    role: str  # a tracer.model NODE_ROLES value, or "group"
    x: float  # left edge, px
    y: float  # top edge, px (y grows downwards)
    w: float  # width, px (from the label length, Note [Box sizes from label lengths])
    h: float  # height, px
    group: Optional[str] = None  # module path if this box is a collapsed module group
    count: int = 1  # nodes inside a group, 1 otherwise
    partition: str = ""  # joint graphs: "forward" or "backward" (node meta "partition", or a group's half)
    members: list[str] = field(default_factory=list)  # a group's folded node names (search finds them)
    source: str = ""  # a node's user line "file.py:12  x = f(y)" (meta "source", or an AOT node's "from")


@dataclass
class Edge:
    """An edge between two boxes. ``points`` are cubic bezier control points: the start point, then
    groups of three (control 1, control 2, end), ending at the target box (where the arrow goes)."""

    src: str
    dst: str
    points: list[tuple[float, float]] = field(default_factory=list)
    kind: str = ""  # "" or "saved": a forward value read by the backward (Note [Saved values as their own edge kind])


@dataclass
class Layout:
    """Boxes and edges of one graph, ready to draw (:func:`viz.to_svg`) or to send to a browser."""

    boxes: list[Box]
    edges: list[Edge]
    width: float
    height: float
    engine: str  # "dot" or "linear": the engine that produced these coordinates
    grouped: bool  # nodes were folded into module groups (the graph is above the grouping threshold)
    note: str = ""  # why "auto"/"dot" ended up linear ("too many boxes", "dot timed out", ...), else ""
    nodes: int = 0  # nodes of the graph (a grouped layout draws fewer boxes)

    def box(self, id: str) -> Box:
        for b in self.boxes:
            if b.id == id:
                return b
        raise KeyError(f"no box {id!r} in layout (boxes: {[b.id for b in self.boxes][:20]})")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (points become [x, y] lists)."""
        d = dataclasses.asdict(self)
        for e in d["edges"]:
            e["points"] = [list(p) for p in e["points"]]
        return d


def _group_labels(item: Item, max_label: int) -> tuple[str, str]:
    path = item.group or ""
    if item.module_type.startswith(RUN_TYPE_PREFIX):  # Note [Runs of the no-module group]: what the run holds
        label, typ = item.module_type[len(RUN_TYPE_PREFIX):], f"no module \u00b7 run {path.rsplit('.', 1)[-1]}"
    else:
        label, typ = path, item.module_type.rsplit(".", 1)[-1]
    label = label if len(label) <= max_label else "\u2026" + label[-(max_label - 1):]
    sub = f"{typ} \u00b7 {item.count} nodes" if typ else f"{item.count} nodes"
    if item.partition:
        sub = f"{item.partition} \u00b7 {sub}"
    return label, shorten(sub, max_label)


def source_line(meta: dict[str, Any]) -> str:
    """The user line a node came from, "file.py:12  code", from meta "source" (Dynamo nodes) or
    "from" (AOT nodes, Note [Node.meta keys]); "" when the record has none."""
    src = meta.get("source") or meta.get("from")
    if not isinstance(src, dict) or not src.get("file"):
        return ""
    where = f"{str(src['file']).rsplit('/', 1)[-1]}:{src.get('line', '?')}"
    code = str(src.get("code") or "").strip()
    return f"{where}  {code}" if code else where


def _boxes(items: list[Item], max_label: int) -> list[Box]:
    out = []
    for it in items:
        if it.node is not None:
            label, sub = node_labels(it.node, max_label)
            w, h = box_size(label, sub)
            part = it.node.meta.get("partition")
            out.append(Box(it.id, label, sub, it.node.role, 0.0, 0.0, w, h,
                           partition=part if isinstance(part, str) else "", source=source_line(it.node.meta)))
        else:
            label, sub = _group_labels(it, max_label)
            w, h = box_size(label, sub, group=True)
            out.append(Box(it.id, label, sub, GROUP_ROLE, 0.0, 0.0, w, h, group=it.group, count=it.count,
                           partition=it.partition, members=list(it.members)))
    return out


def opening(graph: Graph, lay: Layout, names: Iterable[str]) -> set[str]:
    """The module paths to open for each of ``names`` folded in a box of ``lay`` (a layout of ``graph``) to
    show as its own box: the box's path, then every path below it on the node's module chain (Note
    [Search reaches folded nodes] in viz/drawing.py)."""
    wanted, out = set(names), set()
    folding = [(b, wanted.intersection(b.members)) for b in lay.boxes if b.group is not None]
    if not any(hit for _, hit in folding):
        return out
    index = {n.name: i for i, n in enumerate(graph.nodes)}
    chains = graph_chains(graph)
    for b, hit in folding:
        for name in hit:
            paths = [p for p, _ in chains[index[name]]]
            out.update(paths[paths.index(b.group):] if b.group in paths else [b.group])
    return out


def visible_boxes(graph: Graph, *, expanded: Iterable[str] = frozenset(), threshold: Optional[int] = None,
                  max_label: int = 40) -> tuple[list[Box], Visible]:
    """The boxes ``graph`` shows with the module paths ``expanded`` open (not placed yet: x = y = 0)
    and the grouping they come from: what :func:`layout` lays out and :func:`viz.to_dot` writes, so
    both group and label alike. ``threshold`` defaults to :func:`viz.grouping.threshold_for`.
    """
    if threshold is None:
        threshold = threshold_for(graph)
    vis = visible(graph, expanded, threshold)
    return _boxes(vis.items, max_label), vis


def virtual_nodes(boxes: list[Box], edges: list[tuple[str, str]]) -> int:
    """How many virtual nodes ``dot`` would add: rows crossed by edges, using our longest-path ranks."""
    index = {b.id: i for i, b in enumerate(boxes)}
    ie = [(index[s], index[d]) for s, d in edges]
    rank = layout_linear.ranks(len(boxes), ie)
    return sum(max(0, abs(rank[d] - rank[s]) - 1) for s, d in ie)


def layout(graph: Graph, *, expanded: Iterable[str] = frozenset(), engine: str = "auto", deadline: float = 5.0,
           max_label: int = 40, threshold: Optional[int] = None) -> Layout:
    """Lay out ``graph``: boxes for visible nodes and collapsed module groups, edges as bezier paths.

    ``expanded`` names module paths the user opened (see :mod:`viz.grouping`); ``threshold`` is the
    node count above which nodes fold into module boxes (default :func:`viz.grouping.threshold_for`:
    0 for a graph that carries module stacks, see Note [Group whatever the size]). ``engine="auto"`` uses
    ``dot`` when the graph is small and short-edged enough (Note [dot limits]) and the linear layout
    otherwise; ``"dot"`` tries dot on any size, still bounded by ``deadline`` seconds, and falls back to
    linear (``Layout.note`` says why); ``"linear"`` never runs dot.

    >>> from viz.synthetic import chain_graph
    >>> lay = layout(chain_graph(10, layers=1), engine="linear")
    >>> lay.engine, len(lay.boxes), lay.boxes[0].id
    ('linear', 10, 'l_x_')
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown layout engine {engine!r} (must be one of {list(ENGINES)})")
    if deadline <= 0:
        raise ValueError(f"deadline must be positive seconds (got {deadline!r})")
    boxes, vis = visible_boxes(graph, expanded=expanded, threshold=threshold, max_label=max_label)
    note = ""
    if engine != "linear":
        if engine == "auto" and len(boxes) > DOT_MAX_BOXES:
            note = f"{len(boxes)} boxes > {DOT_MAX_BOXES}: linear layout"
        elif engine == "auto" and (v := virtual_nodes(boxes, vis.edges)) > DOT_MAX_VIRTUAL:
            note = f"long edges ({v} virtual nodes > {DOT_MAX_VIRTUAL}): linear layout"
        else:
            got = _dot(boxes, vis.edges, vis.kinds, vis.ranking, deadline, capped=len(boxes) + virtual_nodes(boxes, vis.edges)
                       >= layout_dot.NSLIMIT_FROM)
            if got is not None:
                return Layout(boxes, got[0], got[1], got[2], "dot", vis.grouped, nodes=len(graph.nodes))
            note = f"dot did not finish within {deadline:g} s (or is not installed): linear layout"
    paths, width, height = layout_linear.place(boxes, vis.edges, vis.ranking)  # Note [Saved edges do not rank]
    edges = [Edge(s, d, p, k) for (s, d), p, k in zip(vis.edges, paths, vis.kinds, strict=True)]
    return Layout(boxes, edges, width, height, "linear", vis.grouped, note, nodes=len(graph.nodes))


@per_graph
def first_view(graph: Graph) -> tuple[frozenset[str], Layout]:
    """The module boxes ``graph`` is first shown with (:func:`viz.grouping.first_expanded`) and its linear
    layout with them open: the first view of the static report and of a recompile's diff, which is
    rendered right after the later frame it reads, so a graph's first view is laid out once for both
    (Note [Computed once per graph] in viz/per_graph.py). A Layout is read, never changed, by its users."""
    expanded = first_expanded(graph)
    return expanded, layout(graph, expanded=expanded, engine="linear")


def _dot(boxes: list[Box], edges: list[tuple[str, str]], kinds: list[str], ranking: list[tuple[str, str]],
         deadline: float, *, capped: bool):
    source = layout_dot.layout_source(boxes, edges, ranking=ranking)
    res = layout_dot.run_dot(source, deadline, capped=capped)
    if res is None or any(f"n{i}" not in res.centers for i in range(len(boxes))):
        return None
    name = {b.id: f"n{i}" for i, b in enumerate(boxes)}
    m = layout_linear.MARGIN
    for b in boxes:
        cx, cy = res.centers[name[b.id]]
        b.x, b.y = round(cx - b.w / 2 + m, 1), round(cy - b.h / 2 + m, 1)
    out = []
    for (s, d), kind in zip(edges, kinds, strict=True):
        pts = res.edges.get((name[s], name[d]))
        if pts is None:  # dot dropped it (should not happen): draw a straight segment
            bs, bd = next(b for b in boxes if b.id == s), next(b for b in boxes if b.id == d)
            p, q = (bs.x + bs.w / 2, bs.y + bs.h), (bd.x + bd.w / 2, bd.y)
            pts = [p, p, q, q]
        else:
            pts = [(round(x + m, 1), round(y + m, 1)) for x, y in pts]
        out.append(Edge(s, d, pts, kind))
    return out, round(res.width + 2 * m, 1), round(res.height + 2 * m, 1)
