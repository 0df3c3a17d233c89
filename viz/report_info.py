"""The static report's inspector data: ``viz.node_info`` of every drawn node, per graph, for the
browser code that draws the widget's inspector too (viz/inspector.js, Note [One inspector]).

Invariant: the block holds exactly ``node_info``'s dicts (the same function the explorer calls), in the
order :func:`viz.report_graphs.report_data` numbers the graphs, so the report's ``data-graph`` index
finds them; strings are stored once (Note [Interned node facts]) and come back equal; the block is
:func:`viz.markup.json_block` JSON, read with ``JSON.parse`` and shown as text only.

>>> import json
>>> from tracer.model import Frame
>>> from viz.synthetic import chain_graph
>>> block = json.loads(report_info([Frame("0/0", "f.py:1 in f", graph=chain_graph(3, layers=1))]))
>>> info = unintern(block["graphs"][0]["l_x_"], block["strings"])
>>> info["name"], info["graph"], info["users"]
('l_x_', '', ['linear_0'])
"""

from __future__ import annotations

from typing import Any

from tracer.model import Frame, Graph
from viz.info import node_info
from viz.markup import json_block
from viz.report_graphs import frame_graphs

__all__ = ["MARK", "intern", "report_info", "unintern"]

# Note [Interned node facts]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# A node's facts repeat what its neighbours say: the recorded user stack (``meta["stack_trace"]``,
# often 2-4 kB) is the same for every node made by one source line, module paths and types repeat
# along a layer, and the AOT graphs repeat the forward's stacks. So every string value longer than
# ``_SHORT`` characters is written once in the block's ``strings`` and referred to as MARK + its
# index; so is any string that starts with MARK itself, so that decoding is exact whatever the
# string. Dict keys are kept as they are (node_info's and meta's own names, short).

MARK = "\u0001"
_SHORT = 12


def intern(value: Any, table: dict[str, int]) -> Any:
    """``value`` with its long strings replaced by references into ``table`` (extended in place)."""
    if isinstance(value, str):
        if len(value) > _SHORT or value.startswith(MARK):
            return MARK + str(table.setdefault(value, len(table)))
        return value
    if isinstance(value, dict):
        return {str(k): intern(v, table) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [intern(v, table) for v in value]
    return value


def unintern(value: Any, strings: list[str]) -> Any:
    """:func:`intern`'s inverse, given the table as a list (what report.js does in the browser)."""
    if isinstance(value, str):
        return strings[int(value[1:])] if value.startswith(MARK) else value
    if isinstance(value, dict):
        return {k: unintern(v, strings) for k, v in value.items()}
    if isinstance(value, list):
        return [unintern(v, strings) for v in value]
    return value


def _graph_names(frame: Frame) -> dict[int, str]:
    """id(graph) -> the name node_info knows it by ("" root, a body's qualified name, "aot.<kind>")."""
    names = {id(g): name for name, g in frame.graphs().items()}
    if frame.aot is not None:
        for kind in ("joint", "forward", "backward", "inference"):
            g = getattr(frame.aot, kind)
            if isinstance(g, Graph):
                names.setdefault(id(g), f"aot.{kind}")
    return names


def report_info(frames: list[Frame]) -> str:
    """The JSON block of every drawn node's facts: ``{"strings": [...], "graphs": [{node: facts}]}``,
    one entry per graph in :func:`viz.report_graphs.report_data`'s numbering."""
    table: dict[str, int] = {}
    graphs: list[dict[str, Any]] = []
    for frame in frames:
        names = _graph_names(frame)
        for _kind, _title, g, _hi in frame_graphs(frame):
            name = names.get(id(g))
            if name is None:  # not a graph node_info can name: drawn without facts
                graphs.append({})
                continue
            graphs.append({n.name: intern(node_info(frame, name, n.name), table) for n in g.nodes})
    return json_block({"strings": list(table), "graphs": graphs})
