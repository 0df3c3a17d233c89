"""Frame: one compile attempt of one Python frame, with everything Dynamo made during it.

Invariant: ``Frame.subgraphs`` is keyed by qualified body name with parents before children,
and ``status`` says whether ``graph`` exists (Note [Compile ids and attempts]).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from tracer.model.aot import Aot
from tracer.model.bytecode import Bytecode
from tracer.model.export import ExportProgram
from tracer.model.graph import Graph
from tracer.model.guards import Guard
from tracer.model.inductor import InductorGraph
from tracer.model.lazy import lazy_fields
from tracer.model.shapes import ShapeGuard, ShapeSymbol, Specialization
from tracer.model.subgraph import Speculation, Subgraph

__all__ = ["Frame", "GraphPass", "GraphPiece"]

# Note [Compile ids and attempts]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Torch names every compile "F/C" (torch/_guards.py CompileId): frame F of the process, its C-th
# compile (C > 0 is a recompile). One compile may take several *attempts*: a graph break makes
# Dynamo stop, restart analysis and trace the frame again up to the break (convert_frame.py,
# ``_compile`` / ``compile_inner``, ``restart_reasons``); TORCH_LOGS and tlparse print attempt A > 0
# as "F/C_A". dynascope keeps one Frame per attempt, in the order they ran, each with a status.
# ``compile_id`` numbers frames by their first compile *in this capture*, so a capture reads the
# same in every process ("0/0" first; equal to torch's ids in a fresh process), and
# ``dynamo_id`` keeps torch's own id in this process, to match the logs.


@dataclass
class Frame:
    """One compile attempt of one Python frame: what became of it, its Dynamo graph, HOP bodies,
    speculations and guards. See Note [Compile ids and attempts]."""

    compile_id: str  # "0/0": frame 0, first compile; "0/1" its recompile; "0/0_1" attempt 1 of 0/0
    code: str  # "file.py:LINE in fn", or "Cell In[3], line 2 in fn" for notebook code
    graph: Graph = field(default_factory=Graph)  # the Dynamo output graph (root), as the backend received it
    subgraphs: dict[str, Subgraph] = field(default_factory=dict)  # by qualified name, parents before children
    speculations: list[Speculation] = field(default_factory=list)
    guards: list[Guard] = field(default_factory=list)
    aot: Optional[Aot] = None
    status: str = "compiled"  # one of FRAME_STATUSES
    status_reason: str = ""  # restarted: why (the graph break); no_graph: Dynamo's reason; failed: "Type: message"
    dynamo_id: str = ""  # torch's own compile id in this process, as TORCH_LOGS prints it ("17/0_1")
    times: dict[str, float] = field(default_factory=dict)  # TIME_PHASES -> seconds; a missing phase is unknown
    passes: list[GraphPass] = field(default_factory=list)  # Dynamo graph passes that changed the graph
    pieces: list[GraphPiece] = field(default_factory=list)  # a split graph (DDPOptimizer: one per bucket) in backend call order; ``graph``/``aot`` are piece 0's; empty if not split
    problems: list[str] = field(default_factory=list)  # what the record could not know exactly, and why
    inductor: list[InductorGraph] = field(default_factory=list)  # backend="inductor" (then aot is None): one per Inductor compile
    bytecode: Optional[Bytecode] = None  # Dynamo's original and transformed code, resume functions, guard fn
    symbols: list[ShapeSymbol] = field(default_factory=list)  # ShapeEnv symbols created in this attempt
    shape_guards: list[ShapeGuard] = field(default_factory=list)  # ShapeEnv guards added, with user lines
    specializations: list[Specialization] = field(default_factory=list)  # symbols made (partly) static, and why
    export: Optional[ExportProgram] = None  # a torch.export program: its signature (Note [Exported programs as frames])
    meta: dict[str, Any] = field(default_factory=dict)  # escape hatch

    def graphs(self) -> dict[str, Graph]:
        """Every graph of the frame by qualified name, the root as ""."""
        return {"": self.graph, **{k: v.graph for k, v in self.subgraphs.items()}}

    def let_go(self) -> None:
        """Empty every graph (Dynamo, pieces, AOT) and the guards of this frame, for a reader that holds
        many frames one at a time and is done with this one (``load_job``, ``dynascope report``): the
        frame is not usable afterwards."""
        graphs = [*self.graphs().values(), *(p.graph for p in self.pieces)]
        for aot in [self.aot, *(p.aot for p in self.pieces)]:
            if aot is not None:
                graphs += [g for g in (aot.joint, aot.forward, aot.backward, aot.inference) if g is not None]
                graphs += aot.subgraphs.values()
        for g in graphs:
            g.nodes = []
        self.guards = []

    def children(self, parent: str = "") -> list[Subgraph]:
        return [s for s in self.subgraphs.values() if s.parent == parent]

    @property
    def has_graph(self) -> bool:
        """True when this attempt produced a Dynamo graph (status "compiled"): it has nodes, or (a
        graph loaded from a log) its logged text, whose parse problems ``problems`` lists."""
        return bool(self.graph.code) or bool(self.graph.nodes)

    def __repr__(self) -> str:
        from tracer._text import plural

        status = "" if self.status == "compiled" else f", {self.status}"
        return (
            f"Frame({self.compile_id}{status}, {self.code!r}, {plural(len(self.graph.nodes), 'node')}, "
            f"{plural(len(self.subgraphs), 'subgraph')}, {plural(len(self.guards), 'guard')})"
        )


# Note [Problems of deferred parses]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A graph loaded from a log parses its text on first access (Note [Graphs parsed on first access]
# in tracer/model/graph.py) and appends what it could not read to its frame's ``problems``. So that
# no reader sees a frame's problems without them, ``problems`` is a lazy field (Note [Fields filled
# on first read] in tracer/model/lazy.py) and the loader registers each deferred graph's parse as
# work for the first read of its frame's ``problems`` too. ``Capture.all_problems()``,
# ``validate()``, ``==`` and JSON all read ``problems``, so each sees every parse problem, as when
# the loader parsed eagerly. ``guards`` is lazy as well: a log's C++ guard tree text (often its
# largest payload) is read into Guards on first access (tracer/trace_log/assemble.py), and ``inductor``:
# a log's Inductor events are read into InductorGraphs on first access (tracer/trace_log/deferred.py).
lazy_fields(Frame, "problems", "guards", "inductor")


@dataclass
class GraphPass:
    """A Dynamo pass that changed the output graph after tracing, before the backend got it."""

    name: str  # what torch calls it, e.g. "invoke_subgraph inlining"
    nodes_before: int
    nodes_after: int

    def __repr__(self) -> str:
        return f"GraphPass({self.name}, {self.nodes_before} -> {self.nodes_after} nodes)"



@dataclass
class GraphPiece:
    """One piece of a graph a backend wrapper split (DDPOptimizer: one per DDP bucket), as the
    backend received it; see Note [Split graphs] in tracer/_torch/backend.py."""

    graph: Graph
    aot: Optional[Aot] = None  # the piece's own AOTAutograd record

    def __repr__(self) -> str:
        from tracer._text import plural

        return f"GraphPiece({plural(len(self.graph.nodes), 'node')})"
