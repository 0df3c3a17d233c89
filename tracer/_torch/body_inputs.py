"""Reads a HOP call from a ``torch.fx.Node`` for the torch-free table of tracer/hop_feeds.py.

Invariant: only what fx says is used: a leaf is a parent node when it is a ``torch.fx.Node``, a body
when it is a ``get_attr`` of a ``GraphModule`` submodule, and a body's result is its output node's
argument (See Note [How each HOP calls its bodies] in tracer/hop_feeds.py).
"""

from __future__ import annotations

from typing import Any

import torch.fx

from tracer.hop_feeds import CallReader, Feed
from tracer.hop_feeds import call_feeds as _table_feeds

__all__ = ["Feed", "call_feeds", "fx_reader"]


def _body_module(a: Any, mod: torch.fx.GraphModule) -> Any:
    if not (isinstance(a, torch.fx.Node) and a.op == "get_attr"):
        return None
    try:
        sub = mod.get_submodule(a.target)
    except AttributeError:
        return None
    return sub if isinstance(sub, torch.fx.GraphModule) else None


def fx_reader(mod: torch.fx.GraphModule) -> CallReader:
    """The leaves of calls in ``mod``'s graph: fx Nodes, bodies by get_attr, results by output node."""

    def body(a: Any) -> str:
        return str(a.target) if _body_module(a, mod) is not None else ""

    def result(attr: str) -> Any:
        (out,) = mod.get_submodule(attr).graph.find_nodes(op="output")
        return out.args[0]

    return CallReader(is_node=lambda v: isinstance(v, torch.fx.Node), body=body, result=result)


def call_feeds(call: torch.fx.Node, hop: str, index: int, body: str, n: int, mod: torch.fx.GraphModule
               ) -> tuple[list[Feed], list[str]]:
    """Feeds of the ``n`` placeholders of body number ``index`` of ``call`` (a node of ``mod``), and
    problems; on a problem the Feeds are empty and the sources unknown."""
    return _table_feeds(hop, call.args, call.kwargs, index, n, fx_reader(mod), body, call.name)
