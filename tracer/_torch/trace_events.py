"""A second structured-trace handler that keeps, per compile attempt, the events issue #18 reads:
Inductor's graphs, code and provenance, ShapeEnv's symbols, guards and specializations, and the
guard manager text.

Invariant: attached for one capture and detached after it (also on error); it only reads records.
Events are kept in the order torch emitted them (the shape reader relies on that: Note [Where a
specialization came from] in tracer/_torch/shapes.py).
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["EVENTS", "Event", "TraceEvents", "interned_strings"]

# Top-level structured-trace event names (trace_structured's first argument) we keep.
EVENTS = ("inductor_post_grad_graph", "inductor_output_code", "create_symbol", "create_unbacked_symbol",
          "symbolic_shape_specialization", "guard_added_fast", "dynamo_cpp_guards_str")
# "artifact" events we keep, by their metadata name.
ARTIFACTS = ("inductor_post_grad_graph", "inductor_provenance_tracking_node_mappings",
             "inductor_provenance_tracking_kernel_stack_traces")

Event = tuple[str, Any, Any]  # (event or artifact name, its metadata value, payload or None)
AttemptKey = tuple[int, int, int]


class TraceEvents(logging.Handler):
    """``events[(frame_id, frame_compile_id, attempt)]`` -> the kept events of that attempt, in order."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.events: dict[AttemptKey, list[Event]] = {}
        self.errors: list[str] = []
        self._logger: logging.Logger | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._read(record)
        except Exception as e:  # a logging handler must never raise into torch: keep it as a problem
            self.errors.append(f"structured trace record not read: {type(e).__name__}: {e}"[:300])

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

    def __enter__(self) -> TraceEvents:
        from torch._logging._internal import trace_log

        self._logger = trace_log
        trace_log.addHandler(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._logger is not None:
            self._logger.removeHandler(self)
            self._logger = None


def interned_strings() -> dict[int, str]:
    """torch interns file names in logged stacks (torch/_logging/structured.py ``intern_string``):
    the table, reversed, so a stack frame's ``filename`` number reads as the file."""
    from torch._logging.structured import INTERN_TABLE

    return {v: k for k, v in INTERN_TABLE.items()}
