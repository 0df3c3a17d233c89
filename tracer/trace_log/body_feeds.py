"""Reads a HOP call from logged graph text for the torch-free table of tracer/hop_feeds.py, and a logged
module as :mod:`tracer.hop_tree` walks it (``LoggedGraph``, Note [Body input sources from a log]).

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
from tracer.hop_tree import HopCall, KindPolicy
from tracer.model.graph import Graph, Node
from tracer.trace_log.graph_text import ParsedModule

__all__ = ["LOG_KINDS", "LogCalls", "LoggedGraph", "read_arg"]


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


# Note [Body input sources from a log]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The graph text keeps each HOP call's arguments as fx printed them, so the table a live capture
# uses (Note [How each HOP calls its bodies] in tracer/hop_feeds.py) reads them too: which parent
# node feeds each placeholder (passed, sliced by map/scan, the initial carry of scan/while_loop),
# which constant, and what the HOP supplies itself (flex_attention's score and indices, an
# autograd.Function backward's gradients and saved values, slices, carries): kind "hop_supplied"
# with the same ``supplied`` text as live. Whether any other input is the user's operand or a lifted
# free variable or symbol is decided by speculation, which the log does not record: kind "unknown"
# (LOG_LIMITS says so once; a SymInt may be either, e.g. ``wrap(body, x, n)`` with ``n`` symbolic).
# When the call does not give one value per placeholder the sources are unknown and the frame says so.
class LoggedGraph:
    """One logged module of the tree for :mod:`tracer.hop_tree`: a HOP call is a call_function node
    that reads a nested class (a body) through a get_attr node, its target the HOP's name as fx printed it."""

    def __init__(self, p: ParsedModule) -> None:
        self._p = p
        self.graph = p.graph
        self.placeholders = [n.name for n in p.graph.placeholders]
        self._calls = LogCalls(p.graph, {a: c.graph for a, c in p.children.items()})

    def hop_calls(self) -> list[HopCall]:
        g = self.graph
        attrs = {n.name: n.target for n in g.nodes if n.op == "get_attr" and n.target in self._p.children}
        for n in g.nodes:
            if n.name in attrs:
                n.role = "op"  # a body module, not a parameter (as tracer/_torch/fx_graph.py decides live)
        return [HopCall(n.name, n.target, tuple(attrs[x] for x in n.inputs if x in attrs), n) for n in g.nodes
                if n.op == "call_function" and any(x in attrs for x in n.inputs)]

    def body(self, attr: str, name: str) -> LoggedGraph:
        return LoggedGraph(self._p.children[attr])

    def feeds(self, call: HopCall, index: int, body: str, n: int) -> tuple[list[Feed], list[str]]:
        return self._calls.feeds(call.ref, index, body, n)

    def leaf_name(self, leaf: Any) -> str:
        return str(leaf)  # LogCalls' leaves are node names


# the log does not say operand from lifted: kind "unknown", said once in LOG_LIMITS
LOG_KINDS = KindPolicy(kind=lambda b, i, fed_from: None, unknown=lambda b, names: "")
