"""Where each AOT (aten-level) node came from: the Dynamo node and user line behind it.

Invariant: ``meta["from"]`` is only ever set to a node that exists in the Dynamo graph (or one of
its HOP bodies) of the same frame; when torch left no trace of the origin, the key is absent
rather than guessed.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
import torch.fx

from tracer._torch.fx_graph import source_of

__all__ = ["DynamoIndex", "annotate_from", "seq_nr_origins"]


# Note [AOT provenance]
# ~~~~~~~~~~~~~~~~~~~~
# AOTAutograd retraces the Dynamo graph with an fx Interpreter, so every forward aten node it
# creates carries ``meta["from_node"]``: a chain of ``NodeSource`` (name, graph_id, and its own
# ``from_node``) whose oldest link names the Dynamo node that produced it. Backward nodes are
# made by the autograd engine, not the interpreter, so they have no ``from_node``. We resolve
# a node by the first step that answers (``meta["from"]["via"]`` names it):
#   "from_node"    walk ``from_node`` to a node of a Dynamo graph of this frame (by graph id);
#   "desc"         a placeholder's AOT descriptor: ``PlainAOTInput(idx)`` is the idx-th Dynamo
#                  placeholder, a tangent of ``PlainAOTOutput(idx)`` the idx-th returned node;
#   "seq_nr"       a backward node shares ``meta["seq_nr"]`` with the forward op whose
#                  derivative it computes (not in HOP bodies: their seq_nr come from another trace);
#   "stack_trace"  the engine's gradient-accumulation ``add`` has a seq_nr no forward op shares,
#                  but keeps the forward op's ``stack_trace`` (plus a line of its own): the one
#                  Dynamo node whose stack trace is exactly that (or its longest prefix) is it.
# A backward placeholder holding a saved value takes the origin of the forward node it holds.


class DynamoIndex:
    """The Dynamo graph of one frame (root + HOP bodies), indexed for provenance look-ups."""

    def __init__(self, gm: torch.fx.GraphModule):
        self.by_graph_id: dict[int, tuple[str, dict[str, torch.fx.Node]]] = {}
        self.root_nodes: dict[str, torch.fx.Node] = {}
        self.placeholders: list[torch.fx.Node] = []
        self.outputs: list[Any] = []
        self.by_stack_trace: dict[str, tuple[str, torch.fx.Node]] = {}
        graph = getattr(gm, "graph", None)
        if not isinstance(graph, torch.fx.Graph):
            return
        self.root_nodes = {n.name: n for n in graph.nodes}
        self.placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        out = next((n for n in reversed(graph.nodes) if n.op == "output"), None)
        if out is not None and out.args:
            first = out.args[0]
            self.outputs = list(first) if isinstance(first, (tuple, list)) else [first]
        self.by_graph_id[id(graph)] = ("", self.root_nodes)
        for qual, mod in gm.named_modules():
            if qual and isinstance(mod, torch.fx.GraphModule):
                self.by_graph_id[id(mod.graph)] = (qual, {n.name: n for n in mod.graph.nodes})
        by_trace: dict[str, list[tuple[str, torch.fx.Node]]] = {}
        for qual, nodes in self.by_graph_id.values():
            for n in nodes.values():
                st = n.meta.get("stack_trace")
                if isinstance(st, str) and st and n.op not in ("placeholder", "output"):
                    by_trace.setdefault(st, []).append((qual, n))
        self.by_stack_trace = {st: found[0] for st, found in by_trace.items() if len(found) == 1}

    def origin(self, graph: str, node: torch.fx.Node, via: str = "from_node") -> dict[str, Any]:
        """The ``meta["from"]`` dict for a Dynamo node: node, graph, and its user line if known."""
        out: dict[str, Any] = {"node": node.name, "graph": graph, "via": via}
        src = source_of(node.meta.get("stack_trace"))
        if src:
            out.update(file=src["file"], line=src["line"], code=src["code"])
        return out

    def resolve(self, fx_node: torch.fx.Node) -> Optional[dict[str, Any]]:
        """Step (1) of Note [AOT provenance]: follow ``from_node`` to a known Dynamo node."""
        found = self._walk(fx_node.meta.get("from_node"), 0)
        if found is not None:
            return found
        if fx_node.op == "placeholder":
            return self._placeholder_origin(fx_node.meta.get("desc"))
        return None

    def _walk(self, sources: Any, depth: int) -> Optional[dict[str, Any]]:
        if not sources or depth > 32:
            return None
        for ns in sources:
            # Oldest link first: the Dynamo node is at the bottom of the chain.
            deeper = self._walk(getattr(ns, "from_node", None), depth + 1)
            if deeper is not None:
                return deeper
            name = getattr(ns, "name", None)
            entry = self.by_graph_id.get(getattr(ns, "graph_id", None))
            if entry is not None and name in entry[1]:
                return self.origin(entry[0], entry[1][name])
        return None

    def _placeholder_origin(self, desc: Any) -> Optional[dict[str, Any]]:
        kind = type(desc).__name__
        if kind == "PlainAOTInput":
            idx = getattr(desc, "idx", None)
            if isinstance(idx, int) and 0 <= idx < len(self.placeholders):
                return self.origin("", self.placeholders[idx], via="desc")
        elif kind == "TangentAOTInput" and type(getattr(desc, "output", None)).__name__ == "PlainAOTOutput":
            # The gradient of user output idx: from the node the Dynamo graph returns there.
            idx = getattr(desc.output, "idx", None)
            if (
                isinstance(idx, int)
                and 0 <= idx < len(self.outputs)
                and isinstance(self.outputs[idx], torch.fx.Node)
            ):
                return self.origin("", self.outputs[idx], via="desc")
        return None

    def by_trace(self, fx_node: torch.fx.Node) -> Optional[dict[str, Any]]:
        """Step (3) of Note [AOT provenance]: the one Dynamo node with this exact stack trace."""
        st = fx_node.meta.get("stack_trace")
        if not isinstance(st, str) or not st:
            return None
        hit = self.by_stack_trace.get(st)
        if hit is None:
            # The engine's gradient-accumulation nodes append a line ("Gradient addition node due
            # to multiple use of tensor around:") to the forward op's trace.
            # The longest such prefix is the innermost frame, i.e. the op itself.
            keys = sorted((k for k in self.by_stack_trace if st.startswith(k)), key=len)
            if keys and (len(keys) == 1 or len(keys[-1]) > len(keys[-2])):
                hit = self.by_stack_trace[keys[-1]]
        return self.origin(hit[0], hit[1], via="stack_trace") if hit is not None else None


def seq_nr_origins(fx_graph: torch.fx.Graph, index: DynamoIndex) -> dict[int, dict[str, Any]]:
    """Step (2) of Note [AOT provenance]: ``seq_nr`` -> origin, from nodes that have ``from_node``."""
    out: dict[int, dict[str, Any]] = {}
    for n in fx_graph.nodes:
        seq = n.meta.get("seq_nr")
        if isinstance(seq, int) and seq not in out:
            found = index.resolve(n) if n.op != "placeholder" else None
            if found is not None:
                out[seq] = found
    return out


def annotate_from(
    fx_graph: torch.fx.Graph,
    nodes_meta: dict[str, dict[str, Any]],
    index: DynamoIndex,
    by_seq_nr: dict[int, dict[str, Any]],
    placeholder_origins: Optional[dict[str, dict[str, Any]]] = None,
) -> None:
    """Set ``meta["from"]`` (and ``meta["desc"]``) on the converted nodes, keyed by fx node name.

    ``by_seq_nr`` is step (2) of Note [AOT provenance] (pass ``{}`` for a HOP body, whose
    ``seq_nr`` belong to another trace); ``placeholder_origins`` gives a backward's saved-value
    placeholders the origin of the forward node of the same name.
    """
    for n in fx_graph.nodes:
        meta = nodes_meta.get(n.name)
        if meta is None:
            continue
        desc = n.meta.get("desc")
        if desc is not None and n.op == "placeholder":
            meta["desc"] = _desc_str(desc)
        found = index.resolve(n)
        if n.op == "placeholder":
            if found is None and placeholder_origins:
                found = placeholder_origins.get(n.name)
        else:
            if found is None:
                seq = n.meta.get("seq_nr")
                found = by_seq_nr.get(seq) if isinstance(seq, int) else None
                if found is not None:
                    found = {**found, "via": "seq_nr"}
            if found is None:
                found = index.by_trace(n)
        if found is not None:
            meta["from"] = dict(found)


def _desc_str(desc: Any) -> str:
    try:
        return str(desc)
    except Exception:  # except: display text only (a descriptor's text)
        return type(desc).__name__
