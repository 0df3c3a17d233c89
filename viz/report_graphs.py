"""The static report's graphs: every graph of a frame (root, HOP bodies, AOT joint / forward / backward /
inference) as layout data; the script that draws them is viz/browser_code.py's ``"report"`` bundle.

Invariant: the report sends layout data, never SVG markup, and the drawing code exactly once per page;
user strings reach the page only inside the JSON block (``<``, ``>``, ``&`` written as ``\\u`` escapes, so
no string can end the ``<script>`` element) and from there only through ``textContent`` /
``setAttribute``. Layout is the explorer's (``viz.layout``, linear engine: deterministic), grouped the
same way, with the same first view (:func:`viz.grouping.first_expanded`). See Note [Folding in the report].
"""

from __future__ import annotations

import collections
import hashlib
import pathlib
from typing import Any, Callable, Optional

import msgspec

from tracer._no_gc import no_cyclic_gc
from tracer.model import Frame, Graph
from viz.browser_code import bundle
from viz.drawing import PACKED_BOX_KEYS, PACKED_INTERNED, drawing, drawings_json
from viz.graph_layout import first_view, layout
from viz.grouping import distinct_chains, part_chains
from viz.markup import json_block
from viz.report_kernels import kernel_code_lines, kernel_drawings
from viz.style import css

__all__ = ["DrawingCache", "canvas_css", "frame_graphs", "graph_drawing", "pack", "report_data", "report_script"]

_HERE = pathlib.Path(__file__).parent
# Note [Folding in the report]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A static page has no Python to lay out a graph with a module box opened. So each collapsed module
# box of a graph's first view carries (``open``) the layout of what it holds one level down, grouped
# like the widget's (``transformer.h`` shows ``h.0`` ... ``h.3``), and each module box there carries
# its own, down to the nodes; a click on a box shows its layout in the same view, "back" goes one level
# up. A node is drawn as its own box once, at its module's level; above that it is part of a box.
# The search box finds a folded node through these drawings (report.js unpack), opens the boxes on
# the way and centres the node (Note [Search reaches folded nodes] in viz/drawing.py).


def report_script() -> str:
    """The page's one script: ``report.js`` and the modules it imports, then ``report_page.js`` (set up
    every report of the page), as one classic script (:func:`viz.browser_code.bundle`)."""
    return bundle("report")


def canvas_css() -> str:
    """The canvas's stylesheet (viz/canvas.css), for the report's one ``<style>``."""
    return (_HERE / "canvas.css").read_text(encoding="utf-8").replace("</", "<\\/")


def frame_graphs(frame: Frame) -> list[tuple[str, str, Graph, list[str]]]:
    """(kind, title, graph, highlighted node names) of every non-empty graph of ``frame``, in the order
    the report shows them: root, HOP bodies (parents first), then AOT joint, forward, backward,
    inference with the saved values highlighted on both sides."""
    root = f"Root graph (torch.export, {frame.export.stage})" if frame.export is not None else "Root graph (Dynamo)"
    out: list[tuple[str, str, Graph, list[str]]] = [("root", root, frame.graph, [])]
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
# [src, dst, points] otherwise (an edge routed through a lane); a saved-value edge adds its kind,
# [src, dst, points or 0, "saved"]. report.js's unpack() rebuilds the
# drawing view.js draws. Coordinates keep viz.canvas's 0.1 px. The box keys and interned positions
# are viz.drawing's PACKED_BOX_KEYS and PACKED_INTERNED, which report.js reads from constants.js.
_BOX_KEYS = PACKED_BOX_KEYS
_INTERNED = PACKED_INTERNED


def pack(d: dict[str, Any], strings: dict[str, int]) -> dict[str, Any]:
    """``d`` (from :func:`viz.canvas.drawing`) packed as in Note [Compact drawings]; ``strings`` is the
    report's string table (string -> index, index 0 is ""), extended in place.

    >>> from viz.synthetic import chain_graph
    >>> from viz.graph_layout import first_view, layout
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
        si, ti = index[e["src"]], index[e["dst"]]
        s, t = d["boxes"][si], d["boxes"][ti]
        x0, y0, x1, y1 = s["x"] + s["w"] / 2, s["y"] + s["h"], t["x"] + t["w"] / 2, t["y"]
        mid = (y0 + y1) / 2
        pts = e["pts"]
        # the plain S-curve [x0, y0, x0, mid, x1, mid, x1, y1], each coordinate within 0.11 px
        same = (len(pts) == 8 and abs(pts[0] - x0) <= 0.11 and abs(pts[1] - y0) <= 0.11 and abs(pts[2] - x0) <= 0.11
                and abs(pts[3] - mid) <= 0.11 and abs(pts[4] - x1) <= 0.11 and abs(pts[5] - mid) <= 0.11
                and abs(pts[6] - x1) <= 0.11 and abs(pts[7] - y1) <= 0.11)
        tail = [0 if same else pts, e["kind"]] if e.get("kind") else [] if same else [pts]
        edges.append([si, ti] + tail)
    out = {k: v for k, v in d.items() if k not in ("boxes", "edges")}
    out["b"], out["e"] = boxes, edges
    return out


# Note [Drawings of equal graphs]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A drawing is a pure function of the graph's nodes (every field: name, op, target, args, role, meta),
# its name and the highlighted names, so equal graphs (the same graph on every rank of a job, a
# recompile that traced the same graph again, a log repeated) are laid out once: ``DrawingCache`` keys
# the unpacked drawing on a digest of all of that (msgspec's JSON of the nodes) and keeps the last
# ``size`` of them (a bounded memory, whatever the log's length: 8 by default, which laid out no graph
# more than 32 did in the repeated 106 MB log, the distinct-frames log or a real 8-rank job, and held
# 3.6 MB less at the distinct-frames log's peak, bench/RESULTS.md 2026-11-27). Only the packing into the page's
# string table runs again, so the output is the same byte for byte with or without the cache; and
# when every graph of a ``report_data`` call has a key seen together before (the next copy of the same
# frame), the whole JSON block is reused.

# Note [One digest per node list]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Both the drawing key and the facts key (viz/report_info.py) need a digest of a graph's nodes, and
# encoding every node to JSON was most of what a repeated frame cost. ``DrawingCache.nodes_digest``
# encodes a node list once per list *object* while a ``stable`` cache lives (the one ``write_report``
# makes), holding the list so that its id names no other list meanwhile: the facts key of a frame reuses its
# drawings' digests, and graphs that share one node list (Note [Read-only graphs] in
# tracer/trace_log/deferred.py: every equal graph of a log read by ``dynascope report``) are encoded
# once in all. It is exact as long as no node changes while one report is written, which nothing
# that writes a report does (viz assigns no Node field); a cache made without ``stable`` (the
# default: its caller may change nodes between two uses) encodes each time.

# Note [Tables of shared node lists]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Equal graphs of a log read by ``dynascope report`` share one node list (Note [Read-only graphs]),
# and a frame's module table and its root's lifted-inputs table are functions of its graphs' nodes
# and a few plain values: 63 repeats of one training frame made the same two tables 63 times (a
# fifth of a repeated frame's cost). ``DrawingCache.text`` keeps such a table by the identity of
# the node lists it was made from, under the same contract as Note [One digest per node list]: only
# in a ``stable`` cache, holding the lists (an id names no other list meanwhile), exact because no
# node changes while one report is written. Lists that are equal but not the same object are made again.

class DrawingCache:
    """The last ``size`` unpacked drawings by Note [Drawings of equal graphs]'s key; ``hits`` counts reuses."""

    def __init__(self, size: int = 8, stable: bool = False) -> None:
        self.size, self.hits = size, 0
        self.stable = stable  # no node changes while this cache lives: Note [One digest per node list]
        self._items: collections.OrderedDict[bytes, tuple[dict[str, Any], dict[str, dict[str, Any]]]] = \
            collections.OrderedDict()
        # whole drawings blocks of report_data by the keys of all their graphs (the last 4)
        self.blocks: collections.OrderedDict[bytes, tuple[str, list[list[tuple[str, str, int, int]]]]] = \
            collections.OrderedDict()
        # id(node list) -> (that list, its digest): See Note [One digest per node list]
        self._digests: collections.OrderedDict[int, tuple[list[Any], Optional[bytes]]] = collections.OrderedDict()
        # (ids of node lists, extra) -> (those lists, a table's HTML): See Note [Tables of shared node lists]
        self._texts: collections.OrderedDict[tuple[Any, ...], tuple[tuple[Any, ...], str]] = collections.OrderedDict()

    def nodes_digest(self, nodes: list[Any]) -> Optional[bytes]:
        """SHA-256 of msgspec's JSON of ``nodes`` (None: a meta value JSON cannot hold), computed once
        per list object while a ``stable`` cache lives (Note [One digest per node list])."""
        if not self.stable:
            return _digest(nodes)
        got = self._digests.get(id(nodes))
        if got is not None and got[0] is nodes:
            self._digests.move_to_end(id(nodes))
            return got[1]
        digest = _digest(nodes)
        self._digests[id(nodes)] = (nodes, digest)  # the list held: its id cannot name another list meanwhile
        while len(self._digests) > 16:  # a frame's graphs; more would keep let-go frames' nodes alive
            self._digests.popitem(last=False)
        return digest

    def graph_key(self, graph: Graph, highlight: list[str]) -> Optional[bytes]:
        """:meth:`key`, with the nodes' digest from :meth:`nodes_digest`."""
        return _graph_key(graph, highlight, self.nodes_digest(graph.nodes))

    @staticmethod
    def key(graph: Graph, highlight: list[str]) -> Optional[bytes]:
        """The drawing's key: a digest of the graph's name, ``highlight`` and every field of its nodes;
        None when a meta value cannot be JSON (drawn without the cache)."""
        return _graph_key(graph, highlight, _digest(graph.nodes))

    def text(self, lists: tuple[Optional[list[Any]], ...], extra: Any, make: Callable[[], str]) -> str:
        """``make()``, a table made from the node lists ``lists`` (and ``extra``), made once per list
        *objects* while a ``stable`` cache lives (Note [Tables of shared node lists])."""
        if not self.stable:
            return make()
        key = (tuple(map(id, lists)), extra)
        hit = self._texts.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], lists, strict=True)):
            self._texts.move_to_end(key)
            return hit[1]
        out = self._texts[key] = (lists, make())  # the lists held: their ids name no other list meanwhile
        while len(self._texts) > 8:
            self._texts.popitem(last=False)
        return out[1]

    def get(self, key: bytes) -> Optional[tuple[dict[str, Any], dict[str, dict[str, Any]]]]:
        hit = self._items.get(key)
        if hit is not None:
            self._items.move_to_end(key)
            self.hits += 1
        return hit

    def put(self, key: bytes, value: tuple[dict[str, Any], dict[str, dict[str, Any]]]) -> None:
        self._items[key] = value
        while len(self._items) > self.size:
            self._items.popitem(last=False)


def _digest(nodes: list[Any]) -> Optional[bytes]:
    try:
        return hashlib.sha256(msgspec.json.encode(nodes)).digest()  # twice blake2b's speed here (SHA extensions)
    except (TypeError, msgspec.EncodeError):  # a meta value JSON cannot hold
        return None


def _graph_key(graph: Graph, highlight: list[str], nodes: Optional[bytes]) -> Optional[bytes]:
    if nodes is None:
        return None
    return hashlib.sha256(msgspec.json.encode([graph.name, highlight]) + nodes).digest()


def _unpacked(graph: Graph, highlight: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The first view's drawing and, per collapsed module box, (its drawing one level down, the same
    for the boxes inside it): unpacked, so that DrawingCache can keep it (Note [Folding in the report])."""
    expanded, lay = first_view(graph)  # the diff of a recompile drawing this graph reads it too
    d = _drawing(lay, highlight)
    opened = _opened(graph, lay, expanded, highlight)
    d["find"] = {k: v for k, v in d["find"].items() if k not in opened}
    return d, opened


def _drawing(lay: Any, highlight: list[str]) -> dict[str, Any]:
    if not highlight:  # most graphs: no box to look into
        return drawing(lay)
    wanted = set(highlight)  # a module box holding a highlighted node (a saved value) is marked too
    return drawing(lay, highlight=[*highlight, *(b.id for b in lay.boxes if wanted.intersection(b.members))])


def _opened(graph: Graph, lay: Any, expanded: frozenset[str], highlight: list[str],
            top: Optional[tuple[Graph, dict[str, int]]] = None) -> dict[str, Any]:
    """Box id -> (drawing of the nodes folded in it one level down, its own ``_opened``): the box's
    module path and the paths above it open, the modules inside it folded. ``top``: the graph of the
    first view and its nodes' positions by name (a box's nodes are some of them), made once for all levels."""
    if top is None:
        top = (graph, {n.name: i for i, n in enumerate(graph.nodes)})
    whole, index = top
    out = {}
    for b in lay.boxes:
        if not b.members:
            continue
        at = [index[m] for m in b.members]
        sub = Graph(nodes=[whole.nodes[i] for i in at], name=graph.name)
        part_chains(sub, whole, at)  # graph_chains(sub) from the top graph's (Note [Parts of a graph])
        inner = set(expanded) | {b.group}
        for chain, _ in distinct_chains(sub):  # Note [Equal chains shared]
            paths = [p for p, _ in chain]
            inner.update(paths[:paths.index(b.group)] if b.group in paths else ())
        sub_lay = layout(sub, expanded=inner, engine="linear", threshold=0)
        d = _drawing(sub_lay, highlight)
        d["find"] = {}  # each module box's own drawing names its nodes (report.js unpack)
        out[b.id] = (d, _opened(sub, sub_lay, frozenset(inner), highlight, top))
    return out


def _packed(d: dict[str, Any], opened: dict[str, Any], strings: dict[str, int]) -> dict[str, Any]:
    """``pack`` of a drawing and, under ``"open"``, of every drawing nested in it (boxes first)."""
    kids = {k: _packed(sd, so, strings) for k, (sd, so) in opened.items()}
    out = pack(d, strings)
    out["open"] = kids
    return out


def graph_drawing(graph: Graph, highlight: list[str], strings: dict[str, int],
                  cache: Optional[DrawingCache] = None) -> dict[str, Any]:
    """The first view's drawing of ``graph`` plus, per collapsed module box, the drawing of what it holds
    one level down (``"open"``: box id -> drawing, nested the same way). See Note [Folding in the report];
    with ``cache``, an equal graph
    drawn before is not laid out again (Note [Drawings of equal graphs])."""
    return _graph_drawing(graph, highlight, strings, cache, cache.graph_key(graph, highlight) if cache is not None else None)


def _graph_drawing(graph: Graph, highlight: list[str], strings: dict[str, int], cache: Optional[DrawingCache],
                   key: Optional[bytes], frame: Optional[Frame] = None) -> dict[str, Any]:
    got = cache.get(key) if cache is not None and key is not None else None
    if got is None:
        got = _unpacked(graph, highlight)
        if cache is not None and key is not None:
            cache.put(key, got)
    d, opened = got
    out = _packed(d, opened, strings)
    if frame is not None and frame.inductor:  # the root graph: kernels drawn apart (Note [One kernel chooser])
        index, kds = kernel_drawings(frame, d, opened)
        if kds:
            out["k"], out["kd"] = index, [pack(kd, strings) for kd in kds]
        lines = kernel_code_lines(frame)
        if lines:
            out["kl"] = lines
    return out


# Note [No cyclic GC while a report renders]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A frame's drawings (layouts, packed boxes) and its nodes' facts (viz/report_info.py) are many small
# lists and dicts, acyclic, most of them garbage once the JSON block is written; building them set off
# young and full collections that walked the loaded capture for nothing (the report of the bench's
# transformer12 training-step log: 0.10-0.13 s of ~1.1 s CPU in ``gc`` before, 0.05 s after, the one
# full collection left being write_report's own after the capture; bench/RESULTS.md). So both run in
# ``tracer._no_gc.no_cyclic_gc(young_first=True)``, as the explorer's build does; templates (whose
# render contexts are cycles) run outside it, so their garbage is collected as before.
def report_data(frames: list[Frame], cache: Optional[DrawingCache] = None,
                times: Optional[list[dict[str, dict[str, float]]]] = None
                ) -> tuple[str, list[list[tuple[str, str, int, int]]]]:
    """The JSON block of a report (role CSS and every graph's drawing) and, per frame, its graphs as
    (kind, title, index into the block's ``graphs``, node count); ``cache``: see :func:`graph_drawing`.
    ``times``: per frame, graph kind -> node -> µs (:func:`viz.profile_view.graph_times`): each drawing
    gets ``"heat"`` (Note [Time on the drawing]); such graphs are drawn without the cache."""
    if times is not None:
        cache = None
    todo = [[(kind, title, g, hi, cache.graph_key(g, hi) if cache is not None else None)
             for kind, title, g, hi in frame_graphs(f)] for f in frames]
    block_key = None
    if cache is not None and all(e[4] is not None for rows in todo for e in rows):
        kernels = [[(g.output_code, [(k.name, k.dynamo_nodes) for k in g.kernels]) for g in f.inductor]
                   for f in frames]  # kernels' drawings and code lines are in the block too
        block_key = hashlib.blake2b(repr([[[(e[0], e[1], len(e[2].nodes), e[4]) for e in rows] for rows in todo],
                                          kernels]).encode(), digest_size=20).digest()
        hit = cache.blocks.get(block_key)
        if hit is not None:
            cache.blocks.move_to_end(block_key)
            cache.hits += sum(len(rows) for rows in todo)
            return hit
    graphs: list[dict[str, Any]] = []
    strings: dict[str, int] = {"": 0}
    per_frame = []
    with no_cyclic_gc(young_first=True):  # Note [No cyclic GC while a report renders]
        for fi, entries in enumerate(todo):
            rows = []
            for kind, title, g, hi, key in entries:
                rows.append((kind, title, len(graphs), len(g.nodes)))
                graphs.append(_graph_drawing(g, hi, strings, cache, key, frames[fi] if kind == "root" else None))
                if times is not None and times[fi].get(kind):
                    _heat(graphs[-1], times[fi][kind], max(times[fi][kind].values()))
            per_frame.append(rows)
        block = {"css": css(".ds-graph"), "strings": list(strings), "graphs": graphs}
        out = (drawings_json(block) if times is None else json_block(block)), per_frame  # Note [Drawing blocks written by msgspec]
    if block_key is not None:
        cache.blocks[block_key] = out
        while len(cache.blocks) > 4:
            cache.blocks.popitem(last=False)
    return out


# Note [Time on the drawing]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# A profiled report colours each graph by time: a packed drawing gets ``"heat"``: box id -> [share of
# the graph's busiest node (0..1], µs], for every node box with time and every module box whose nodes
# (in its own drawings, at any depth) have some; viz/svg_draw.js fills the box by the share and puts the
# time in its tooltip. Only the Profile's own numbers (viz/profile_view.py graph_times), never estimated.
def _heat(packed: dict[str, Any], times: dict[str, float], top: float) -> float:
    """Add ``"heat"`` to ``packed`` and the drawings nested in it; the total µs of its node boxes."""
    heat: dict[str, list[float]] = {}
    total = 0.0
    for row in packed["b"]:
        box = row[0]
        us = _heat(packed["open"][box], times, top) if box in packed.get("open", {}) else times.get(box, 0.0)
        if us > 0 and top > 0:
            heat[box] = [round(min(us / top, 1.0), 3), round(us, 1)]
            total += us
    packed["heat"] = heat
    return total
