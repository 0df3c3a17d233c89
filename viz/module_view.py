"""The module view: the frame's ``nn_module_stack`` tree with, per module, its graph nodes, its
parameters and the bytes the forward saves for the backward on its behalf.

Invariant: every number is a count over the record (nodes of the Dynamo graph, parameter placeholders
and their shapes, ``Aot.saved`` traced back through the forward node's ``from`` to a Dynamo node);
a module total includes its submodules; a parameter with a symbolic shape or an unknown dtype counts
as "?" bytes rather than a guess. Saved values whose Dynamo node is unknown are counted apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from tracer.model import Frame
from viz.grouping import graph_chains, module_tree
from viz.markup import render

__all__ = ["ModuleRow", "module_html", "module_rows"]

# Element sizes of torch dtypes by name (torch.dtype.itemsize); other dtypes count as unknown bytes.
_ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2,
             "int8": 1, "uint8": 1, "bool": 1, "complex64": 8, "complex128": 16}


@dataclass
class ModuleRow:
    path: str
    type: str  # nn.Module class, "" when only a prefix of real paths (a ModuleList)
    depth: int
    nodes: int = 0  # Dynamo graph nodes inside (placeholders excluded)
    params: int = 0  # parameter placeholders used inside
    numel: int = 0  # their elements
    param_bytes: Optional[int] = 0  # None when some size is unknown
    saved_bytes: int = 0  # saved for backward, traced to a node inside


def _numel(shape: list) -> Optional[int]:
    n = 1
    for d in shape:
        if not isinstance(d, int):
            return None
        n *= d
    return n


def module_rows(frame: Frame) -> tuple[list[ModuleRow], int]:
    """Rows of the module tree in depth-first order, and the saved bytes not traced to any module."""
    g = frame.graph
    tree = module_tree(g)
    chains = graph_chains(g)
    types: dict[str, str] = {}
    for chain in chains:
        for path, typ in chain:
            if typ:
                types.setdefault(path, typ)
    rows: dict[str, ModuleRow] = {}

    def walk(path: str, depth: int) -> None:
        for kid in tree.get(path, []):
            rows[kid] = ModuleRow(kid, types.get(kid, ""), depth)
            walk(kid, depth + 1)

    walk("", 0)
    chain_of = {n.name: c for n, c in zip(g.nodes, chains, strict=True)}
    for n, chain in zip(g.nodes, chains, strict=True):
        for path, _ in chain:
            r = rows[path]
            if n.op != "placeholder":
                r.nodes += 1
            elif n.role in ("param", "buffer") and n.meta.get("kind") == "tensor":
                numel = _numel(n.meta.get("shape") or [])
                size = _ITEMSIZE.get(str(n.meta.get("dtype")))
                r.params += 1
                r.numel += numel or 0
                r.param_bytes = None if r.param_bytes is None or numel is None or size is None else r.param_bytes + numel * size
    untraced = 0
    if frame.aot is not None and frame.aot.forward is not None:
        fwd = {n.name: n for n in frame.aot.forward.nodes}
        for s in frame.aot.saved:
            src = fwd[s.name].meta.get("from") if s.name in fwd else None
            node = src.get("node") if isinstance(src, dict) and src.get("graph") == "" else None
            chain = chain_of.get(node) if isinstance(node, str) else None  # a damaged file may hold any JSON there
            if not chain:
                untraced += s.nbytes
                continue
            for path, _ in chain:
                rows[path].saved_bytes += s.nbytes
    return list(rows.values()), untraced


def module_html(frame: Frame, *, graph_index: Optional[int] = None) -> str:
    """The module tree as a table; with ``graph_index`` (the report) each path is a link that finds
    the module in that graph's view."""
    rows, untraced = module_rows(frame)
    return render("modules.html.j2", rows=rows, untraced=untraced, graph_index=graph_index,
                  has_aot=frame.aot is not None)
