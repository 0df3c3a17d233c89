"""dynascope's capture side: run the real torch.compile front half and record it as plain data.

>>> import torch, tracer
>>> cap = tracer.capture(lambda x: x.sin() + 1, torch.randn(3))
>>> [f.compile_id for f in cap.frames]
['0/0']
"""

from tracer._torch.releases import UncheckedTorchWarning
from tracer.capturing import capture
from tracer.diffing import diff
from tracer.exporting import export, load_export
from tracer.job import load_job
from tracer.model import (
    Aot,
    AotInput,
    AotOutput,
    Capture,
    Divergence,
    Export,
    ExportFailure,
    ExportInput,
    ExportOutput,
    ExportProgram,
    Frame,
    FrameDiff,
    Graph,
    GraphBreak,
    Guard,
    Job,
    Node,
    Recompile,
    SavedTensorHooks,
    SavedValue,
    Speculation,
    Subgraph,
    SubgraphInput,
    validate,
)
from tracer.model.profile import LineTime, NodeTime, Profile
from tracer.model.profile_diff import ProfileDiff, TimeDelta
from tracer.model.read_only import ReadOnlyError
from tracer.options import CaptureOptions
from tracer.profile_compare import compare_profiles
from tracer.profiling import profile
from tracer.session import LocalVar, PausedState, Session, TraceAborted, TracerState, pause, trace
from tracer.trace_log import load_trace

__all__ = [
    "Aot",
    "AotInput",
    "AotOutput",
    "Capture",
    "CaptureOptions",
    "Divergence",
    "Export",
    "ExportFailure",
    "ExportInput",
    "ExportOutput",
    "ExportProgram",
    "Frame",
    "FrameDiff",
    "Graph",
    "GraphBreak",
    "Guard",
    "Job",
    "LineTime",
    "LocalVar",
    "Node",
    "NodeTime",
    "PausedState",
    "Profile",
    "ProfileDiff",
    "ReadOnlyError",
    "Recompile",
    "SavedTensorHooks",
    "SavedValue",
    "Session",
    "Speculation",
    "Subgraph",
    "SubgraphInput",
    "TimeDelta",
    "TraceAborted",
    "TracerState",
    "UncheckedTorchWarning",
    "capture",
    "compare_profiles",
    "diff",
    "export",
    "load_export",
    "load_job",
    "load_trace",
    "pause",
    "profile",
    "trace",
    "validate",
]
