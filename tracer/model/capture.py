"""Capture: everything one ``tracer.capture()`` (or a loaded log) recorded, in compile order.

Invariant: every value reachable from a Capture is JSON-friendly, so
``Capture.from_json(cap.to_json()) == cap``; ``Capture.result`` (the function's own return value)
is kept for the caller and never serialized.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from tracer import display
from tracer.model.export import Export
from tracer.model.frame import Frame
from tracer.model.guards import BreakGroup, GraphBreak, Recompile

__all__ = ["Capture"]

# Note [Limits of the source]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``problems`` are what went wrong or stayed unknown in *this* record: a line of a log that could
# not be read, a body input whose source torch did not say. A clean run has none, and views show
# them in red. ``limits`` are what the source can never contain, the same for every record from it
# (a TORCH_TRACE log has no speculations, Note [What a log does not contain]): said once, shown as
# a quiet folded note, never counted as problems. A live capture has no limits.


@dataclass
class Capture:
    """Everything one ``tracer.capture()`` recorded. Evaluate it in a cell to open the explorer."""

    frames: list[Frame] = field(default_factory=list)  # in compile order
    graph_breaks: list[GraphBreak] = field(default_factory=list)
    recompiles: list[Recompile] = field(default_factory=list)
    fn: str = ""  # qualified name of the captured function or module class
    problems: list[str] = field(default_factory=list)  # what this record could not know exactly (all frames' too)
    limits: list[str] = field(default_factory=list)  # what its source cannot contain (a log's limits): not problems of this run
    meta: dict[str, Any] = field(default_factory=dict)  # torch version, options, notes
    export: Optional[Export] = None  # a tracer.export() record: the run (Note [Exported programs as frames])
    result: Any = field(default=None, compare=False, repr=False)  # the function's own return value (tensors detached); never serialized

    def frame(self, compile_id: str) -> Frame:
        for f in self.frames:
            if f.compile_id == compile_id:
                return f
        raise KeyError(f"no frame {compile_id!r} (frames: {[f.compile_id for f in self.frames]})")

    def grouped_breaks(self) -> list[BreakGroup]:
        """Graph breaks with the same cause (type and explanation, not the call's details) at the
        same location folded into one group with a count, in order of first occurrence
        (``graph_breaks`` keeps every one)."""
        from tracer.model.break_reason import parse_break_reason

        groups: dict[tuple[str, str, str], BreakGroup] = {}
        for b in self.graph_breaks:
            parts = parse_break_reason(b.reason)
            key = (b.location, *parts.cause)
            g = groups.get(key)
            if g is None:
                g = groups[key] = BreakGroup(b.reason, b.location, b.code_line, 0,
                                             gb_type=parts.gb_type, explanation=parts.explanation)
            g.count += 1
            if b.compile_id and b.compile_id not in g.compile_ids:
                g.compile_ids.append(b.compile_id)
            g.hints.extend(h for h in parts.hints if h not in g.hints)
        return list(groups.values())

    def times(self) -> str:
        """A table of compile time per attempt and phase (seconds, from torch's compilation metrics)."""
        from tracer._text import times_table

        return times_table(self)

    def all_problems(self) -> list[str]:
        """The capture's problems followed by every frame's, each frame's prefixed with its id."""
        return [*self.problems, *(f"frame {f.compile_id}: {p}" for f in self.frames for p in f.problems)]

    def __repr__(self) -> str:
        from tracer._text import plural

        problems = f", {plural(len(self.all_problems()), 'problem')}" if self.all_problems() else ""
        return (
            f"Capture({self.fn or '?'}: {plural(len(self.frames), 'frame')}, "
            f"{plural(len(self.graph_breaks), 'graph break')}, {plural(len(self.recompiles), 'recompile')}{problems})"
        )

    def __str__(self) -> str:
        from tracer._text import capture_tree

        return capture_tree(self)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Rendered by whatever registered for Capture (viz: the explorer); else the text tree."""
        return display.mimebundle(self, include=include, exclude=exclude)

    # -- JSON ----------------------------------------------------------------------------------
    def to_json(self, indent: int | None = None) -> str:
        """Serialize to JSON text (``result`` is dropped). Inverse of :meth:`from_json`."""
        from tracer.model.serialize import dumps

        return dumps(self, indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> Capture:
        """Load a capture written by :meth:`to_json`; one ``ValueError`` naming the path of a bad
        field. Never unpickles anything."""
        from tracer.model.serialize import loads

        return loads(text, cls)

    def save(self, path: str) -> None:
        """Write :meth:`to_json` to ``path`` (UTF-8)."""
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.to_json())

    @classmethod
    def load(cls, path: str) -> Capture:
        """Read a file written by :meth:`save`; any other file is one ``ValueError`` ("not a dynascope
        capture: ..."), a binary one included."""
        with open(path, "rb") as fh:
            return cls.from_json(fh.read())


