"""TORCH_TRACE structured logs -> the same ``Capture`` a live ``tracer.capture`` makes, without torch.

- :mod:`tracer.trace_log.source`      a file or directory -> the log's text (plain or gzip), where it broke
- :mod:`tracer.trace_log.reader`      lines -> records (metadata + payload), interned strings
- :mod:`tracer.trace_log.events`      one parser per event kind, a table (Note [Events read from a log])
- :mod:`tracer.trace_log.graph_text`  ``print_readable`` text -> Graph nodes with edges, via ``ast``
- :mod:`tracer.trace_log.fx_code`     the same, read fast where the text is fx's printed code (fx_lines,
                                      fx_tokens), handing anything else to graph_text's ``ast`` reader
- :mod:`tracer.trace_log.assemble`    the parsed state -> Capture (ids and statuses as live captures)

Invariant: nothing here imports torch; every line of the file is loaded or named in
``Capture.problems``, and what a log cannot contain is said once in ``Capture.limits`` (Note [What
a log does not contain] in assemble.py). A file of which nothing can be read raises one
``ValueError`` (``NotATrace``, ``DamagedTrace``) naming the file and what was expected.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from typing import Callable, Optional

from tracer._no_gc import no_cyclic_gc
from tracer._text import plural
from tracer.model.capture import Capture
from tracer.model.frame import Frame
from tracer.model.graph import Graph
from tracer.trace_log.assemble import LOG_LIMITS, assemble
from tracer.trace_log.deferred import _READ_ONLY, freeze_loaded, loading_read_only, read_only_graphs
from tracer.trace_log.events import LogState, apply
from tracer.trace_log.reader import Reader, Record, looks_like_trace
from tracer.trace_log.source import DamagedTrace, LogText, NotATrace, log_files, single_log, sniff_binary

__all__ = ["LOG_LIMITS", "DamagedTrace", "NotATrace", "load_trace", "log_files", "read_only_graphs"]

_SKIPPED_SHOWN = 200  # skipped lines listed one by one; more are summed up in one problem


def load_trace(path: str, progress: Optional[Callable[[int], None]] = None, *,
               read_only: Optional[bool] = None) -> Capture:
    """The Capture of one TORCH_TRACE structured log (``.log``, or gzip-compressed), or of the only
    log in a directory (``TORCH_TRACE=<dir>``).

    A directory with several logs is a ``ValueError`` listing them (``tracer.load_job`` reads
    per-rank logs). A damaged file (cut off, broken gzip data, unreadable lines) loads what can be
    read and says so in one problem, also in ``cap.meta["not_read"]``: the file, the line where it
    broke and what was kept. ``NotATrace`` (a ValueError) when not one line is a structured-trace
    record; ``DamagedTrace`` (a ValueError) when the file breaks before its first record.
    ``progress(bytes_read)`` is called every few MB.

    ``read_only=True`` loads for reading only: equal graphs (every rank, step and recompile that
    logged the same graph) then share one node list, and equal guard trees their guards (the bench's
    100 MB log fully read: 0.15x the log's bytes held instead of 3.1x, a third less CPU;
    bench/RESULTS.md), and any write into a graph's nodes or a guard raises
    ``ReadOnlyError`` (Note [Read-only graphs] in tracer/trace_log/deferred.py); the capture reads,
    renders and saves exactly like an editable one. ``None`` (the default): read-only inside
    ``with read_only_graphs():``, editable otherwise.
    """
    file = single_log(os.fspath(path))
    if read_only is None:
        read_only = loading_read_only()
    elif not isinstance(read_only, bool):
        raise TypeError(f"load_trace: read_only must be True, False or None, got {read_only!r}")
    with no_cyclic_gc(), _mode(read_only):  # See Note [No cyclic GC while a log is read] in tracer/_no_gc.py
        cap = _load(file, progress)
    if read_only:  # graphs parsed at load are made read-only too; the rest are when first read
        freeze_loaded([g for f in cap.frames for g in _graphs(f)])
    return cap


@contextlib.contextmanager
def _mode(read_only: bool):  # type: ignore[no-untyped-def]
    """The loader's graphs made read-only or editable, whatever the caller's context says."""
    token = _READ_ONLY.set(read_only)
    try:
        yield
    finally:
        _READ_ONLY.reset(token)


def _graphs(f: Frame) -> list[Graph]:
    """Every graph of ``f``: Dynamo's, its bodies', its pieces', and their AOT graphs."""
    out = [f.graph, *(s.graph for s in f.subgraphs.values()), *(p.graph for p in f.pieces)]
    for aot in [f.aot, *(p.aot for p in f.pieces)]:
        if aot is not None:
            out += [g for g in (aot.joint, aot.forward, aot.backward, aot.inference) if g is not None]
            out += aot.subgraphs.values()
    return out


def load_head(path: str) -> Capture:
    """A read-only Capture of the first records of a log only: up to the first record of the compile
    attempt after the first one that logged a Dynamo graph (at most 8 attempts). Its frames may lack
    records the whole log has after that point (a lazily compiled backward, the compile's end): for
    warming content-keyed caches beside the whole log's load (viz/report_warm.py), never for showing."""
    with no_cyclic_gc(), _mode(True):  # Note [No cyclic GC while a log is read], Note [Read-only graphs]
        return _load(single_log(os.fspath(path)), None, stop=_past_first_graph)


def _past_first_graph(st: LogState) -> bool:
    """Whether ``st`` has begun an attempt after one with a Dynamo graph (``load_head``'s end)."""
    return len(st.order) > 8 or any("dynamo" in st.attempts[k].texts for k in st.order[:-1])


def _load(file: str, progress: Optional[Callable[[int], None]], stop: Optional[Callable[[LogState], bool]] = None) -> Capture:
    with LogText(file) as src:
        reader = Reader(src.text.buffer, progress=progress)  # bytes: Note [Reading a log as bytes] in reader.py
        st = LogState(reader.strings)
        records, last = 0, None
        for rec in reader:  # one record behind, so that a cut-off last record is not applied
            if last is not None:
                apply(last, st)
                records += 1
                if stop is not None and stop(st):
                    last = None  # ``rec`` is not read: the head ends before it
                    break
            last = rec
        cut, drop_last = _cut_off(last, reader)
        if last is not None and not drop_last:
            apply(last, st)
            records += 1
    damage = _damage(src, reader, cut)
    if records == 0 and not reader.strings:
        raise _nothing_read(file, src, reader, damage)
    name = os.path.basename(file)
    cap = assemble(st, fn=name)
    skipped = reader.skipped
    summary = _summary(name, damage, skipped, records, len(cap.frames))
    if summary:
        cap.problems.append(summary)
        cap.meta["not_read"] = summary
    if _ends_early(src, cut):
        _mark_cut_frames(cap, st)
    cap.problems.extend(skipped[:_SKIPPED_SHOWN])
    if len(skipped) > _SKIPPED_SHOWN:
        cap.problems.append(f"... and {len(skipped) - _SKIPPED_SHOWN} more lines skipped")
    cap.meta["log_lines"] = reader.lines
    return cap


# Note [A log cut off at the end]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# torch ends every record with a newline and puts the md5 of its payload in ``has_payload``
# (torch/_logging/_internal.py ``trace_structured``). So a log cut off while it was written, or
# copied in part, shows it at the end: either the text ends without a newline and its last line
# is not a whole record, or the last record's payload does not match its md5 (cut at a line
# boundary). That record is dropped and the cut is said once (not as a skipped line); a last
# record that is whole but only lacks its newline is kept. A last line without a newline and
# without the glog prefix, in a file with no record before it, is no cut log but no trace at all
# (NotATrace). A log cut exactly between two records is a shorter log: nothing in it tells.
def _cut_off(last: Optional[Record], reader: Reader) -> tuple[Optional[str], bool]:
    """How the end of the text is cut off (Note [A log cut off at the end]), or None if it is whole;
    and whether that makes the last record read a cut one (to drop)."""
    end = reader.unterminated
    if end is not None and (last is None or last.line < end) and \
            (last is not None or looks_like_trace(reader.unterminated_head)):
        del reader.skipped[reader.skipped_before_end:]  # the cut line is said once, as the cut
        return f"in the middle of line {reader.lines}", False
    if last is not None and last.payload is not None and isinstance(last.meta.get("has_payload"), str):
        if hashlib.md5(last.payload.encode("utf-8"), usedforsecurity=False).hexdigest() != last.meta["has_payload"]:
            if end is not None:
                return f"in the middle of line {reader.lines}, in the payload of the record at line {last.line}", True
            return f"within the payload of the record at line {last.line} (its md5 is not the record's has_payload)", True
    return None, False


def _ends_early(src: LogText, cut: Optional[str]) -> bool:
    """Whether the text ends before the log did: cut off, or gzip data broken (not only a bad checksum)."""
    if src.broken is not None:
        return not src.broken.startswith(("CRC check failed", "Incorrect length"))
    return cut is not None


# Note [Frames a cut log ends inside]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Dynamo logs a compile's ``compilation_metrics`` when the compile ends, after its graphs, guards
# and AOT graphs: on exit of the ``MetricsContext`` that ``_compile`` enters around the whole
# compile (torch/_dynamo/convert_frame.py; its ``on_exit`` is ``record_compilation_metrics`` in
# torch/_dynamo/utils.py). So in a log whose text ends early (Note [A log cut off at the end], or broken gzip
# data), a compile with no metrics is one the text ends inside: what torch logged for it after the
# cut is not in the file, and its frames (every attempt) are incomplete, not different.
# ``cap.meta["cut_in"]`` lists their compile ids (empty: the text ended between compiles), each of
# those frames says so in its problems, and tracer/job_cut.py compares them with no other rank's.
# A compile whose metrics came before the cut is whole as Dynamo and AOTAutograd logged it; a
# compile the process began after the cut is not in the file at all (a rank's later frames are unknown).
def _mark_cut_frames(cap: Capture, st: LogState) -> None:
    """See Note [Frames a cut log ends inside]."""
    cut_in = []
    for key, frame in zip(st.order, cap.frames, strict=True):  # assemble makes one frame per attempt, in order
        info = st.info.get(key[:2])
        if info is not None and info.metrics is not None:
            continue
        cut_in.append(frame.compile_id)
        frame.problems.append("the log ends inside this compile (it is cut off before torch logged the "
                              "compile's end): what torch logged for it after the cut is not in the file")
        if frame.status == "failed":  # no graph logged before the cut: whether it would have made one is unknown
            frame.status_reason = "unknown: the log is cut off inside this compile"
    cap.meta["cut_in"] = cut_in


def _damage(src: LogText, reader: Reader, cut: Optional[str]) -> Optional[str]:
    """Where and how the text breaks, or None; the gzip error says it when there is one."""
    if src.broken is not None:
        if src.broken.startswith(("CRC check failed", "Incorrect length")):  # checked after the last byte
            return (f"the gzip checksum does not match the decompressed text ({src.broken}): "
                    f"some of its {reader.lines} lines may be damaged")
        if src.bytes == 0:
            return f"the gzip data breaks before any text ({src.broken})"
        line = reader.lines + (0 if reader.unterminated is not None else 1)  # mid-line, or the next line
        return f"the gzip data breaks in line {line}, after {src.bytes} decompressed bytes ({src.broken})"
    if cut is not None:
        return f"cut off: the file ends (byte {src.size}) {cut}"
    return None


def _summary(name: str, damage: Optional[str], skipped: list[str], records: int, frames: int) -> Optional[str]:
    """One line: the file, where it broke, the lines not read, and what was kept."""
    parts = [damage] if damage else []
    if skipped:
        parts.append(f"{plural(len(skipped), 'line')} not read (first: {skipped[0]})")
    if not parts:
        return None
    return (f"{name}: {'; '.join(parts)}; kept {records} record{'s' if records != 1 else ''} "
            f"({frames} compile attempt{'s' if frames != 1 else ''})")


def _nothing_read(file: str, src: LogText, reader: Reader, damage: Optional[str]) -> ValueError:
    if damage is not None:
        return DamagedTrace(f"{file}: {damage}; nothing could be read before it")
    if src.size == 0:
        return NotATrace(f"{file}: empty file, not a TORCH_TRACE structured log")
    n = reader.lines
    what = "binary data" if sniff_binary(file) else f"no structured-trace record in {n} line{'s' if n != 1 else ''}"
    return NotATrace(f"{file}: not a TORCH_TRACE structured log ({what}; expected lines like "
                     "'V1123 11:43:51.297000 22811 file.py:28] {\"dynamo_start\": ...}' as torch's "
                     "trace_structured writes them)")
