"""The data model of a capture: plain dataclasses, no torch objects, lossless JSON round trip.

Everything ``tracer`` records ends up here and everything ``viz`` draws is read from here. One
module per concept, as PyTorch names them:

- :mod:`tracer.model.kinds`      the closed sets of kinds (Note [Closed sets of kinds])
- :mod:`tracer.model.graph`      ``Node``, ``Graph``, ``format_meta``
- :mod:`tracer.model.subgraph`   ``Subgraph`` (a HOP body), ``SubgraphInput``, ``CallSite``, ``Speculation``
- :mod:`tracer.model.guards`     ``Guard``, ``GraphBreak``, ``BreakGroup``, ``Recompile``
- :mod:`tracer.model.aot`        ``Aot`` and its ViewAndMutationMeta records, ``SavedValue``
- :mod:`tracer.model.diff`       ``FrameDiff`` (what ``tracer.diff`` returns) and its parts
- :mod:`tracer.model.inductor` ``InductorGraph``, ``Kernel``; :mod:`tracer.model.bytecode` ``Bytecode``;
  :mod:`tracer.model.shapes` ``ShapeSymbol``, ``Specialization``
- :mod:`tracer.model.frame`      ``Frame`` (one compile attempt), ``GraphPass``
- :mod:`tracer.model.export`     torch.export's part: ``Export``, ``ExportProgram`` and its signature
- :mod:`tracer.model.capture`    ``Capture``
- :mod:`tracer.model.job`        ``Job`` (a summary per rank, captures opened on demand), ``Divergence``
- :mod:`tracer.model.serialize`  JSON (typed decoding), :mod:`tracer.model.validate` the checker

Invariant: every value reachable from a Capture is JSON-friendly, so
``Capture.from_json(cap.to_json()) == cap``; the model imports nothing from torch or viz.
"""

from tracer.model.aot import Aot, AotInput, AotOutput, SavedTensorHooks, SavedValue
from tracer.model.bytecode import Bytecode, CodeText
from tracer.model.capture import Capture
from tracer.model.diff import (
    AotDiff,
    BodyChange,
    FrameDiff,
    GraphDiff,
    GuardChange,
    InputChange,
    NodePair,
    SavedChange,
)
from tracer.model.export import (
    EXPORT_FAILURE_KINDS,
    EXPORT_INPUT_KINDS,
    EXPORT_OUTPUT_KINDS,
    EXPORT_STAGES,
    EXPORT_STATUSES,
    Export,
    ExportFailure,
    ExportInput,
    ExportOutput,
    ExportProgram,
    ModuleCall,
    RangeConstraint,
)
from tracer.model.frame import Frame, GraphPass, GraphPiece
from tracer.model.graph import Graph, Node, format_meta
from tracer.model.guards import BreakGroup, GraphBreak, Guard, Recompile
from tracer.model.inductor import InductorGraph, Kernel
from tracer.model.job import DIVERGENCE_KINDS, Divergence, FrameSummary, Job, RankSummary
from tracer.model.kinds import (
    ALIAS_KINDS,
    AOT_MODES,
    FRAME_STATUSES,
    INPUT_KINDS,
    NODE_OPS,
    NODE_ROLES,
    SAVED_KINDS,
    SAVED_ORIGINS,
    TIME_PHASES,
)
from tracer.model.serialize import SCHEMA_VERSION
from tracer.model.shapes import SPECIALIZATION_KINDS, ShapeGuard, ShapeSymbol, SourceLine, Specialization
from tracer.model.subgraph import CallSite, Speculation, Subgraph, SubgraphInput
from tracer.model.validate import ValidationError, validate

__all__ = [
    "ALIAS_KINDS",
    "AOT_MODES",
    "Aot",
    "AotDiff",
    "AotInput",
    "AotOutput",
    "BodyChange",
    "BreakGroup",
    "Bytecode",
    "CodeText",
    "InductorGraph",
    "Kernel",
    "ModuleCall",
    "RangeConstraint",
    "SPECIALIZATION_KINDS",
    "ShapeGuard",
    "ShapeSymbol",
    "SourceLine",
    "Specialization",
    "CallSite",
    "DIVERGENCE_KINDS",
    "Divergence",
    "Capture",
    "EXPORT_FAILURE_KINDS",
    "EXPORT_INPUT_KINDS",
    "EXPORT_OUTPUT_KINDS",
    "EXPORT_STAGES",
    "EXPORT_STATUSES",
    "Export",
    "ExportFailure",
    "ExportInput",
    "ExportOutput",
    "ExportProgram",
    "FRAME_STATUSES",
    "Frame",
    "FrameDiff",
    "Graph",
    "GraphDiff",
    "GraphBreak",
    "GraphPass",
    "GraphPiece",
    "Guard",
    "GuardChange",
    "INPUT_KINDS",
    "InputChange",
    "FrameSummary",
    "Job",
    "RankSummary",
    "NODE_OPS",
    "NODE_ROLES",
    "Node",
    "NodePair",
    "Recompile",
    "SAVED_KINDS",
    "SAVED_ORIGINS",
    "SCHEMA_VERSION",
    "SavedChange",
    "SavedTensorHooks",
    "SavedValue",
    "Speculation",
    "Subgraph",
    "SubgraphInput",
    "TIME_PHASES",
    "ValidationError",
    "format_meta",
    "validate",
]
