"""Only the structured-trace payloads a capture reads get formatted, while nobody else listens.

Invariant: installed (through :class:`~tracer._torch.patching.Patches`) for one capture and removed
after it, also on error, and only when the capture's own readers are the only handlers on torch's
trace logger; while any other handler is on it (``TORCH_TRACE``, a user's), every event is formatted
as torch formats it. See Note [Formatting only what we read].
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Iterable

from tracer._torch.patching import Patches

__all__ = ["install_payload_filter"]

# Note [Formatting only what we read]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``trace_structured`` (torch/_logging/_internal.py) formats an event's metadata and payload whenever
# ``trace_log.handlers`` is non-empty: a single reader makes torch JSON-encode ~100 chromium events,
# render the pre/post-grad graphs a second time, write ``fx_graph_runnable`` (a whole runnable
# script), describe every fake tensor, ... per compile. Measured on the Inductor mlp bench model
# (0.27 s compile): +23 ms, 8 %, for payloads no reader of ours looks at (bench/RESULTS.md).
#
# So, while the only handlers on the logger are this capture's readers, ``trace_structured`` is
# wrapped: an event a reader keeps (``TraceReader.EVENTS``, or an ``"artifact"`` whose name is in
# ``TraceReader.ARTIFACTS``) goes through unchanged; any other event still goes through — every
# record keeps its compile id and attempt, which the readers use to learn the order attempts ran —
# but with empty metadata and no payload, so torch formats nothing for it. The same function object
# is reached three ways, so it is replaced in each: ``torch._logging.trace_structured`` (callers
# that write ``torch._logging.trace_structured(...)`` or import it inside a function),
# ``torch._logging._internal.trace_structured`` (``trace_structured_artifact``, ``intern_string``),
# and every loaded module that bound the name with ``from torch._logging import trace_structured``
# (compile_fx, graph_compile, meta_utils, ...). See Note [Modules imported during the capture].
#
# Note [Modules imported during the capture]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A module first imported while the wrapper is installed (a first compile imports torch._inductor.debug,
# torch._dynamo.backends.distributed, ...) binds the wrapper itself. So when the patches are undone,
# the modules that appeared in ``sys.modules`` since the install and hold the wrapper get torch's own
# function back; nothing of the capture stays bound anywhere (the wrapper holds its readers). The next
# capture's scan finds them as binders of torch's function like any other.
#
# Note [Records no reader needs]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Even emptied, each event costs a LogRecord and a call of every handler (about 0.1 ms): a
# transformer's compile logs hundreds (``describe_storage``/``describe_tensor``/``describe_source``
# for every fake tensor, a chromium event per phase), 0.5 % of a capture of the zoo bench's Swin.
# The only thing an emptied record tells a reader is that its attempt ran, which only the first
# record of that attempt tells (``StructuredTraceHandler.on_attempt``). So an event no reader keeps
# is not passed to torch at all when no reader ``needs_any_record`` of its attempt, the attempt
# being read as torch reads it (the current trace id, else the ``compile_id`` argument). torch's
# own bookkeeping of the time spent logging (``structured_logging_overhead``) then counts less: it
# is the time of logging that did not happen.
#
# Not installed at all when another handler is already on the logger at the start: torch's
# ``TORCH_TRACE`` formatter writes the caller's file and line into every log line, which would then
# name this module. (torch's ``LazyTraceHandler`` sits on the logger until the first event of the
# process is logged and removes itself when ``TORCH_TRACE`` is unset, so a process's first capture
# formats everything.) A handler added during the capture gets every payload, since the wrapper
# checks the handlers at each call.


def _empty() -> None:
    return None


def _attempt(kwargs: dict[str, Any]) -> tuple[int, int, int] | None:
    """The (frame_id, frame_compile_id, attempt) torch would log a record under, as ``trace_structured``
    reads it; None when it would log no frame compile id (no reader reads such a record)."""
    from torch._guards import CompileContext

    if kwargs.get("suppress_context"):
        return None
    trace_id = CompileContext.current_trace_id()
    cid = trace_id.compile_id if trace_id is not None else kwargs.get("compile_id")
    if cid is None or cid.compiled_autograd_id is not None or cid.frame_id is None or cid.frame_compile_id is None:
        return None
    return (int(cid.frame_id), int(cid.frame_compile_id), int(trace_id.attempt or 0) if trace_id is not None else 0)


_SCANNED: set[str] = set()  # names of the modules looked at by earlier captures
_SCANNED_COUNT = [-1]  # len(sys.modules) when they were last looked at (Note [Scanning only new modules])
_BINDERS: list[Any] = []  # those among them that bound ``trace_structured``


# Note [Scanning only new modules]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Each Inductor compile imports its output code as a module, so scanning the whole of ``sys.modules``
# at every capture would grow with the session; only names not scanned before are looked at. Even
# the set difference over a few thousand names is 0.1-0.4 ms, a measurable share of exporting a small
# model (bench/RESULTS.md, torch.export record overhead), so it is skipped while ``sys.modules`` has
# the length it had at the last scan. A module swapped for another at equal length (one removed, one
# imported) is then not scanned until the length next changes: that module keeps torch's own
# ``trace_structured`` for this capture, which formats everything, slower, never wrong (Note
# [Formatting only what we read]).
def _binders(fn: Any) -> list[Any]:
    """Loaded modules other than torch._logging(._internal) whose global ``trace_structured`` is ``fn``
    (Note [Scanning only new modules])."""
    if len(sys.modules) != _SCANNED_COUNT[0]:
        _SCANNED_COUNT[0] = len(sys.modules)
        for name in sys.modules.keys() - _SCANNED:
            _SCANNED.add(name)
            m = sys.modules.get(name)
            if name not in ("torch._logging", "torch._logging._internal") and m is not None \
                    and getattr(m, "__dict__", {}).get("trace_structured") is fn:
                _BINDERS.append(m)
    return [m for m in _BINDERS if m.__dict__.get("trace_structured") is fn]


def install_payload_filter(patches: Patches, readers: Iterable[Any]) -> bool:
    """Wrap ``trace_structured`` for this capture so only events some reader of ``readers`` keeps are
    formatted (Note [Formatting only what we read]); ``patches`` undoes it. False (nothing installed)
    when a handler other than ``readers`` is on torch's trace logger."""
    import torch._logging
    import torch._logging._internal as internal

    readers = list(readers)
    if any(h not in readers for h in internal.trace_log.handlers):
        return False
    events = frozenset(e for r in readers for e in r.EVENTS)
    artifacts = frozenset(a for r in readers for a in r.ARTIFACTS)
    original: Callable[..., None] = internal.trace_structured
    trace_log = internal.trace_log
    ours = tuple(readers)

    def trace_structured(name: str, metadata_fn: Callable[[], Any] = dict, **kwargs: Any) -> None:
        if name in events or not trace_log.handlers or not all(h in ours for h in trace_log.handlers):
            return original(name, metadata_fn, **kwargs)
        if name == "artifact":
            meta = metadata_fn()
            if isinstance(meta, dict) and meta.get("name") in artifacts:
                return original(name, lambda: meta, **kwargs)
        akey = _attempt(kwargs)  # once per event, not per reader
        if not any(r.needs_any_record(akey) for r in ours):  # See Note [Records no reader needs]
            return None
        # no stack either: torch logs one only for a record without a compile id, which no reader keeps
        return original(name, dict, **{**kwargs, "payload_fn": _empty, "expect_trace_id": False})

    trace_structured.__wrapped__ = original  # type: ignore[attr-defined]
    for owner in [torch._logging, internal, *_binders(original)]:
        patches.set(owner, "trace_structured", trace_structured)
    count = len(sys.modules)

    def unbind_new_modules() -> None:  # See Note [Modules imported during the capture]
        if len(sys.modules) == count:
            return
        for name in sys.modules.keys() - _SCANNED:
            m = sys.modules.get(name)
            if m is not None and getattr(m, "__dict__", {}).get("trace_structured") is trace_structured:
                m.trace_structured = original

    patches.on_restore(unbind_new_modules)
    return True
