"""In-process handler for Dynamo's structured trace (logger ``torch.__trace``): compile order and recompile reasons.

Invariant: the handler is attached for one capture and detached after it (also on error); it
only reads records, it never changes what torch logs elsewhere (TORCH_TRACE files keep working).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Callable

__all__ = ["StructuredTraceHandler"]

# Note [What we read from the structured trace]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``trace_structured`` emits one record per event with the compile id in its metadata
# (``frame_id``, ``frame_compile_id``, ``attempt``). We read two kinds:
#   "dynamo_start"                      a compile of a frame began: gives compile order;
#   artifact "recompile_reasons"        the guard(s) that failed on the cache entries before
#                                       this recompile (JSON payload: a string or a list).
# Everything else (graph dumps, chromium events, metrics) is ignored. The payload is formatted
# by torch before handlers run, so we only pay for what torch formats anyway when tracing.


class StructuredTraceHandler(logging.Handler):
    """Collect compile starts and recompile reasons; ``on_start(key)``/``on_recompile(key, reasons)``."""

    def __init__(self, on_start: Callable[[tuple[int, int]], None], on_recompile: Callable[[tuple[int, int], list[str]], None]) -> None:
        super().__init__(level=logging.DEBUG)
        self.on_start = on_start
        self.on_recompile = on_recompile
        self._logger: logging.Logger | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            meta = getattr(record, "metadata", None)
            if not isinstance(meta, dict):
                return
            key = (meta.get("frame_id"), meta.get("frame_compile_id"))
            if key[0] is None or key[1] is None or meta.get("compiled_autograd_id") is not None:
                return
            if "dynamo_start" in meta:
                self.on_start(key)
            art = meta.get("artifact")
            if isinstance(art, dict) and art.get("name") == "recompile_reasons":
                payload = getattr(record, "payload", None) or "[]"
                try:
                    reasons = json.loads(payload)
                except ValueError:
                    reasons = payload
                if isinstance(reasons, str):
                    reasons = [reasons]
                self.on_recompile(key, [str(r) for r in reasons])
        except Exception:  # a logging handler must never raise into torch
            pass

    def __enter__(self) -> StructuredTraceHandler:
        from torch._logging._internal import trace_log

        self._logger = trace_log
        trace_log.addHandler(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._logger is not None:
            self._logger.removeHandler(self)
            self._logger = None
