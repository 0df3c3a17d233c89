"""The inspector's facts of every node as static HTML: what a notebook output shows in place of a click
when the page's script does not run (GitHub, nbviewer, nbconvert), and the rows the inspector draws.

Invariant: the facts are ``viz.node_info``'s dicts (the function the explorer's inspector and the static
report call, Note [One inspector] in viz/inspector.py), and :func:`inspector_rows` gives exactly the rows
viz/inspector.js ``inspectorRows`` gives for the same dict (tests/test_browser_code.py runs both on every
node of a capture), so the no-script view tells the same story as a click. Rendered by an autoescaping
template: every value is text.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Optional

from tracer.model import Frame
from viz.info import node_info
from viz.markup import render
from viz.report_graphs import frame_graphs
from viz.report_info import graph_names

__all__ = ["inspector_rows", "node_facts_html"]

# viz/inspector.js FIRST: keys shown first, in this order; any other key follows in the dict's order ("meta" last).
FIRST = ["name", "graph", "op", "role", "target", "value", "args", "kwargs", "inputs", "users", "calls",
         "source", "code_line", "nn_module", "nn_module_type", "nn_module_stack", "input_kind", "supplied", "derived_from",
         "lifted_from", "lifted_chain", "saved_for_backward", "kernels", "symbols", "partition", "from"]


def _where(graph: Any, node: Any) -> str:
    return f"{node or '?'} in {graph or 'root'}"


def _js_number(v: Any) -> Any:
    """A number as JavaScript writes it: an integral float without ".0"."""
    return int(v) if isinstance(v, float) and v.is_integer() and abs(v) < 1e21 else v


def _sorted_json(v: Any) -> str:
    """inspector.js sortedJson: JSON with sorted keys, one space of indent, numbers as JavaScript writes them."""
    def norm(x: Any) -> Any:
        if isinstance(x, (list, tuple)):
            return [norm(e) for e in x]
        if isinstance(x, dict):
            return {str(k): norm(e) for k, e in x.items()}
        return _js_number(x)
    return json.dumps(norm(v), indent=1, sort_keys=True, ensure_ascii=False)


def _text(v: Any) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(_js_number(v))


def _cell(key: str, value: Any) -> tuple[str, Any]:
    """inspector.js cell: one row's (kind, value); kind is "text", "pre", "chain" or "none"."""
    if key == "graph" and value == "":
        return "text", "root"
    if key in ("lifted_from", "derived_from") and isinstance(value, dict):  # Note [Lifted chain] (viz/info.py)
        return "text", _where(value.get("graph"), value.get("node"))
    if key == "lifted_chain" and isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return "chain", [f"{_where(v.get('graph'), v.get('node'))} ({v.get('kind') or '?'})" for v in value]
    if isinstance(value, str):
        return ("pre" if "\n" in value else "text"), value
    if isinstance(value, (bool, int, float)):
        return "text", _text(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        return ("text", ", ".join(_text(v) for v in value)) if value else ("none", "")
    if isinstance(value, dict) and not value:
        return "none", ""
    return "pre", _sorted_json(value)


def inspector_rows(info: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(key, kind, value) of every row the inspector draws for ``info`` (a ``viz.node_info`` dict), in
    order: viz/inspector.js ``inspectorRows`` in Python. The recorded user stack (``meta.stack_trace``)
    is a row of its own; "meta" shows the rest of the meta.

    >>> inspector_rows({"name": "y", "graph": "", "users": [], "lifted_chain": [{"graph": "b", "node": "y", "kind": "lifted_freevar"}]})
    [('name', 'text', 'y'), ('graph', 'text', 'root'), ('users', 'none', ''), ('lifted_chain', 'chain', ['y in b (lifted_freevar)'])]
    """
    keys = [k for k in FIRST if k in info] + [k for k in info if k not in FIRST and k != "meta"]
    rows = [(k, *_cell(k, info[k])) for k in keys]
    meta = dict(info["meta"]) if isinstance(info.get("meta"), dict) else None
    if meta is not None and isinstance(meta.get("stack_trace"), str):
        rows.append(("stack", "pre", meta.pop("stack_trace").rstrip()))
    if meta is not None:
        rows.append(("meta", *_cell("meta", meta)))
    return rows


# Note [Node facts without a script]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A notebook stores a Capture's ``text/html`` beside the widget; GitHub and nbviewer show that HTML
# without running its script, so no graph is drawn and no click opens the inspector. The HTML therefore
# carries, folded per frame and per graph, every node's inspector rows (:func:`inspector_rows` of
# ``node_info``: kind, lifted chain, source, module, saved for backward, kernels, symbols, and a
# profile's time when ``extra`` gives it) as plain tables. Stored notebook outputs are what this costs,
# so rows are written more briefly than in the inspector: an empty row ("(none)") is left out, and so is
# "inputs" when it reads as "args" does; the recorded user stack (2-4 kB, the same for
# every node of one source line) is written once per frame, below the graphs, and a node's row names it
# ("stack 3"); the "meta" row (the node's raw meta as JSON, which restates the rows above it) is
# left out: the widget, the one-file report (``viz.export_html``) and ``viz.node_info`` have it.
def node_facts_html(frame: Frame, extra: Optional[Callable[[Frame, str, str], dict[str, Any]]] = None) -> str:
    """Every node's inspector rows of every graph of ``frame``, folded (Note [Node facts without a
    script]); ``extra(frame, graph kind, node)`` adds facts (a profile's time); "" for no graph."""
    if not frame.has_graph:
        return ""
    names = graph_names(frame)
    stacks: dict[str, int] = {}
    graphs = []
    for kind, title, g, _hi in frame_graphs(frame):
        name = names.get(id(g))
        if name is None:
            continue
        nodes = []
        for n in g.nodes:
            info = node_info(frame, name, n.name) | (extra(frame, kind, n.name) if extra else {})
            rows, args = [], None
            for key, how, value in inspector_rows(info):
                if key in ("name", "graph", "meta") or how == "none" or (key == "inputs" and (how, value) == args):
                    continue
                args = (how, value) if key == "args" else args
                if key == "stack":
                    how, value = "text", f"stack {stacks.setdefault(value, len(stacks) + 1)} (below)"
                rows.append((key, how, value))
            nodes.append((n.name, rows))
        graphs.append((title, nodes))
    return render("node_facts.html.j2", frame=frame, graphs=graphs, stacks=list(stacks))
