"""ShapeEnv's own events during one ``torch.export.export``: the symbols it created, the shape guards
it added (with the user line torch logged for each) and the dimensions it specialized, for frame "0/0".

Invariant: a structured-trace reader attached for the export call only and detached after it, also
on error (the payload filter with it, Note [Formatting only what we read] in
tracer/_torch/trace_filter.py); the events are read by the same torch-free
:func:`tracer.shape_events.shape_records` a capture and a log use. Every event of the call is kept
(non-strict export traces without a Dynamo frame, so its events carry no compile id).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Iterator

from tracer._torch.export_failure import _user_file
from tracer._torch.patching import Patches
from tracer._torch.releases import install_or_note
from tracer._torch.structured import TraceReader
from tracer._torch.trace_events import interned_strings
from tracer._torch.trace_filter import install_payload_filter
from tracer.model import Frame
from tracer.shape_events import SHAPE_EVENTS, Event, shape_records

__all__ = ["ShapeEvents", "fill_shapes", "recording_shapes"]


class ShapeEvents(TraceReader):
    """The shape events of one export call, in the order torch emitted them."""

    EVENTS = SHAPE_EVENTS

    def __init__(self) -> None:
        super().__init__()
        self.events: list[Event] = []

    def _read(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "metadata", None)
        if not isinstance(meta, dict):
            return
        for name in SHAPE_EVENTS:
            if name in meta:
                self.events.append((name, meta[name], None))
                return


@contextlib.contextmanager
def recording_shapes(problems: list[str]) -> Iterator[ShapeEvents]:
    """Read ShapeEnv's events while the block runs; what could not be read goes to ``problems``."""
    reader = ShapeEvents()
    with contextlib.ExitStack() as stack:
        patches = stack.enter_context(Patches())
        install_or_note(problems, "shape guards of the export", stack.enter_context, reader)
        install_or_note(problems, "less formatting while exporting", install_payload_filter, patches, [reader])
        yield reader
    problems.extend(reader.errors)


def fill_shapes(frame: Frame, reader: ShapeEvents) -> None:
    """The frame's symbols, shape guards and specializations from what ``reader`` kept; a guard's user
    line is the innermost frame of its stack outside torch (Note [The user line of a shape guard] in
    tracer/shape_events.py), as is a symbol's; a guard whose stack has torch's frames only is a problem of the
    frame. A symbol's is not: torch creates one for each HOP operand in its own code, so most programs with a
    HOP have such symbols, and the symbols table says "unknown (only torch frames)" for each."""
    frame.symbols, frame.shape_guards, frame.specializations = shape_records(reader.events, interned_strings(),
                                                                             _user_file)
    for g in frame.shape_guards:
        if g.user_stack and g.user_line is None:
            frame.problems.append(f"shape guard {g.expr}: torch logged only its own frames, the user line is unknown")

