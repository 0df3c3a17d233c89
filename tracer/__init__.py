"""dynascope's capture side: run the real torch.compile front half and record it as plain data.

>>> import torch, tracer
>>> cap = tracer.capture(lambda x: x.sin() + 1, torch.randn(3))
>>> [f.compile_id for f in cap.frames]
['0/0']
"""

from __future__ import annotations

import importlib
from typing import Any

# Note [tracer's names loaded when used]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Every ``import tracer.<module>`` runs this file first: the ``dynascope`` command's log reader and
# viz's renderers too. Importing each public name's module here made them pay for the live capture
# (options, releases, sessions), jobs and their process pool (multiprocessing), diffs and profiles:
# a fifth of a small log's report. So, as viz does (Note [Lazy public names] in viz/__init__.py),
# each public name is imported from its module on first attribute access (PEP 562 ``__getattr__``),
# then kept; ``from tracer import *`` and ``dir(tracer)`` still see them all. A submodule not yet
# imported (``tracer.model.format_meta`` after ``import tracer``) is imported when first named, as it
# would have been found already imported before.
_PUBLIC = {
    "UncheckedTorchWarning": "tracer._torch.releases",
    "capture": "tracer.capturing",
    "diff": "tracer.diffing",
    **dict.fromkeys(["export", "load_export"], "tracer.exporting"),
    "load_job": "tracer.job",
    **dict.fromkeys(["Aot", "AotInput", "AotOutput", "Capture", "Divergence", "Export", "ExportFailure", "ExportInput",
                     "ExportOutput", "ExportProgram", "Frame", "FrameDiff", "Graph", "GraphBreak", "Guard", "Job", "Node",
                     "Recompile", "SavedTensorHooks", "SavedValue", "Speculation", "Subgraph", "SubgraphInput",
                     "validate"], "tracer.model"),
    **dict.fromkeys(["LineTime", "NodeTime", "Profile"], "tracer.model.profile"),
    **dict.fromkeys(["ProfileDiff", "TimeDelta"], "tracer.model.profile_diff"),
    "ReadOnlyError": "tracer.model.read_only",
    "CaptureOptions": "tracer.options",
    "compare_profiles": "tracer.profile_compare",
    "profile": "tracer.profiling",
    **dict.fromkeys(["LocalVar", "PausedState", "Session", "TraceAborted", "TracerState", "pause", "trace"],
                    "tracer.session"),
    "load_trace": "tracer.trace_log",
}


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        if name.startswith("__"):  # dunder probes (copy, pickle, IDEs) are never submodules
            raise AttributeError(f"module 'tracer' has no attribute {name!r}")
        try:  # a submodule not imported yet: Note [tracer's names loaded when used]
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module 'tracer' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])


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
