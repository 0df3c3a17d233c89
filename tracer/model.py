"""The data model of a capture: plain dataclasses, no torch objects, lossless JSON round trip.

Everything ``tracer`` records ends up here and everything ``viz`` draws is read from here.
Invariant: every value reachable from a :class:`Capture` is JSON-friendly (str, int, float,
bool, None, list, dict with str keys, or one of these dataclasses), so
``Capture.from_json(cap.to_json()) == cap`` holds for every capture. ``Capture.result`` (the
function's own return value) is the one exception: it is kept for the caller and never
serialized.

See Note [Closed sets of kinds] for the vocabulary; :func:`validate` checks it.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal, Optional, Union, get_args, get_origin, get_type_hints

__all__ = [
    "Aot",
    "AotInput",
    "AotOutput",
    "Capture",
    "Frame",
    "Graph",
    "GraphBreak",
    "Guard",
    "INPUT_KINDS",
    "NODE_OPS",
    "NODE_ROLES",
    "Node",
    "Recompile",
    "SavedTensorHooks",
    "SavedValue",
    "Speculation",
    "Subgraph",
    "SubgraphInput",
    "ValidationError",
    "format_meta",
    "validate",
]

SCHEMA_VERSION = 1

# Note [Closed sets of kinds]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Like fx's ``_legal_ops``, each "kind" field takes its values from a closed set, so a view can
# style every value and a test can notice a new one. ``validate()`` enforces them.
#
# NODE_OPS    fx's own opcodes.
# NODE_ROLES  what a node *is* for a reader of the graph:
#   "operand"         a placeholder fed by a value the user passed (to the frame or to the HOP)
#   "lifted_freevar"  a placeholder a SubgraphTracer added for a free variable (closure, global,
#                     module attribute, a value created in an enclosing body)
#   "lifted_symbol"   a placeholder for a free symbol (s0, u0) bound because a lifted or operand
#                     tensor mentions it (seed 002, #138363)
#   "param"           a parameter or buffer (get_attr, or a placeholder Dynamo made for one)
#   "hop"             a call of a higher-order operator; ``Node.calls`` names its bodies
#   "output"          the output node
#   "op"              everything else
# INPUT_KINDS the kind of a SubgraphInput (one per body placeholder).
NODE_OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")
NODE_ROLES = ("operand", "lifted_freevar", "lifted_symbol", "param", "hop", "output", "op")
INPUT_KINDS = ("operand", "lifted_freevar", "lifted_symbol")
SAVED_KINDS = ("tensor", "symint", "opaque")
AOT_MODES = ("training", "inference")
ALIAS_KINDS = (
    "none",
    "alias_of_input",
    "is_input",
    "alias_of_intermediate",
    "alias_of_intermediate_save_as_output",
    "alias_of_intermediate_base_is_user_output",
    "custom_function_view",
    "unsafe_view_alias",
)

NodeOp = Literal["placeholder", "get_attr", "call_function", "call_method", "call_module", "output"]
NodeRole = Literal["operand", "lifted_freevar", "lifted_symbol", "param", "hop", "output", "op"]
InputKind = Literal["operand", "lifted_freevar", "lifted_symbol"]


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


@dataclass
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


@dataclass
class Graph:
    """An fx graph as data: nodes in graph (topological) order plus its readable code."""

    nodes: list[Node] = field(default_factory=list)  # in fx order, which is a topological order
    code: str = ""  # GraphModule.print_readable() text
    name: str = ""  # qualified name: "" for a Dynamo root graph, "wrap_body_0", "forward", ...

    def __post_init__(self) -> None:
        self._index: dict[str, Node] | None = None

    def __repr__(self) -> str:
        return f"Graph({self.name or 'root'!r}, {len(self.nodes)} nodes)"

    def __str__(self) -> str:
        return self.code or "\n".join(str(n) for n in self.nodes)

    def node(self, name: str) -> Node:
        """The node called ``name``; ``KeyError`` naming the valid choices otherwise."""
        if self._index is None or len(self._index) != len(self.nodes):
            self._index = {n.name: n for n in self.nodes}
        try:
            return self._index[name]
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


@dataclass
class SubgraphInput:
    """One placeholder of a HOP body, and where its value comes from in the enclosing graph."""

    name: str  # placeholder name in the body graph
    kind: str  # one of INPUT_KINDS
    source: str  # name of the node in the parent graph that feeds it ("" if unknown)
    meta: dict[str, Any] = field(default_factory=dict)  # the placeholder's meta (shape, dtype, ...)

    def __repr__(self) -> str:
        return f"{self.name}:{self.kind}<-{self.source or '?'}"


@dataclass
class Subgraph:
    """A HOP body that Dynamo installed as a submodule of the output graph."""

    name: str  # qualified module name: "wrap_body_0", "cond_false_0.cond_true_0"
    hop: str  # "wrap", "cond", "map_impl", "invoke_subgraph", "tag_activation_checkpoint", ...
    parent: str  # qualified name of the enclosing subgraph, "" for the root graph
    call_node: str  # name of the node in the parent graph that calls this body
    graph: Graph = field(default_factory=Graph)
    inputs: list[SubgraphInput] = field(default_factory=list)  # in placeholder order

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
        return f"Subgraph({self.name!r}, hop={self.hop!r}, {len(self.inputs)} inputs, {len(self.lifted)} lifted)"


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


@dataclass
class Guard:
    """One guard Dynamo installed on a frame."""

    kind: str  # guard function name: TENSOR_MATCH, TYPE_MATCH, BACKEND_MATCH, SHAPE_ENV, ...
    source: str  # the guarded source: "L['x']", "G['w']", "" for global guards
    code: list[str] = field(default_factory=list)  # the check(s) as Python source, when known
    user_stack: list[str] = field(default_factory=list)  # "file.py:LINE in fn" lines that created it

    def __repr__(self) -> str:
        return f"Guard({self.kind}, {self.source!r})"


@dataclass
class GraphBreak:
    """A graph break: Dynamo stopped the graph here and resumed in a new frame."""

    reason: str  # Dynamo's reason text
    location: str  # "file.py:LINE" of the user code that broke
    user_stack: list[str] = field(default_factory=list)  # "file.py:LINE in fn" frames, outermost first
    compile_id: str = ""  # the frame being compiled when it broke
    code_line: str = ""  # the source line at ``location``

    def __repr__(self) -> str:
        return f"GraphBreak({self.location}, {self.reason[:60]!r})"


@dataclass
class Recompile:
    """A recompilation of a frame whose guards failed."""

    compile_id: str  # the new compile id ("0/1")
    reason: str  # the failed guard, as Dynamo reported it

    def __repr__(self) -> str:
        return f"Recompile({self.compile_id}, {self.reason[:60]!r})"


@dataclass
class SavedValue:
    """A value the forward saves for the backward."""

    name: str  # forward-graph node name
    kind: str  # one of SAVED_KINDS
    shape: list[Any] = field(default_factory=list)  # ints or symbolic strings
    dtype: str = ""
    nbytes: int = 0  # symbolic sizes evaluated at their hints

    def __repr__(self) -> str:
        return f"SavedValue({self.name}, {self.kind}, {self.nbytes}B)"


@dataclass
class AotInput:
    """Per graph input metadata from ViewAndMutationMeta.input_info."""

    name: str
    mutates_data: bool = False
    mutates_metadata: bool = False
    requires_grad: bool = False
    mutation_in_graph: bool = False  # the copy_ back happens inside the graph (vs. in the runtime epilogue)
    is_parameter: bool = False


@dataclass
class AotOutput:
    """Per user output metadata from ViewAndMutationMeta.output_info."""

    name: str
    alias: str = "none"  # one of ALIAS_KINDS (OutputType names, lower-cased)
    base_index: Optional[int] = None  # the input or intermediate it aliases


@dataclass
class SavedTensorHooks:
    """Saved-tensor hooks traced into the graphs (seed 004)."""

    pack: Optional[Graph] = None
    unpack: Optional[Graph] = None
    applied_to: list[str] = field(default_factory=list)  # names of the saved values they were applied to


@dataclass
class Aot:
    """What AOTAutograd did with one Dynamo graph."""

    mode: str  # one of AOT_MODES
    partitioner: str = "min_cut"  # "min_cut" or "default"
    joint: Optional[Graph] = None  # the joint graph the partitioner received (training only)
    forward: Optional[Graph] = None
    backward: Optional[Graph] = None
    inference: Optional[Graph] = None
    saved: list[SavedValue] = field(default_factory=list)
    inputs: list[AotInput] = field(default_factory=list)
    outputs: list[AotOutput] = field(default_factory=list)
    synthetic_bases: list[list[int]] = field(default_factory=list)  # groups of input indices merged into one base
    effect_tokens: int = 0
    saved_tensor_hooks: Optional[SavedTensorHooks] = None
    backward_ran: bool = False  # the backward graph really was compiled (capture ran .backward())
    subgraphs: dict[str, Graph] = field(default_factory=dict)  # HOP bodies the AOT graphs call, by "forward.repeated_subgraph0"

    @property
    def saved_bytes(self) -> int:
        return sum(s.nbytes for s in self.saved)

    def __repr__(self) -> str:
        return f"Aot({self.mode}, {len(self.saved)} saved, {self.saved_bytes}B)"


@dataclass
class Frame:
    """One compiled frame (one compile id): its Dynamo graph, HOP bodies, speculations and guards."""

    compile_id: str  # "0/0": frame 0, first compile; "0/1" its recompile
    code: str  # "file.py:LINE in fn"
    graph: Graph = field(default_factory=Graph)  # the Dynamo output graph (root)
    subgraphs: dict[str, Subgraph] = field(default_factory=dict)  # by qualified name, parents before children
    speculations: list[Speculation] = field(default_factory=list)
    guards: list[Guard] = field(default_factory=list)
    aot: Optional[Aot] = None
    meta: dict[str, Any] = field(default_factory=dict)  # escape hatch

    def graphs(self) -> dict[str, Graph]:
        """Every graph of the frame by qualified name, the root as ""."""
        return {"": self.graph, **{k: v.graph for k, v in self.subgraphs.items()}}

    def children(self, parent: str = "") -> list[Subgraph]:
        return [s for s in self.subgraphs.values() if s.parent == parent]

    def __repr__(self) -> str:
        return (
            f"Frame({self.compile_id}, {self.code!r}, {len(self.graph.nodes)} nodes, "
            f"{len(self.subgraphs)} subgraphs, {len(self.guards)} guards)"
        )


@dataclass
class Capture:
    """Everything one ``tracer.capture()`` recorded. Evaluate it in a cell to open the explorer."""

    frames: list[Frame] = field(default_factory=list)  # in compile order
    graph_breaks: list[GraphBreak] = field(default_factory=list)
    recompiles: list[Recompile] = field(default_factory=list)
    fn: str = ""  # qualified name of the captured function or module class
    meta: dict[str, Any] = field(default_factory=dict)  # torch version, options, notes
    result: Any = field(default=None, compare=False, repr=False)  # the function's own return value (tensors detached); never serialized

    def frame(self, compile_id: str) -> Frame:
        for f in self.frames:
            if f.compile_id == compile_id:
                return f
        raise KeyError(f"no frame {compile_id!r} (frames: {[f.compile_id for f in self.frames]})")

    def __repr__(self) -> str:
        return (
            f"Capture({self.fn or '?'}: {len(self.frames)} frames, {len(self.graph_breaks)} graph breaks, "
            f"{len(self.recompiles)} recompiles)"
        )

    def __str__(self) -> str:
        from tracer._text import capture_tree

        return capture_tree(self)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The explorer where a widget frontend exists; a text tree (and static HTML) otherwise."""
        try:
            import viz
        except Exception:  # viz is optional for the data model; fall back to text
            return {"text/plain": str(self)}
        return viz.mimebundle(self, include=include, exclude=exclude)

    # -- JSON ----------------------------------------------------------------------------------
    def to_json(self, indent: int | None = None) -> str:
        """Serialize to JSON text (``result`` is dropped). Inverse of :meth:`from_json`."""
        return json.dumps({"schema": SCHEMA_VERSION, "capture": _to_plain(self)}, indent=indent)

    @classmethod
    def from_json(cls, text: str) -> Capture:
        """Load a capture written by :meth:`to_json`. Never unpickles anything."""
        data = json.loads(text)
        if not isinstance(data, dict) or "capture" not in data:
            raise ValueError("not a dynascope capture: expected an object with a 'capture' key")
        if data.get("schema") != SCHEMA_VERSION:
            raise ValueError(f"unsupported capture schema {data.get('schema')!r} (this dynascope reads {SCHEMA_VERSION})")
        return _from_plain(cls, data["capture"])


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


# -- validation --------------------------------------------------------------------------------
class ValidationError(ValueError):
    """A Capture breaks one of the model's invariants."""


def validate(cap: Capture) -> None:
    """Check the closed sets and cross-references of a capture; raise ValidationError listing every problem.

    Like ``Graph.lint()``: run by the tests on every captured fixture.
    """
    problems: list[str] = []

    def check_graph(g: Graph, where: str) -> None:
        names = [n.name for n in g.nodes]
        if len(set(names)) != len(names):
            problems.append(f"{where}: duplicate node names")
        seen: set[str] = set()
        for n in g.nodes:
            if n.op not in NODE_OPS:
                problems.append(f"{where}: node {n.name!r} has op {n.op!r} (must be one of {list(NODE_OPS)})")
            if n.role not in NODE_ROLES:
                problems.append(f"{where}: node {n.name!r} has role {n.role!r} (must be one of {list(NODE_ROLES)})")
            for i in n.inputs:
                if i not in seen:
                    problems.append(f"{where}: node {n.name!r} reads {i!r}, which is not an earlier node")
            seen.add(n.name)
        all_names = set(names)
        for n in g.nodes:
            for u in n.users:
                if u not in all_names:
                    problems.append(f"{where}: node {n.name!r} has unknown user {u!r}")

    for f in cap.frames:
        check_graph(f.graph, f"frame {f.compile_id}")
        graphs = f.graphs()
        for qn, sg in f.subgraphs.items():
            where = f"frame {f.compile_id} subgraph {qn!r}"
            check_graph(sg.graph, where)
            if sg.name != qn:
                problems.append(f"{where}: keyed under a different name {sg.name!r}")
            if sg.parent not in graphs:
                problems.append(f"{where}: parent {sg.parent!r} is not a graph of the frame")
                continue
            parent = graphs[sg.parent]
            parent_names = {n.name for n in parent.nodes}
            if sg.call_node and sg.call_node not in parent_names:
                problems.append(f"{where}: call node {sg.call_node!r} not in parent {sg.parent!r}")
            placeholders = [n.name for n in sg.graph.placeholders]
            if [i.name for i in sg.inputs] != placeholders:
                problems.append(f"{where}: inputs {[i.name for i in sg.inputs]} != placeholders {placeholders}")
            for i in sg.inputs:
                if i.kind not in INPUT_KINDS:
                    problems.append(f"{where}: input {i.name!r} has kind {i.kind!r} (must be one of {list(INPUT_KINDS)})")
                if i.source and i.source not in parent_names:
                    problems.append(f"{where}: input {i.name!r} source {i.source!r} not in parent {sg.parent!r}")
        for s in f.speculations:
            if s.subgraph is not None and s.subgraph not in f.subgraphs:
                problems.append(f"frame {f.compile_id}: speculation names unknown subgraph {s.subgraph!r}")
        if f.aot is not None:
            a = f.aot
            if a.mode not in AOT_MODES:
                problems.append(f"frame {f.compile_id}: aot mode {a.mode!r} (must be one of {list(AOT_MODES)})")
            for name in ("joint", "forward", "backward", "inference"):
                g = getattr(a, name)
                if g is not None:
                    check_graph(g, f"frame {f.compile_id} aot.{name}")
            for qn, g in a.subgraphs.items():
                check_graph(g, f"frame {f.compile_id} aot.subgraphs[{qn!r}]")
            for s in a.saved:
                if s.kind not in SAVED_KINDS:
                    problems.append(f"frame {f.compile_id}: saved {s.name!r} kind {s.kind!r} (must be one of {list(SAVED_KINDS)})")
            for o in a.outputs:
                if o.alias not in ALIAS_KINDS:
                    problems.append(f"frame {f.compile_id}: output {o.name!r} alias {o.alias!r} (must be one of {list(ALIAS_KINDS)})")
    if problems:
        raise ValidationError("invalid capture:\n  " + "\n  ".join(problems))


# -- JSON plumbing ------------------------------------------------------------------------------
# Note [JSON by type hints]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# Dataclasses become dicts of their fields (minus ``result``); loading walks the type hints, so a
# nested Graph inside Optional[...] or dict[str, Subgraph] comes back as a Graph, not a dict.
# ``meta`` fields are ``dict[str, Any]`` and must already hold JSON-friendly values.

_SKIP_FIELDS = {"result"}


def _to_plain(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.name not in _SKIP_FIELDS}
    if isinstance(obj, (list, tuple)):
        return [_to_plain(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): _to_plain(v) for k, v in obj.items()}
    return obj


_HINTS: dict[type, dict[str, Any]] = {}


def _from_plain(tp: Any, data: Any) -> Any:
    if data is None:
        return None
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(tp) if a is not type(None)]
        return _from_plain(options[0], data) if len(options) == 1 else data
    if origin is list:
        (item,) = get_args(tp) or (Any,)
        return [_from_plain(item, v) for v in data]
    if origin is dict:
        _, val = get_args(tp) or (str, Any)
        return {k: _from_plain(val, v) for k, v in data.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = _HINTS.get(tp)
        if hints is None:
            hints = _HINTS[tp] = get_type_hints(tp, globalns=vars(typing) | globals())
        known = {f.name for f in dataclasses.fields(tp) if f.init and f.name not in _SKIP_FIELDS}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown field(s) {sorted(unknown)} for {tp.__name__} (known: {sorted(known)})")
        return tp(**{k: _from_plain(hints[k], v) for k, v in data.items()})
    return data
