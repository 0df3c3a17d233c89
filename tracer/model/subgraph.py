"""HOP bodies as data: a Subgraph (one body Dynamo installed), its inputs, its call sites, and
the Speculation (one SubgraphTracer run) that built it.

Invariant: ``Subgraph.inputs`` lists the body's placeholders in order, each with the kind of
value behind it (Note [Closed sets of kinds] in tracer/model/kinds.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from tracer.model.graph import Graph

__all__ = ["CallSite", "Speculation", "Subgraph", "SubgraphInput"]


@dataclass
class SubgraphInput:
    """One placeholder of a HOP body, and where its value comes from in the enclosing graph."""

    name: str  # placeholder name in the body graph
    kind: str  # one of INPUT_KINDS
    source: str  # name of the node in the parent graph that feeds it ("" if no parent node does)
    meta: dict[str, Any] = field(default_factory=dict)  # the placeholder's meta (shape, dtype, ...)
    supplied: str = ""  # kind "hop_supplied": what the HOP passes ("score", "q_idx", "grad_out", "slice of xs", ...)

    def __repr__(self) -> str:
        return f"{self.name}:{self.kind}<-{self.source or self.supplied or '?'}"


@dataclass
class CallSite:
    """One call of a body from its parent graph (a ``nested_compile_region`` body may have many)."""

    node: str  # name of the HOP node in the parent graph
    sources: list[str] = field(default_factory=list)  # per body input, the parent node feeding it at this call ("" if none)

    def __repr__(self) -> str:
        return f"CallSite({self.node})"


@dataclass
class Subgraph:
    """A HOP body that Dynamo installed as a submodule of the output graph."""

    name: str  # qualified module name: "wrap_body_0", "cond_false_0.cond_true_0"
    hop: str  # "wrap", "cond", "map_impl", "invoke_subgraph", "tag_activation_checkpoint", ...
    parent: str  # qualified name of the enclosing subgraph, "" for the root graph
    call_node: str  # name of the node in the parent graph that first calls this body
    graph: Graph = field(default_factory=Graph)
    inputs: list[SubgraphInput] = field(default_factory=list)  # in placeholder order; sources as at ``call_node``
    call_sites: list[CallSite] = field(default_factory=list)  # every call in the parent, in graph order (first: call_node)

    @property
    def lifted(self) -> list[str]:
        """Names of the inputs a SubgraphTracer lifted (kind starting with "lifted")."""
        return [i.name for i in self.inputs if i.kind.startswith("lifted")]

    @property
    def depth(self) -> int:
        """1 for a body called from the root graph, 2 for one nested inside it, ..."""
        return self.name.count(".") + 1

    def input(self, name: str) -> SubgraphInput:
        for i in self.inputs:
            if i.name == name:
                return i
        raise KeyError(f"no input {name!r} in subgraph {self.name!r} (inputs: {[i.name for i in self.inputs]})")

    def __repr__(self) -> str:
        from tracer._text import plural

        return f"Subgraph({self.name!r}, hop={self.hop!r}, {plural(len(self.inputs), 'input')}, {len(self.lifted)} lifted)"


@dataclass
class Speculation:
    """One SubgraphTracer run (``speculate_subgraph``), successful or not, in the order they started."""

    hop: str  # the HOP whose body was speculated
    description: str  # Dynamo's description: "wrap", "true_fn", "false_fn", "map", ...
    depth: int  # nesting: 1 for a body traced directly under the root tracer
    ok: bool  # False when speculation failed (e.g. a graph break in the body)
    reason: str = ""  # why it failed
    subgraph: Optional[str] = None  # qualified name of the body it became, if installed
    lifted: list[str] = field(default_factory=list)  # SubgraphTracer.lifted_freevars, in order (placeholder names)

    def __repr__(self) -> str:
        status = "ok" if self.ok else f"failed: {self.reason[:60]}"
        return f"Speculation({self.hop}/{self.description}, depth={self.depth}, {status})"


