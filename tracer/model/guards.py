"""What Dynamo decided about a frame besides its graph: guards, graph breaks, recompiles.

Invariant: ``GraphBreak.compile_id`` and ``Recompile.compile_id`` name frames of the same
Capture (:func:`tracer.model.validate` checks it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from tracer.model.diff import FrameDiff
from tracer.model.lazy import lazy_fields

__all__ = ["BreakGroup", "Guard", "GraphBreak", "Recompile"]


@dataclass(slots=True)  # See Note [Slots on the per-node records]
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
    compile_id: str = ""  # the compile attempt that broke ("0/0"; "" when Dynamo was not compiling)
    code_line: str = ""  # the source line at ``location``

    def __repr__(self) -> str:
        return f"GraphBreak({self.location}, {self.reason[:60]!r})"


@dataclass
class Recompile:
    """A recompilation of a frame whose guards failed."""

    compile_id: str  # the new compile id ("0/1")
    reason: str  # the failed guard of the newest cache entry, as Dynamo reported it (``failed[0]``)
    failed: list[str] = field(default_factory=list)  # the failed guard of every cache entry Dynamo checked, newest first
    replaced: str = ""  # the compile whose guard failed ("0/0", from the reason's prefix); "" when unknown
    diff: Optional[FrameDiff] = None  # tracer.diff(replaced, compile_id), filled at the end of a capture (a log's on first read)

    def __repr__(self) -> str:
        more = f", +{len(self.failed) - 1} entries" if len(self.failed) > 1 else ""
        return f"Recompile({self.compile_id}, {self.reason[:60]!r}{more})"


lazy_fields(Recompile, "diff")  # a loaded log diffs on first read (Note [Fields filled on first read])


@dataclass
class BreakGroup:
    """Graph breaks with one cause at one user line (e.g. one per layer of a model, or one logging
    call reached with different arguments): the cause is the break's type and explanation
    (:mod:`tracer.model.break_reason`), so the call details torch appends do not split a group."""

    reason: str  # the first break's whole reason text
    location: str
    code_line: str
    count: int  # how many GraphBreaks of the capture this group stands for
    compile_ids: list[str] = field(default_factory=list)  # the attempts that broke there, in order
    gb_type: str = ""  # what broke (the reason's graph-break type, or its first informative line)
    explanation: str = ""  # Dynamo's explanation ("" when the reason has none)
    hints: list[str] = field(default_factory=list)  # torch's hints, each once, in order

    def __repr__(self) -> str:
        return f"BreakGroup({self.location}, x{self.count}, {(self.gb_type or self.reason)[:60]!r})"
