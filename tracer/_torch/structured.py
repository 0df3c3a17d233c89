"""In-process handler for Dynamo's structured trace (logger ``torch.__trace``): compile order, recompile
reasons, and the readable graph texts torch renders anyway.

Invariant: the handler is attached for one capture and detached after it (also on error); it
only reads records, it never changes what torch logs elsewhere (TORCH_TRACE files keep working).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Callable

__all__ = ["TraceReader", "GRAPH_TEXTS", "METRIC_FIELDS", "AttemptKey", "StructuredTraceHandler", "logged_graph_code"]

# Note [What we read from the structured trace]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``trace_structured`` emits one record per event with the compile id in its metadata
# (``frame_id``, ``frame_compile_id``, ``attempt``). Every record tells that an attempt ran (a
# restarted attempt logs its graph break under its own attempt number). We read:
#   "dynamo_start"                      a compile of a frame began: gives compile order;
#   "compilation_metrics"               a compile ended: status (fail_type/fail_reason,
#                                       restart_reasons) and torch's own phase times;
#   artifact "recompile_reasons"        the guard(s) that failed on the cache entries before
#                                       this recompile (JSON payload: a string or a list).
#   graph dumps (GRAPH_TEXTS)           see Note [Graph text torch already rendered]
# Everything else (chromium events, tensor descriptions) is ignored. Note that attaching any handler makes
# ``trace_structured`` format every payload (it checks ``trace_log.handlers``), which is why we
# take what we can from those payloads instead of formatting the same text a second time, and why
# the payloads no reader keeps are not formatted (Note [Formatting only what we read] in
# tracer/_torch/trace_filter.py).
#
# Note [Graph text torch already rendered]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``Graph.code`` is ``print_readable()`` text, and rendering it is the largest single cost of
# recording (bench/RESULTS.md). AOTAutograd renders it itself for its joint, forward, backward and
# inference graphs whenever ``aot_config.enable_log`` is on (the default), and Dynamo renders its
# output graph for the structured trace because our handler is attached; each is logged *before*
# the compiler that receives the graph runs. So the recorders ask ``logged_graph_code(name)`` for the
# text of the compile running now and render it only when torch did not (enable_log off, a HOP
# body). torch's text is the richer variant (strides and devices in the annotations). One caveat:
# the joint is logged before ``_apply_tensorify_python_scalars``, which rewrites float scalars of
# dynamic graphs into tensors; for such graphs the joint text shows the graph before that pass.
GRAPH_TEXTS = ("dynamo_output_graph", "aot_joint_graph", "aot_forward_graph", "aot_backward_graph",
               "aot_inference_graph")


AttemptKey = tuple[int, int, int]  # (frame_id, frame_compile_id, attempt), torch's own numbers

# The fields of torch's CompilationMetrics (torch/_dynamo/utils.py) a Frame uses; the rest is dropped.
METRIC_FIELDS = ("co_name", "co_filename", "co_firstlineno", "fail_type", "fail_reason", "restart_reasons",
                 "graph_op_count", "entire_frame_compile_time_s", "backend_compile_time_s",
                 "aot_autograd_cumulative_compile_time_us", "dynamo_time_before_restart_s")


class TraceReader(logging.Handler):
    """A handler on torch's structured-trace logger for one capture: ``with reader:`` attaches it,
    leaving detaches it (also on error). A subclass implements ``_read(record)``; whatever it raises
    is kept in ``errors``, never raised into torch. ``EVENTS`` (event names) and ``ARTIFACTS``
    (artifact names) are what it reads: other events reach it without metadata or payload
    (Note [Formatting only what we read] in tracer/_torch/trace_filter.py)."""

    EVENTS: tuple[str, ...] = ()
    ARTIFACTS: tuple[str, ...] = ()

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.errors: list[str] = []  # records we could not read
        self._logger: logging.Logger | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._read(record)
        except Exception as e:  # except: records a problem (a logging handler must never raise into torch)
            self.errors.append(f"structured trace record not read: {type(e).__name__}: {e}"[:300])

    def _read(self, record: logging.LogRecord) -> None:
        raise NotImplementedError

    def needs_any_record(self, akey: AttemptKey | None) -> bool:
        """Whether a record of an event outside EVENTS/ARTIFACTS, logged under attempt ``akey`` (None:
        no frame compile id), would tell this reader anything (Note [Records no reader needs] in
        tracer/_torch/trace_filter.py). A reader that reads only its EVENTS and ARTIFACTS needs none."""
        return False

    def __enter__(self) -> TraceReader:
        from torch._logging._internal import trace_log

        self._logger = trace_log
        trace_log.addHandler(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._logger is not None:
            self._logger.removeHandler(self)
            self._logger = None


class StructuredTraceHandler(TraceReader):
    """Collect what the structured trace says about each compile attempt.

    Calls ``on_attempt((frame_id, compile_id, attempt))`` the first time a record names an attempt
    (in trace order: the order attempts ran), ``on_start(key, stack)`` at ``dynamo_start`` (the user
    stack torch logs there, frames as dicts with an interned ``filename``),
    ``on_recompile(key, reasons)`` for the ``recompile_reasons`` artifact, and
    ``on_metrics(attempt_key, metrics)`` for ``compilation_metrics`` (emitted once per compile, when
    it ends, under its last attempt; ``metrics`` holds METRIC_FIELDS). ``graph_texts``: the
    GRAPH_TEXTS kept (Inductor captures record no AOT graphs, so they keep the Dynamo graph's only).
    """

    ARTIFACTS = ("recompile_reasons",)

    def __init__(self, on_start: Callable[[tuple[int, int], list[Any]], None], on_recompile: Callable[[tuple[int, int], list[str]], None],
                 on_attempt: Callable[[AttemptKey], None] | None = None,
                 on_metrics: Callable[[AttemptKey, dict[str, Any]], None] | None = None,
                 graph_texts: tuple[str, ...] = GRAPH_TEXTS) -> None:
        super().__init__()
        self.graph_texts = graph_texts  # the GRAPH_TEXTS the capture's recorders will ask for
        self.EVENTS = ("dynamo_start", "compilation_metrics", *graph_texts)
        self.on_start = on_start
        self.on_recompile = on_recompile
        self.on_attempt = on_attempt
        self.on_metrics = on_metrics
        self._attempts: set[AttemptKey] = set()
        self.texts: dict[tuple[tuple[int, int], str], str] = {}  # (compile key, GRAPH_TEXTS name) -> text

    def needs_any_record(self, akey: AttemptKey | None) -> bool:
        """Any record is the first news of its attempt, until one was read (``on_attempt``)."""
        return akey is not None and akey not in self._attempts

    def _read(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "metadata", None)
        if not isinstance(meta, dict):
            return
        key = (meta.get("frame_id"), meta.get("frame_compile_id"))
        if key[0] is None or key[1] is None or meta.get("compiled_autograd_id") is not None:
            return
        akey = (int(key[0]), int(key[1]), int(meta.get("attempt") or 0))
        if akey not in self._attempts:
            self._attempts.add(akey)
            if self.on_attempt is not None:
                self.on_attempt(akey)
        if "dynamo_start" in meta:
            start = meta["dynamo_start"]
            stack = start.get("stack") if isinstance(start, dict) else None
            self.on_start(key, stack if isinstance(stack, list) else [])
        metrics = meta.get("compilation_metrics")
        if isinstance(metrics, dict) and self.on_metrics is not None:
            self.on_metrics(akey, {k: metrics.get(k) for k in METRIC_FIELDS})
        for name in self.graph_texts:
            if name in meta:
                payload = getattr(record, "payload", None)
                if isinstance(payload, str):
                    self.texts[(key, name)] = payload
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

    def __enter__(self) -> StructuredTraceHandler:
        global _ACTIVE_HANDLER
        super().__enter__()
        _ACTIVE_HANDLER = self
        return self

    def __exit__(self, *exc: Any) -> None:
        global _ACTIVE_HANDLER
        if _ACTIVE_HANDLER is self:
            _ACTIVE_HANDLER = None
        self.texts.clear()
        super().__exit__(*exc)


_ACTIVE_HANDLER: StructuredTraceHandler | None = None  # the capture's handler while it is attached


def logged_graph_code(name: str) -> str | None:
    """The readable text torch logged as ``name`` (one of GRAPH_TEXTS) for the compile running now.

    None outside a capture, or when torch did not log it; see Note [Graph text torch already rendered].
    """
    handler = _ACTIVE_HANDLER
    if handler is None:
        return None
    from torch._guards import CompileContext

    trace_id = CompileContext.current_trace_id()
    if trace_id is None:
        return None
    key = (trace_id.compile_id.frame_id, trace_id.compile_id.frame_compile_id)
    return handler.texts.get((key, name))
