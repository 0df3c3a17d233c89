"""What the graph canvas draws: a Layout as JSON-friendly data (boxes, edges, labels), for the widget and the report.

Invariant: plain strings and numbers only (no markup: ``canvas.js`` sets every string with
``textContent`` / ``setAttribute``); no widget import, so the static report draws without the
widget stack (Note [Lazy public names] in viz/__init__.py).
"""

from __future__ import annotations

from typing import Any, Iterable

import msgspec

from tracer.model import Graph
from viz.graph_layout import Layout, source_line
from viz.grouping import graph_chains
from viz.markup import json_block, script_json
from viz.style import node_labels

__all__ = ["PACKED_BOX_KEYS", "PACKED_INTERNED", "drawing", "drawings_json", "search_index"]

# A box of a packed drawing (the static report's, Note [Compact drawings] in viz/report_graphs.py) is
# the list of these keys' values; the values at PACKED_INTERNED are indices into the report's string
# table. report.js unpacks with the same two tuples (constants.js, viz/browser_code.py).
PACKED_BOX_KEYS = ("id", "label", "sub", "role", "x", "y", "w", "h", "group", "part", "src")
PACKED_INTERNED = tuple(PACKED_BOX_KEYS.index(k) for k in ("sub", "role", "group", "part", "src"))


def _num(v: float) -> float | int:
    """A coordinate as JSON sends it: 0.1 px precision, integral values without ``.0``."""
    f = float(v)
    if f.is_integer():  # rounding keeps it: no round() (rows, heights and many x's are whole px)
        return int(f)
    r = round(f, 1)
    return int(r) if r.is_integer() else r


# Note [Drawing blocks written by msgspec]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The report's block of drawings (viz/report_graphs.py ``report_data``) was written by json.dumps: 16 ms
# of a small log's 0.44 s report (0.6 MB of JSON). msgspec writes it in 3.4 ms, the same bytes for
# strings, ints, lists and dicts with str keys (Note [Blocks written by msgspec] in viz/report_info.py)
# and for floats with 1e-4 <= |x| < 1e16, where both write the shortest repr alike; outside that
# msgspec writes ``1e16`` and ``0.00001`` for ``1e+16`` and ``1e-05``, and ``null`` for NaN and the
# infinities. A drawing's only floats are ``_num``'s coordinates: 0.1 px, so a non-integral one is at
# least 0.1 in size and below 2**53 (a larger float is integral, an int); the one that would be
# written differently is a non-finite one, as ``null``, and a drawing holds no null of its own. So
# ``drawings_json`` writes with msgspec and leaves the block to json.dumps when the text holds
# ``null`` (anywhere, in a string too: only slower) or msgspec refuses a value (a lone surrogate,
# another type). A block with other floats (a profile's ``heat``) is written by ``json_block``.
_encode = msgspec.json.Encoder().encode


def drawings_json(block: Any) -> str:
    """``json_block(block)`` for a block of drawings whose floats are all coordinates made here (Note
    [Drawing blocks written by msgspec])."""
    try:
        text = _encode(block)
        if b"null" not in text:  # else a non-finite coordinate (or the word in a string): json.dumps writes it
            return script_json(text.decode("utf-8"))
    except (msgspec.EncodeError, TypeError, ValueError):  # a lone surrogate, a type msgspec refuses: json.dumps's
        pass
    return json_block(block)


def drawing(layout: Layout, *, highlight: Iterable[str] = ()) -> dict[str, Any]:
    """The JSON state that ``canvas.js`` draws: ``layout`` minus what the browser does not need.

    A box is ``{"id", "label", "sub", "role", "x", "y", "w", "h"}`` plus ``"group"`` (a collapsed
    module box's path) and ``"part"`` (a joint graph's half) when set; an edge is ``{"src", "dst",
    "pts": [x0, y0, x1, y1, ...]}`` (bezier points as in :class:`viz.graph_layout.Edge`); ``"hi"`` lists
    highlighted box ids (edges between two of them are highlighted too); ``"src"`` is a node's user line,
    ``"find"`` maps a module box to the node names folded in it (:func:`search_index` says what search
    finds of each) and ``"nodes"`` counts the graph's nodes (the search box and the minimap use them).

    >>> from viz.synthetic import chain_graph
    >>> from viz.graph_layout import layout
    >>> d = drawing(layout(chain_graph(3, layers=1), engine="linear"), highlight=["l_x_"])
    >>> [b["id"] for b in d["boxes"]], d["hi"], sorted(d["edges"][0])
    (['l_x_', 'linear_0', 'output'], ['l_x_'], ['dst', 'pts', 'src'])
    """
    boxes = []
    seen: dict[float, float | int] = {}  # a layout repeats few coordinates (columns, rows, sizes): round each once

    def num(v: float) -> float | int:
        r = seen.get(v)
        if r is None:
            r = seen[v] = _num(v)
        return r

    for b in layout.boxes:
        box: dict[str, Any] = {"id": b.id, "label": b.label, "sub": b.sublabel, "role": b.role,
                               "x": num(b.x), "y": num(b.y), "w": num(b.w), "h": num(b.h)}
        if b.group is not None:
            box["group"] = b.group
        if b.partition:
            box["part"] = b.partition
        if b.source:
            box["src"] = b.source
        boxes.append(box)
    edges = [{"src": e.src, "dst": e.dst, "pts": [num(c) for p in e.points for c in p], **({"kind": e.kind} if e.kind else {})}
             for e in layout.edges]
    ids = {b.id for b in layout.boxes}
    found = {b.id: b.members for b in layout.boxes if b.members}
    return {"w": _num(max(layout.width, 1.0)), "h": _num(max(layout.height, 1.0)), "engine": layout.engine,
            "nodes": layout.nodes, "boxes": boxes, "edges": edges, "find": found,
            "hi": [h for h in dict.fromkeys(highlight) if h in ids]}


# Note [Search reaches folded nodes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The search box matches a node by its name, its op/target line and its source line, whether the node is
# drawn or folded in a collapsed module box, and counts nodes, not boxes. What it matches of a folded
# node is what the node's own box would show; going to one opens the module paths from the box's path
# down the node's module chain (the widget asks through its ``expanded`` trait, which Python owns, the
# report opens the box's own drawings, Note [Folding in the report] in viz/report_graphs.py) and centres
# the node once it is drawn. The widget gets these lines once per graph (:func:`search_index`, the
# canvas's ``search`` trait), not with every drawing: a drawing names only each box's folded nodes.
def search_index(graph: Graph, max_label: int = 40) -> dict[str, Any]:
    """What search matches of every node of ``graph`` and its module chain: ``{"strings": [...], "nodes":
    {name: [sub, src, chain]}, "chains": [[path, ...], ...]}``; ``sub`` (the box's second line), ``src``
    (its source line) and the paths are indices into ``strings``, ``chain`` into ``chains``.

    >>> from viz.synthetic import chain_graph
    >>> ix = search_index(chain_graph(3, layers=1))
    >>> [ix["strings"][i] for i in ix["chains"][ix["nodes"]["linear_0"][2]]]
    ["L['self']", "L['self'].layers", "L['self'].layers.0", "L['self'].layers.0.self_attn"]
    """
    strings: dict[str, int] = {"": 0}
    chains: dict[tuple[int, ...], int] = {}
    nodes = {}
    for n, chain in zip(graph.nodes, graph_chains(graph), strict=True):
        key = tuple(strings.setdefault(p, len(strings)) for p, _ in chain)
        nodes[n.name] = [strings.setdefault(node_labels(n, max_label)[1], len(strings)),
                         strings.setdefault(source_line(n.meta), len(strings)), chains.setdefault(key, len(chains))]
    return {"strings": list(strings), "nodes": nodes, "chains": [list(k) for k in chains]}
