"""Only the structured-trace payloads a capture reads are formatted, and only while nobody else listens
(Note [Formatting only what we read] in tracer/_torch/trace_filter.py)."""

from __future__ import annotations

import contextlib
import json
import logging
import re

import pytest
import torch
import torch._inductor.compile_fx as compile_fx
import torch._logging
import torch._logging._internal as internal

import tracer
from tracer._torch.patching import Patches
from tracer._torch.structured import TraceReader
from tracer._torch.trace_filter import install_payload_filter


class Reader(TraceReader):
    EVENTS = ("kept_event",)
    ARTIFACTS = ("kept_artifact",)

    def __init__(self) -> None:
        super().__init__()
        self.records: list[tuple[dict, object]] = []

    def _read(self, record: logging.LogRecord) -> None:
        if "str" not in record.metadata:  # torch interning the file names of a logged stack
            self.records.append((record.metadata, record.payload))


class Other(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[tuple[dict, object]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "str" not in record.metadata:
            self.records.append((record.metadata, record.payload))


@contextlib.contextmanager
def alone():
    """torch's trace logger without the handlers pytest's run puts on it (and torch's lazy one), as in
    a notebook; entered inside a test's body, since they are added for the call phase."""
    saved = list(internal.trace_log.handlers)
    for h in saved:
        internal.trace_log.removeHandler(h)
    try:
        yield
    finally:
        for h in saved:
            internal.trace_log.addHandler(h)


def _emit(calls: list[str]) -> None:
    """One kept and one other event, one kept and one other artifact; ``calls`` names each payload formatted."""
    for name in ("kept_event", "other_event"):
        torch._logging.trace_structured(name, lambda n=name: {"n": n}, payload_fn=lambda n=name: calls.append(n) or n)
    for name in ("kept_artifact", "other_artifact"):
        internal.trace_structured_artifact(name, "string", payload_fn=lambda n=name: calls.append(n) or n)


def test_only_what_a_reader_keeps_is_formatted():
    with alone():
        calls: list[str] = []
        reader = Reader()
        with reader, Patches() as patches:
            assert install_payload_filter(patches, [reader])
            assert compile_fx.trace_structured is not internal.trace_structured.__wrapped__  # bound names too
            _emit(calls)
        assert calls == ["kept_event", "kept_artifact"]
        names = [next(iter(m)) for m, _ in reader.records]
        assert names == ["kept_event", "artifact"]  # a reader needing no other record gets none
        assert reader.records[0][0]["kept_event"] == {"n": "kept_event"}
        # removed after: every module calls torch's own function again
        assert compile_fx.trace_structured is internal.trace_structured is torch._logging.trace_structured
        assert not hasattr(internal.trace_structured, "__wrapped__")


def test_a_module_imported_later_is_found_and_an_unchanged_sys_modules_is_not_rescanned():
    """Note [Scanning only new modules]: a module that bound torch's ``trace_structured`` after an
    earlier scan is patched by the next capture; while ``sys.modules`` keeps its length the scan is
    skipped and the modules found before are still patched."""
    import sys
    import types

    from tracer._torch import trace_filter

    with alone():
        reader = Reader()
        with reader, Patches() as patches:  # a scan, so the module below is new to it
            assert install_payload_filter(patches, [reader])
        late = types.ModuleType("dynascope_test_late_binder")
        late.trace_structured = internal.trace_structured
        sys.modules[late.__name__] = late
        try:
            with reader, Patches() as patches:
                assert install_payload_filter(patches, [reader])
                assert late.trace_structured is internal.trace_structured  # patched like torch's own modules
                assert late.trace_structured.__wrapped__ is torch._logging.trace_structured.__wrapped__
            assert not hasattr(late.trace_structured, "__wrapped__")  # and restored
            scanned = set(trace_filter._SCANNED)
            sys.modules["dynascope_test_late_binder"] = late  # same length: no scan ...
            with reader, Patches() as patches:
                assert install_payload_filter(patches, [reader])
                assert trace_filter._SCANNED == scanned
                assert compile_fx.trace_structured is internal.trace_structured  # ... the known binders still patched
                assert late.trace_structured is internal.trace_structured
        finally:
            del sys.modules[late.__name__]


def test_a_module_imported_during_the_capture_gets_torchs_function_back():
    """Note [Modules imported during the capture]: it bound the wrapper; after the capture it holds
    torch's own function (seen live: a first compile imports torch._inductor.debug that way)."""
    import sys
    import types

    with alone():
        reader = Reader()
        original = internal.trace_structured
        with reader, Patches() as patches:
            assert install_payload_filter(patches, [reader])
            late = types.ModuleType("dynascope_test_imported_during")
            late.trace_structured = torch._logging.trace_structured  # ``from torch._logging import ...`` now
            sys.modules[late.__name__] = late
            assert late.trace_structured.__wrapped__ is original
        try:
            assert late.trace_structured is original is internal.trace_structured
        finally:
            del sys.modules[late.__name__]


class Needy(Reader):
    """A reader that needs every record (as the capture's handler does until it knows the attempt)."""

    def needs_any_record(self, akey):
        return True


def test_a_reader_needing_other_records_gets_them_bare():
    with alone():
        calls: list[str] = []
        reader = Needy()
        with reader, Patches() as patches:
            assert install_payload_filter(patches, [reader])
            _emit(calls)
        assert calls == ["kept_event", "kept_artifact"]
        names = [next(iter(m)) for m, _ in reader.records]
        assert names == ["kept_event", "other_event", "artifact", "artifact"]  # every event arrives...
        assert [p for _, p in reader.records] == ["kept_event", None, "kept_artifact", None]  # ...the others bare
        assert reader.records[1][0]["other_event"] == {}


def test_records_no_reader_needs_are_not_logged_in_a_real_capture():
    """The capture's handler gets one record per attempt beyond the events it keeps (Note [Records no
    reader needs]); each attempt is still seen, in the order attempts ran."""
    from tracer._torch import structured

    seen: list[str] = []
    real = structured.TraceReader.emit

    def emit(self, record):
        meta = record.metadata
        if isinstance(self, structured.StructuredTraceHandler) and isinstance(meta, dict):
            seen.append(next(iter(meta)))
        return real(self, record)

    with alone():
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(structured.TraceReader, "emit", emit)
            cap = tracer.capture(breaks_and_recompiles, torch.randn(3), 2, more_calls=[(torch.randn(5), 3)])
    assert [f.compile_id for f in cap.frames] == ["0/0", "0/0_1", "1/0", "0/1", "0/1_1", "1/1"]
    from tracer._torch import trace_events

    kept = {"dynamo_start", "compilation_metrics", "artifact", *structured.GRAPH_TEXTS, *trace_events.EVENTS}
    others = [name for name in seen if name not in kept]
    assert 0 < len(others) <= len(cap.frames)  # at most the first record of each attempt (torch logs hundreds)


def test_another_handler_gets_every_payload():
    with alone():
        calls: list[str] = []
        reader, other = Reader(), Other()
        internal.trace_log.addHandler(other)
        try:
            with reader, Patches() as patches:
                assert not install_payload_filter(patches, [reader])  # not even installed
                assert compile_fx.trace_structured is internal.trace_structured
                _emit(calls)
        finally:
            internal.trace_log.removeHandler(other)
        assert calls == ["kept_event", "other_event", "kept_artifact", "other_artifact"]
        assert [p for _, p in other.records] == calls  # TORCH_TRACE (or any handler) sees what torch logs


def test_a_handler_added_during_the_capture_gets_every_payload():
    with alone():
        calls: list[str] = []
        reader, other = Reader(), Other()
        with reader, Patches() as patches:
            assert install_payload_filter(patches, [reader])
            internal.trace_log.addHandler(other)
            try:
                _emit(calls)
            finally:
                internal.trace_log.removeHandler(other)
        assert calls == ["kept_event", "other_event", "kept_artifact", "other_artifact"]


def test_a_capture_beside_another_handler_leaves_its_log_complete():
    """A real capture with a foreign handler attached: that handler still gets the payloads no reader of
    ours reads (chromium events, the AOT graphs of an Inductor compile are not kept by the capture)."""
    with alone():
        other = Other()
        internal.trace_log.addHandler(other)
        try:
            cap = tracer.capture(lambda x: torch.sin(x) + 1, torch.randn(3))
        finally:
            internal.trace_log.removeHandler(other)
        assert cap.frames[0].graph.nodes
        chromium = [p for m, p in other.records if "chromium_event" in m]
        assert chromium and all(isinstance(p, str) and '"ph"' in p for p in chromium)
        assert compile_fx.trace_structured is internal.trace_structured


def breaks_and_recompiles(x, n):
    y = x.sin()
    print("graph break")  # two attempts (0/0 restarts as 0/0_1), a resume function
    if x.shape[0] > 2:
        y = y * 2
    return y.cos() + n


def _record(backend: str) -> str:
    """A capture's JSON with what differs between two captures of the same code in one process removed:
    compile times, torch's process-wide ids, code objects' bytes (their listings stay), the names
    numbered by those ids (``__compiled_fn_7_<uuid>``) and guard latencies; whitespace collapsed."""
    cap = tracer.capture(breaks_and_recompiles, torch.randn(3), 2, more_calls=[(torch.randn(5), 3)], backend=backend)
    assert [f.compile_id for f in cap.frames] == ["0/0", "0/0_1", "1/0", "0/1", "0/1_1", "1/1"]

    def strip(o):
        if isinstance(o, dict):
            return {k: strip(v) for k, v in o.items() if k not in ("times", "dynamo_id", "code")}
        return [strip(v) for v in o] if isinstance(o, list) else o

    text = json.dumps(strip(json.loads(cap.to_json())), indent=1)
    text = re.sub(r"[0-9a-f]{8}(_[0-9a-f]{4}){3}_[0-9a-f]{12}", "<uuid>", text)
    text = re.sub(r"\d+", "#", text)
    return re.sub(r"(\\n|\s)+", "", text)  # depyf wraps lines by their length, which those numbers change


@pytest.mark.parametrize("backend", ["aot_eager", pytest.param("inductor", marks=pytest.mark.slow)])
def test_a_capture_records_the_same_with_and_without_the_filter(backend):
    """Attempts, restarts, recompiles, guards, graph texts, bytecode, symbols (and Inductor's code and
    provenance): the same record whether torch formatted every payload or only the ones read."""
    with alone():
        filtered = _record(backend)
    internal.trace_log.addHandler(other := Other())  # another listener: torch formats everything
    try:
        unfiltered = _record(backend)
    finally:
        internal.trace_log.removeHandler(other)
    assert other.records and filtered == unfiltered
