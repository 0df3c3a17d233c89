"""The inspector panel: one node's facts (a ``viz.node_info`` dict) as an HTML table.

Invariant: renders any JSON-friendly dict through an autoescaping template; nested values are
shown as indented JSON, so a new key from ``node_info`` shows up without a change here.

>>> html = inspector_html({"name": "<x>", "lifted_chain": [{"graph": "", "node": "y", "kind": "op"}]})
>>> "<h4>&lt;x&gt;</h4>" in html, "<td>y in root (op)</td>" in html
(True, True)
"""

from __future__ import annotations

import json
from typing import Any

from viz.markup import render

__all__ = ["inspector_html"]

# Keys shown first, in this order; any other key follows in the dict's own order.
_FIRST = ("name", "graph", "op", "role", "target", "value", "args", "kwargs", "inputs", "users", "calls",
          "source", "input_kind", "supplied", "derived_from", "symbols", "nn_module", "nn_module_stack", "lifted_from", "lifted_chain")


def _where(graph: str, node: str) -> str:
    return f"{node or '?'} in {graph or 'root'}"


def _cell(value: Any, key: str = "") -> tuple[str, Any]:
    """(how to show it, what to show): "text", "pre", "chain" (a list of steps) or "none"."""
    if key == "graph" and value == "":
        return "text", "root"
    # Note [Lifted chain] (viz/info.py): read as "this placeholder <- its feeder in the parent <- ...".
    if key in ("lifted_from", "derived_from") and isinstance(value, dict):
        return "text", _where(value.get("graph", ""), value.get("node", ""))
    if key == "lifted_chain" and isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return "chain", [f"{_where(v.get('graph', ''), v.get('node', ''))} ({v.get('kind', '?')})" for v in value]
    if isinstance(value, str):
        return ("pre" if "\n" in value else "text"), value
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) for v in value):
        return ("text", ", ".join(str(v) for v in value)) if value else ("none", "")
    return "pre", json.dumps(value, indent=1, sort_keys=True, default=str)


def inspector_html(info: dict[str, Any] | None, *, note: str = "") -> str:
    """The inspector: a two-column table of ``info``; a hint when nothing is selected."""
    if not info:
        return render("inspector.html.j2", rows=[], name="", note="")
    keys = [k for k in _FIRST if k in info] + [k for k in info if k not in _FIRST]
    rows = [(k, *_cell(info[k], k)) for k in keys]
    return render("inspector.html.j2", rows=rows, name=info.get("name", "?"), note=note)
