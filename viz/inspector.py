"""The inspector panel: one node's facts (a ``viz.node_info`` dict) as an HTML table.

Invariant: renders any JSON-friendly dict; every key and value is escaped, nested values are shown
as indented JSON, so a new key from ``node_info`` shows up without a change here.
"""

from __future__ import annotations

import json
from typing import Any

from viz.panels import esc, panel

__all__ = ["inspector_html"]

# Keys shown first, in this order; any other key follows in the dict's own order.
_FIRST = ("name", "graph", "op", "role", "target", "value", "args", "kwargs", "inputs", "users", "calls",
          "source", "nn_module", "nn_module_stack", "lifted_from", "lifted_chain")


def _where(graph: str, node: str) -> str:
    return f"{node or '?'} in {graph or 'root'}"


def _cell(value: Any, key: str = "") -> str:
    if key == "graph" and value == "":
        return "root"
    # Note [Lifted chain] (viz/info.py): read as "this placeholder <- its feeder in the parent <- ...".
    if key == "lifted_from" and isinstance(value, dict):
        return esc(_where(value.get("graph", ""), value.get("node", "")))
    if key == "lifted_chain" and isinstance(value, list) and all(isinstance(v, dict) for v in value):
        steps = [f"{_where(v.get('graph', ''), v.get('node', ''))} ({v.get('kind', '?')})" for v in value]
        return "<br>&larr; ".join(esc(s) for s in steps)
    if isinstance(value, str):
        return f"<pre>{esc(value)}</pre>" if "\n" in value else esc(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) for v in value):
        return esc(", ".join(str(v) for v in value)) or "<span class='ds-muted'>(none)</span>"
    return f"<pre>{esc(json.dumps(value, indent=1, sort_keys=True, default=str))}</pre>"


def inspector_html(info: dict[str, Any] | None, *, note: str = "") -> str:
    """The inspector: a two-column table of ``info``; a hint when nothing is selected."""
    if not info:
        return panel("<div class='ds-muted'>Click a node to inspect it. Click a HOP call to open its body.</div>")
    keys = [k for k in _FIRST if k in info] + [k for k in info if k not in _FIRST]
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{_cell(info[k], k)}</td></tr>" for k in keys)
    head = f"<h4>{esc(info.get('name', '?'))}</h4>" + (f"<div class='ds-muted'>{esc(note)}</div>" if note else "")
    return panel(f"{head}<table class='ds-inspector'>{rows}</table>")
