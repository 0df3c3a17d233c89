"""Reads a HOP call from logged graph text for the torch-free table of tracer/hop_feeds.py.

Invariant: a call's argument structure is re-read with ``ast`` from the display text the graph
parser kept for each argument (fx's own code for it: torch/fx/graph.py ``_format_args``), so a
leaf is a parent node exactly when it is a bare name of a node of that graph; everything else is a
constant kept as fx printed it. An argument that does not parse gives a problem, never a guess.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from tracer.hop_feeds import CallReader, Feed, call_feeds
from tracer.model.graph import Graph, Node

__all__ = ["LogCalls", "read_arg"]


@dataclass(frozen=True)
class _Constant:
    text: str  # as fx printed it (repr for numbers, strings, None; "torch.float32" for a dtype)


def read_arg(text: str, names: set[str]) -> Any:
    """The structure of one printed argument: lists, tuples and dicts as such, a node as its name
    (a ``str``), any other leaf as a constant; raises ``SyntaxError``/``ValueError`` if unreadable.

    >>> read_arg("[l_x_, (2, sin)]", {"l_x_", "sin"})
    ['l_x_', (_Constant(text='2'), 'sin')]
    """
    tree = ast.parse(text.strip(), mode="eval")
    return _value(tree.body, text.strip(), names)


def _value(e: ast.expr, text: str, names: set[str]) -> Any:
    if isinstance(e, ast.Tuple):
        return tuple(_value(x, text, names) for x in e.elts)
    if isinstance(e, ast.List):
        return [_value(x, text, names) for x in e.elts]
    if isinstance(e, ast.Dict):
        if any(k is None for k in e.keys):
            raise ValueError("a ** entry in a dict argument")
        return {ast.unparse(k): _value(e.values[i], text, names) for i, k in enumerate(e.keys)}
    if isinstance(e, ast.Name) and e.id in names:
        return e.id
    if isinstance(e, ast.Starred):
        raise ValueError("a starred argument")
    return _Constant(str(ast.get_source_segment(text, e)))  # always found: ``e`` was parsed from ``text``


class LogCalls:
    """The HOP calls of one logged graph: ``bodies`` maps each body's attribute name to its graph."""

    def __init__(self, graph: Graph, bodies: dict[str, Graph]) -> None:
        self._names = {n.name for n in graph.nodes}
        self._bodies = bodies
        self._attrs = {n.name: n.target for n in graph.nodes if n.op == "get_attr" and n.target in bodies}
        self._reader = CallReader(is_node=lambda v: isinstance(v, str), body=self._body, result=self._result,
                                  constant=lambda c: c.text)

    def _body(self, leaf: Any) -> str:
        return self._attrs[leaf] if isinstance(leaf, str) and leaf in self._attrs else ""

    def _result(self, attr: str) -> Any:
        body = self._bodies[attr]
        out = body.output
        return read_arg(out.args[0], {n.name for n in body.nodes}) if out is not None and len(out.args) == 1 else None

    def feeds(self, call: Node, index: int, body: str, n: int) -> tuple[list[Feed], list[str]]:
        """Feeds (``node``: the parent node's name) of the ``n`` placeholders of body number ``index``
        of ``call``, and problems; empty Feeds on a problem (their sources are then unknown)."""
        try:
            args = [read_arg(a, self._names) for a in call.args]
            kwargs = {k: read_arg(v, self._names) for k, v in call.kwargs.items()}
            return call_feeds(call.target, args, kwargs, index, n, self._reader, body, call.name)
        except (SyntaxError, ValueError, RecursionError) as e:
            return [], [f"body {body!r} called by {call.name!r}: its arguments were not read from the log "
                        f"({type(e).__name__}: {e}); their sources are unknown"]
