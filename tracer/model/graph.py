"""Graph and Node: one fx graph as plain data, and the short type text of a node's value.

Invariant: ``Graph.nodes`` is in fx order (a topological order) and node names are unique in a
graph; ``Node.inputs`` name only earlier nodes. :func:`tracer.model.validate` checks both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tracer.model.lazy import lazy_fields, pending

__all__ = ["Graph", "Node", "format_meta"]


# Note [Node.meta keys]
# ~~~~~~~~~~~~~~~~~~~~~
# ``Node.meta`` is the escape hatch (as in fx), but these keys have a fixed meaning:
#   "kind"            what the node's value is: "tensor", "symint", "symfloat", "symbool", "int",
#                     "float", "bool", "none", "tuple", "opaque", ... (absent when unknown)
#   "shape", "stride" list of int or str (a symbolic size is its expression: "s0", "2*s0")
#   "dtype"           "float32", "bfloat16", ...  (torch's name without "torch.")
#   "device"          "cpu", "meta", ...
#   "requires_grad"   bool
#   "value"           str: a SymInt's expression ("s0", "u0") or a constant's repr
#   "items"           for a tuple/list value: list of per-item meta dicts with the keys above
#   "subclass"        type name of a tensor subclass, when the value is one
#   "source"          {"file": str, "line": int, "fn": str, "code": str}: the user line that made it
#   "stack_trace"     str: fx's ``stack_trace``
#   "nn_module_stack" list of [module path, module type] pairs, outermost first
#   "fwd_nn_module_stack" AOT backward nodes: the nn_module_stack of the forward op they differentiate
#   "log_module"      graphs loaded from a log only: {"path": module path, "via": "parameter" (+ "reads":
#                     the Sources read) | "between" (+ "after", "before": the nodes it was traced
#                     between; + "joint": True on a forward-graph node that took it from the joint
#                     node of its name, tracer/trace_log/joint_partition.py) | "line" (+ "line": "file:line", "nodes": the Dynamo nodes traced there;
#                     AOT graphs, tracer/trace_log/line_modules.py)}, the module the log proves the node
#                     ran in (tracer/trace_log/modules.py)
#   "from"            AOT graphs only: {"node": dynamo node name, "graph": qualified graph name,
#                     "file", "line", "code"}: the Dynamo node this aten node came from
#                     (+ "via": "from_node" | "seq_nr" | "stack_trace" | "desc", how it was found)
#   "partition"       joint graph only: "forward" or "backward"
#   "recomputed"      joint graph only: True when the partitioner also recomputes it in the backward
#   "dead"            joint graph only: True when neither the forward nor the backward kept it
#   "desc"            AOT placeholders: AOTAutograd's descriptor, e.g. "PlainAOTInput(idx=0)"
#   "saved_tensor_hook" AOT graphs only: "pack" / "unpack" for nodes inlined from a saved-tensor hook
#   "returns"         AOT forward/inference output node: [name, kind] per returned value, kind one of
#                     "token", "mutated_input", "output", "intermediate_base", "rng_offset", "saved"


# Note [Slots on the per-node records]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A capture holds one ``Node`` per fx node of every graph (Dynamo, joint, forward, backward) and one
# ``Guard`` per guard, thousands of each for a small transformer, so both are ``slots=True``
# dataclasses: a slotted Guard is 64 bytes where one with an instance dict was 112 (Python 3.11,
# tracemalloc), 66 kB of Swin's 1,378 guards. Nothing sets attributes beyond the fields on them; JSON (msgspec
# ``convert`` and ``to_plain``), ``==``, ``dataclasses.replace`` and ``copy`` work on slots alike.
# The read-only subclasses in tracer/model/read_only.py add no slot, so a record can be built as a
# plain one and switch ``__class__`` (Note [Read-only nodes built in one call]).
@dataclass(slots=True)
class Node:
    """One fx node, as data. ``repr`` is its name, like ``torch.fx.Node``."""

    name: str  # fx node name, unique within its Graph
    op: str  # one of NODE_OPS
    target: str  # "aten.mm.default", "torch.sin", "wrap_body_0", "x" (placeholder)
    args: list[str] = field(default_factory=list)  # display form: node names as-is, constants as repr
    kwargs: dict[str, str] = field(default_factory=dict)  # same display form
    inputs: list[str] = field(default_factory=list)  # names of the nodes this node reads, in order (edges)
    users: list[str] = field(default_factory=list)  # names of the nodes that read this one
    role: str = "op"  # one of NODE_ROLES, see Note [Closed sets of kinds]
    calls: list[str] = field(default_factory=list)  # role "hop": qualified names of the bodies it calls
    meta: dict[str, Any] = field(default_factory=dict)  # see Note [Node.meta keys]

    def __repr__(self) -> str:
        return self.name

    def __str__(self) -> str:
        head = f"%{self.name} : {format_meta(self.meta)}" if self.meta.get("kind") else f"%{self.name}"
        if self.op == "placeholder":
            return f"{head} = placeholder[target={self.target}]"
        args = ", ".join([*self.args, *(f"{k}={v}" for k, v in self.kwargs.items())])
        return f"{head} = {self.op}[target={self.target}]({args})"


# Note [Graph node index]
# ~~~~~~~~~~~~~~~~~~~~~~~
# ``Graph.node(name)`` is called for every edge a view draws, so it keeps name -> (position,
# node). ``nodes`` is a plain list a caller may change in place (``g.nodes[3] = other``, an
# append, a removal), so an entry is trusted only while the list still holds that very node at
# that position; any other answer rebuilds the index (O(1) per hit, O(n) per rebuild).


@dataclass
class Graph:
    """An fx graph as data: nodes in graph (topological) order plus its readable code."""

    nodes: list[Node] = field(default_factory=list)  # in fx order, which is a topological order
    code: str = ""  # GraphModule.print_readable() text
    name: str = ""  # qualified name: "" for a Dynamo root graph, "wrap_body_0", "forward", ...

    def __post_init__(self) -> None:
        self._index: dict[str, tuple[int, Node]] | None = None  # See Note [Graph node index]

    @property
    def parsed(self) -> bool:
        """False while ``nodes`` wait for their first read (Note [Graphs parsed on first access]); else True."""
        return not pending(self, "nodes")

    def __repr__(self) -> str:
        from tracer._text import plural

        return f"Graph({self.name or 'root'!r}, {plural(len(self.nodes), 'node')})"

    def __str__(self) -> str:
        return self.code or "\n".join(str(n) for n in self.nodes)

    def node(self, name: str) -> Node:
        """The node called ``name``; ``KeyError`` naming the valid choices otherwise."""
        hit = self._index.get(name) if self._index is not None else None  # See Note [Graph node index]
        if hit is not None and hit[0] < len(self.nodes) and self.nodes[hit[0]] is hit[1] and hit[1].name == name:
            return hit[1]
        self._index = {n.name: (i, n) for i, n in enumerate(self.nodes)}
        try:
            return self._index[name][1]
        except KeyError:
            names = [n.name for n in self.nodes]
            shown = names if len(names) <= 20 else names[:20] + ["..."]
            raise KeyError(f"no node {name!r} in {self!r} (nodes: {shown})") from None

    def find(self, op: str | None = None, target: str | None = None, role: str | None = None) -> list[Node]:
        """Nodes matching all given filters; ``target`` matches by substring."""
        return [
            n
            for n in self.nodes
            if (op is None or n.op == op)
            and (role is None or n.role == role)
            and (target is None or target in n.target)
        ]

    @property
    def placeholders(self) -> list[Node]:
        return [n for n in self.nodes if n.op == "placeholder"]

    @property
    def output(self) -> Node | None:
        return next((n for n in reversed(self.nodes) if n.op == "output"), None)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Graph):
            return NotImplemented
        return (self.nodes, self.code, self.name) == (other.nodes, other.code, other.name)


# Note [Graphs parsed on first access]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A graph loaded from a TORCH_TRACE log is known first as text (``code``, fx's print_readable
# output as torch logged it); turning that text into ``Node``s is most of a log's load time and
# memory, and most graphs of a big log are never looked at. So ``nodes`` is a lazy field (Note
# [Fields filled on first read] in tracer/model/lazy.py): the loader registers the parse, and the
# first read of ``nodes`` runs it. Every reader (views, ``validate``, ``diff``, ``==``, JSON) goes
# through ``nodes`` and sees what an eager parse gives. The parse never raises: what it cannot
# read goes to the owning frame's ``problems``, which runs its frame's pending parses before
# answering (Note [Problems of deferred parses] in tracer/model/frame.py), so a failure is never
# silent. JSON writes the parsed nodes (``to_plain`` reads ``nodes``): a saved capture is the
# parsed record and loads without a parser, and its problems already hold every parse problem.
lazy_fields(Graph, "nodes")


def format_meta(meta: dict[str, Any]) -> str:
    """Short type text for a node's value: ``f32[s0, 3]``, ``Sym(s0)``, ``(f32[2], i64[])``.

    >>> format_meta({"kind": "tensor", "dtype": "float32", "shape": ["s0", 3]})
    'f32[s0, 3]'
    >>> format_meta({"kind": "symint", "value": "u0"})
    'Sym(u0)'
    """
    kind = meta.get("kind")
    if kind == "tensor":
        shape = ", ".join(str(s) for s in meta.get("shape", []))
        return f"{_DTYPE_ABBR.get(meta.get('dtype', ''), meta.get('dtype', '?'))}[{shape}]"
    if kind in ("symint", "symfloat", "symbool"):
        return f"Sym({meta.get('value', '?')})"
    if kind in ("tuple", "list"):
        return "(" + ", ".join(format_meta(m) for m in meta.get("items", [])) + ")"
    if kind in ("int", "float", "bool", "none"):
        return str(meta.get("value", kind))
    return str(kind or "")


_DTYPE_ABBR = {
    "float32": "f32",
    "float64": "f64",
    "float16": "f16",
    "bfloat16": "bf16",
    "int64": "i64",
    "int32": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint8": "u8",
    "bool": "b8",
    "complex64": "c64",
    "complex128": "c128",
}


