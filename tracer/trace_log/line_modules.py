"""Module groups of logged AOT nodes (forward, joint, backward) by the user line the log prints for them.

Invariant: torch-free; only adds ``meta["log_module"]`` with ``via == "line"`` to AOT nodes the
parameter rule left without one, and only when every Dynamo node of the frame traced at that line
was placed in one and the same module (Note [Backward groups from a log]); otherwise nothing.
"""

from __future__ import annotations

from typing import Any, Optional

from tracer.model.graph import Graph

__all__ = ["infer_line_modules", "line_key"]

# Note [Backward groups from a log]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Live, AOTAutograd copies a forward op's ``nn_module_stack`` onto the backward nodes that share its
# ``seq_nr`` (``fwd_nn_module_stack``, torch/_functorch/_aot_autograd/utils.py
# copy_fwd_metadata_to_bw_nodes). A TORCH_TRACE log carries neither ``seq_nr`` nor the module
# stack: what fx's ``python_code`` prints for an AOT node is a ``# File: path:line in fn, code: ...``
# comment, the innermost user frame of its ``stack_trace`` -- which a backward node takes from the
# forward op it differentiates, and a forward aten node from the Dynamo node it decomposes. So the
# log names the *line* the differentiated forward op was traced at, not the op. Torch 2.14 and 2.15
# print that comment as ``# Backward of forward node: File: ...`` (``node.meta["autograd_backward"]``,
# torch/fx/graph.py): still the forward node's user line, not the node -- read in the resnet18 and
# GPT-2 training logs of bench/log_groups.py written by 2.13, 2.14.1 and 2.15.0, no payload names the
# forward node or logs a ``seq_nr`` (AOTAutograd's logging never passes ``print_readable`` its
# ``additional_meta``). So a backward node is placed by its line only, never by a forward node guessed
# from the data flow. The rule "line":
# an AOT node the "parameter" rule left loose is placed in module M when the Dynamo graph (root and
# HOP bodies) has at least one computing node traced at that very line (file, line, function) and
# every one of them was placed in M (Note [Module groups from a log] in modules.py). A line traced in
# two modules (a block class run as ``h.0`` and ``h.1``, ``x = self.norm(self.lin(x))``), or with a
# node the log left loose, places nothing: those nodes stay in the "no module" group, never guessed.
# The gradient-accumulation ``add`` torch gives no module stack keeps the stack trace of the forward
# op it sums for (Note [AOT provenance] in tracer/_torch/aot_provenance.py), so "line" may place it:
# the claim is about its line, which ran in M only.
_SKIP = ("placeholder", "output", "get_attr")


def line_key(source: Any) -> Optional[tuple[str, int, str]]:
    """(file, line, function) of a node's logged ``meta["source"]``; None when it has none.

    >>> line_key({"file": "m.py", "line": 3, "fn": "forward", "code": "x = 1"})
    ('m.py', 3, 'forward')
    >>> line_key(None) is None
    True
    """
    if not isinstance(source, dict) or not isinstance(source.get("line"), int):
        return None
    return str(source.get("file", "")), source["line"], str(source.get("fn", ""))


def _line_owners(dynamo: list[Graph]) -> dict[tuple[str, int, str], tuple[Optional[str], list[str]]]:
    """Line -> (the one module every Dynamo node traced there was placed in, or None; those nodes)."""
    out: dict[tuple[str, int, str], tuple[Optional[str], list[str]]] = {}
    for g in dynamo:
        for n in g.nodes:
            key = line_key(n.meta.get("source")) if n.op not in _SKIP else None
            if key is None:
                continue
            lm = n.meta.get("log_module")
            path = lm.get("path") if isinstance(lm, dict) and g is dynamo[0] else None  # bodies: never placed
            prev = out.get(key)
            if prev is None:
                out[key] = (path, [n.name])
            else:
                out[key] = (path if path == prev[0] else None, prev[1] + [n.name])
    return out


def infer_line_modules(graph: Graph, dynamo: list[Graph]) -> None:
    """Place the loose computing nodes of AOT ``graph`` by Note [Backward groups from a log].

    ``dynamo``: the frame's Dynamo root graph first (already placed), then its HOP bodies.
    """
    owners: Optional[dict] = None
    for n in graph.nodes:
        if n.op in _SKIP or "log_module" in n.meta:
            continue
        key = line_key(n.meta.get("source"))
        if key is None:
            continue
        if owners is None:
            owners = _line_owners(dynamo)
        path, names = owners.get(key, (None, []))
        if path is not None:
            n.meta["log_module"] = {"path": path, "via": "line", "line": f"{key[0]}:{key[1]}", "nodes": names}
