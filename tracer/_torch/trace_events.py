"""A second structured-trace reader (a TraceReader, tracer/_torch/structured.py) that keeps, per compile attempt, the events issue #18 reads:
Inductor's graphs, code and provenance, ShapeEnv's symbols, guards and specializations, and the
guard manager text.

Invariant: attached for one capture and detached after it (also on error); it only reads records.
Events are kept in the order torch emitted them (the shape reader relies on that: Note [Where a
specialization came from] in tracer/shape_events.py).
"""

from __future__ import annotations

import logging

from tracer._torch.structured import TraceReader
from tracer.shape_events import SHAPE_EVENTS, Event

__all__ = ["EVENTS", "Event", "TraceEvents", "interned_strings"]

# Top-level structured-trace event names (trace_structured's first argument) we keep.
EVENTS = ("inductor_post_grad_graph", "inductor_output_code", *SHAPE_EVENTS, "dynamo_cpp_guards_str")
# "artifact" events we keep, by their metadata name.
ARTIFACTS = ("inductor_post_grad_graph", "inductor_provenance_tracking_node_mappings",
             "inductor_provenance_tracking_kernel_stack_traces")

AttemptKey = tuple[int, int, int]


class TraceEvents(TraceReader):
    """``events[(frame_id, frame_compile_id, attempt)]`` -> the kept events of that attempt, in order."""

    EVENTS = EVENTS
    ARTIFACTS = ARTIFACTS

    def __init__(self) -> None:
        super().__init__()
        self.events: dict[AttemptKey, list[Event]] = {}

    def _read(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "metadata", None)
        if not isinstance(meta, dict) or meta.get("frame_id") is None or meta.get("compiled_autograd_id") is not None:
            return
        akey = (int(meta["frame_id"]), int(meta["frame_compile_id"]), int(meta.get("attempt") or 0))
        payload = getattr(record, "payload", None)
        for name in EVENTS:
            if name in meta:
                self.events.setdefault(akey, []).append((name, meta[name], payload))
                return
        art = meta.get("artifact")
        if isinstance(art, dict) and art.get("name") in ARTIFACTS:
            self.events.setdefault(akey, []).append((art["name"], art, payload))

    def of(self, akey: AttemptKey) -> list[Event]:
        return self.events.get(akey, [])


def interned_strings() -> dict[int, str]:
    """torch interns file names in logged stacks (torch/_logging/structured.py ``intern_string``):
    the table, reversed, so a stack frame's ``filename`` number reads as the file."""
    from torch._logging.structured import INTERN_TABLE

    return {v: k for k, v in INTERN_TABLE.items()}
