"""PausedState, LocalVar, TracerState, Location: what a paused Dynamo trace looked like, as plain data.

Invariant: these are snapshots taken in the tracing thread before the notebook is told about the pause,
so they hold no torch object and no live object (only str/int/bool/None/list/dict and ``tracer.model``
dataclasses), stay valid after the trace moves on, and ``PausedState.from_json(st.to_json()) == st``.
Controlling the session goes through its public ``Session`` API only (``tracer.session``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

from tracer import display
from tracer._text import plural
from tracer.model import Graph, Guard, format_meta
from tracer.model.serialize import load_document, to_plain

__all__ = ["LocalVar", "Location", "PausedState", "TracerState"]

# Note [Pause reasons]
# ~~~~~~~~~~~~~~~~~~~~
# Why the trace stopped, a closed set like the model's kinds:
#   "pause"         ``tracer.pause(label)`` in user code (the comptime-style marker)
#   "break_at"      ``Session.break_at("file.py:LINE")``: Dynamo is about to trace that line
#   "break_on_hop"  ``Session.break_on_hop(name)``: a HOP body's SubgraphTracer just started
#   "step"          ``Session.step()``: Dynamo is about to trace the next user source line


@dataclass
class Location:
    """One frame Dynamo is tracing, and the instruction it is at."""

    file: str  # co_filename of the traced code
    line: int  # the source line Dynamo is about to trace (or tracing, for a pause marker)
    function: str  # co_name
    code: str = ""  # that source line, stripped
    offset: int = -1  # bytecode offset of the instruction
    instruction: str = ""  # "LOAD_FAST x", "CALL 1", ...
    context: list[str] = field(default_factory=list)  # source lines around ``line`` (rstripped)
    context_start: int = 0  # line number of ``context[0]``

    def __str__(self) -> str:
        return f"{self.short_file}:{self.line} in {self.function}"

    @property
    def short_file(self) -> str:
        return self.file.replace("\\", "/").rsplit("/", 1)[-1]


@dataclass
class LocalVar:
    """One entry of ``symbolic_locals``: how Dynamo models a local at this point of the trace."""

    name: str
    kind: str  # the VariableTracker class: TensorVariable, CellVariable, ConstantVariable, ...
    value: str = ""  # a constant's repr, a tensor's fake meta ("f32[3]"), or a short description
    meta: dict[str, Any] = field(default_factory=dict)  # Note [Node.meta keys] of the example value, if any
    node: str = ""  # name of the graph node holding it, when it is a proxy ("" otherwise)
    is_cell: bool = False  # a closure cell (torch/_dynamo/side_effects.py SideEffects.track_cell_new)
    cell_contents: Optional[LocalVar] = None  # what the cell holds now (None: empty or not a cell)

    def __str__(self) -> str:
        text = f"{self.name}: {self.kind}"
        if self.is_cell:
            inner = self.cell_contents
            return text + (f" -> {inner.kind} {inner.value}".rstrip() if inner else " (empty)")
        if self.value:
            text += f" {self.value}"
        if self.node:
            text += f" (%{self.node})"
        return text


@dataclass
class TracerState:
    """One SubgraphTracer of ``OutputGraph.tracers``, root first."""

    hop: str  # the HOP whose body it traces ("" for the root tracer)
    description: str  # Dynamo's description ("wrap", "torch.cond", ...; "" for the root)
    depth: int  # 0 for the root tracer, 1 for a body under it, ...
    graph: Graph = field(default_factory=Graph)  # the partial graph traced so far
    lifted: list[str] = field(default_factory=list)  # lifted_freevars so far: placeholder names, in order
    lifted_from: list[str] = field(default_factory=list)  # the parent-graph node each one was lifted from

    def __str__(self) -> str:
        ops = sum(1 for n in self.graph.nodes if n.op not in ("placeholder", "output"))
        head = "root" if not self.hop else f"{self.hop} ({self.description})"
        lifted = f", lifted: {', '.join(self.lifted_labels())}" if self.lifted else ""
        return f"{'  ' * self.depth}{head}: {plural(len(self.graph.nodes), 'node')}, {plural(ops, 'op')}{lifted}"

    def lifted_labels(self) -> list[str]:
        """Lifted names, a size symbol marked "(symbol)" (output_graph.py SubgraphTracer._lift_basic_symbols, pytorch#138363)."""
        kinds = {n.name: n.meta.get("kind", "") for n in self.graph.nodes if n.op == "placeholder"}
        return [f"{n} (symbol)" if kinds.get(n, "").startswith("sym") else n for n in self.lifted]


@dataclass
class PausedState:
    """Where a Session's Dynamo trace is paused and what it had built so far.

    Displaying it renders the session panel (source, tracer stack, partial graph, locals, buttons).
    """

    session: str  # the session's name ("Session #1 of f")
    index: int  # 1 for the session's first pause, 2 for the next, ...
    reason: str  # "pause", "break_at", "break_on_hop" or "step", see Note [Pause reasons]
    label: str  # the pause label, the breakpoint ("model.py:42") or the HOP name
    location: Location = field(default_factory=lambda: Location("", 0, ""))
    frames: list[Location] = field(default_factory=list)  # the inlining stack, root frame first
    locals: dict[str, LocalVar] = field(default_factory=dict)  # symbolic_locals of the paused frame
    tracers: list[TracerState] = field(default_factory=list)  # the SubgraphTracer stack, root first
    guards: list[Guard] = field(default_factory=list)  # guards installed so far
    compile_id: str = ""  # Dynamo's own compile id ("17/0", without the attempt), as in Frame.dynamo_id
    attempt: int = 0  # how often Dynamo restarted analysis of this frame (e.g. after a graph break)
    problems: list[str] = field(default_factory=list)  # what the snapshot could not read (never guessed)
    session_key: str = ""  # unique per Session in a process: ``tracer.session.Session.of(state)`` finds it

    @property
    def graph(self) -> Graph:
        """The partial graph of the innermost tracer (``tracers[-1].graph``)."""
        return self.tracers[-1].graph if self.tracers else Graph()

    def __str__(self) -> str:
        lines = [f"{self.session}: pause {self.index} ({self.reason}{': ' + self.label if self.label else ''})",
                 f"  at {self.location}: {self.location.code}"]
        if self.attempt:
            lines.append(f"  (Dynamo restarted analysis of this frame: attempt {self.attempt})")
        lines.append("  tracers:")
        lines.extend("    " + str(t) for t in self.tracers)
        if self.graph.nodes:
            lines.append("  graph:")
            lines.extend(f"    {n}" for n in self.graph.nodes)
        lines.append("  locals:")
        lines.extend(f"    {v}" for v in self.locals.values())
        lines.append(f"  guards: {len(self.guards)}")
        lines.extend(f"  problem: {p}" for p in self.problems)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"PausedState({self.session!r}, {self.reason}, at {self.location})"

    def _repr_mimebundle_(self, include=None, exclude=None):
        return display.mimebundle(self, include=include, exclude=exclude)  # Note [Display through a registry]

    def to_json(self, indent: int | None = None) -> str:
        """JSON text of this pause (plain data, like ``Capture.to_json``)."""
        return json.dumps({"paused_state": to_plain(self)}, indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> PausedState:
        """A PausedState from :meth:`to_json` text; ``ValueError`` naming the first bad field."""
        return load_document(text, key="paused_state", cls=cls, what="pause")


def value_text(meta: dict[str, Any]) -> str:
    """Short type text of a value meta, shared by LocalVar and the panel."""
    return format_meta(meta) if meta.get("kind") else ""
