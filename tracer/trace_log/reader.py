"""Lines of a TORCH_TRACE file -> records (metadata dict, payload text), with interned strings resolved.

Invariant: every line of the file is either part of a record that is returned or named in
``Reader.skipped`` (line number and why); nothing raises for a damaged line. Only the standard
library and msgspec are used: a log loads on a machine without torch.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Iterator, Optional

import msgspec

from tracer.trace_log.source import NotATrace

__all__ = ["Record", "Reader", "NotATrace"]

# Note [Structured trace line format]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# torch/_logging/_internal.py ``TorchLogsFormatter`` (trace=True) writes one record as a glog
# prefix "V1123 11:43:51.297000 22811 path/file.py:123] " (a "[rankN]:" in front under torch.distributed
# for the plain logs, not the trace), then ``json.dumps(metadata)`` on the same line, then every
# line of the payload (if any) prefixed by a tab. ``trace_structured`` puts the event name as the
# first key of the metadata ({"dynamo_start": {...}, "frame_id": 0, ...}) and, with a payload, a
# ``has_payload`` md5 of it. File names in stacks are interned: torch/_logging/structured.py
# ``intern_string`` logs {"str": [text, index]} once, later stacks carry the index.
_PREFIX = re.compile(r"^(?:\[rank\d+\]:)?[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\n]*?:\d+\](?: \[[^\]]*\])* ")


# Note [Reading a log in blocks]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Most of a log's bytes are payload lines (graph texts, guard trees), so the reader does not walk
# lines in Python: it reads blocks of characters and cuts them into *units*, one line plus the tab
# lines after it, at each newline not followed by a tab (one C-speed regex search). A unit's payload
# is its text after the first line with the tab after every newline removed, which is exactly the
# lines joined by "\n" with their leading tab dropped. A unit that reaches the end of a block waits
# for the next block. Line numbers are counted per unit, so every skipped line is still named.
# Blocks are small (512 KB: the 106 MB bench log read 0.015 s faster than in 4 MB blocks, the block
# still in the CPU's cache when its units are cut and read); a unit longer than 1 MB (a huge payload)
# is read on in blocks up to each next 4 MB of the text, so that joining a block to the unit's start is
# not done hundreds of times.
_UNIT_END = re.compile(b"\n(?!\t)")
_CHUNK = 1 << 19  # bytes (characters of a text stream) read at a time (the block stays in the CPU's cache)
_LONG_UNIT, _CHUNK_LONG = 1 << 20, 1 << 22  # a unit not ended after this many bytes is read on in larger blocks

# Note [Reading a log as bytes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The loader hands the reader the file's bytes. A text stream is read as its characters' UTF-8 bytes
# (a lone surrogate, which no text ``LogText`` decodes can hold, then reads as U+FFFD), so there is
# one way of cutting a log, and tests/test_trace_log_bytes.py checks it against decoding whole texts. A unit is cut
# at b"\n" not followed by a tab, which is never inside a UTF-8 sequence, so decoding each piece with
# errors="replace" gives the very characters decoding the whole file does. What bytes save is the
# work on repeated payloads: torch puts the md5 of a payload in ``has_payload``, and a log repeats
# its graph texts and guard trees (every rank, every step compiled again). A payload whose md5 was
# seen among the last few and whose bytes are *equal* to that one's (compared, never assumed from
# the md5) is the text decoded then, the same string object; only a new payload is decoded and has
# its tabs removed. Metadata lines that are ASCII (torch's ``json.dumps`` escapes the rest) are
# decoded by msgspec; any line msgspec refuses (NaN, a lone surrogate, a number out of range, bad
# JSON) goes to ``json.loads``, so what is read, and each error, is ``json.loads``'s.
_KEPT_PAYLOADS = 256  # distinct payloads remembered by md5, the least recently seen forgotten first
_KEPT_BYTES = 32 << 20  # and at most this many of their bytes (a 12-layer training step logs 38 payloads, 1.4 MB)
_META = msgspec.json.Decoder()


@dataclass(slots=True)
class Record:
    """One ``trace_structured`` call as the file holds it."""

    meta: dict[str, Any]  # the metadata object (event name first)
    payload: Optional[str]  # the payload lines joined by "\n" (tabs removed); None when there is none
    line: int  # 1-based line number of the metadata line
    _event: Optional[str] = field(default=None, repr=False, compare=False)  # ``event`` once read

    @property
    def event(self) -> str:
        """The event name: the first key that is not a context key ("dynamo_start", "artifact", ...).
        Found on the first read and kept (a plain attribute: ``functools.cached_property`` took a lock per
        record, 30,000 of them in the bench's 106 MB log)."""
        e = self._event
        if e is None:
            e = ""
            for k in self.meta:
                if k not in _CONTEXT_KEYS:
                    e = k
                    break
            self._event = e
        return e


_CONTEXT_KEYS = frozenset(("rank", "compiled_autograd_id", "frame_id", "frame_compile_id", "attempt",
                           "has_payload", "stack", "severity", "timestamp", "pathname", "thread"))


@dataclass
class Reader:
    """Iterate the records of one open log; ``skipped`` lists what could not be read, by line."""

    fh: IO[str]
    progress: Optional[Callable[[int], None]] = None  # called with the bytes read so far, every ~8 MB
    skipped: list[str] = field(default_factory=list)
    strings: dict[int, str] = field(default_factory=dict)  # interned file names by index
    lines: int = 0
    chars: int = 0
    # the text ends without a newline: the first line of that last unit, and len(skipped) before it
    # (a cut-off log; see Note [A log cut off at the end] in tracer/trace_log/__init__.py)
    unterminated: Optional[int] = None
    skipped_before_end: int = 0
    unterminated_head: str = ""  # the start of that unit's first line
    # md5 -> (payload bytes, its text, "\n\t" removed): Note [Reading a log as bytes]
    _kept: dict[str, tuple[bytes, str, int]] = field(default_factory=dict, repr=False)
    _kept_bytes: int = field(default=0, repr=False)

    def __iter__(self) -> Iterator[Record]:
        """Records in file order. See Note [Reading a log in blocks] and Note [Reading a log as bytes]."""
        first = self.fh.read(_CHUNK)
        read: Callable[[int], bytes] = self.fh.read
        if isinstance(first, str):  # a text stream: read as the UTF-8 bytes of its characters (Note [Reading a log as bytes])
            read = lambda n: self.fh.read(n).encode("utf-8", "surrogatepass")  # noqa: E731
            first = first.encode("utf-8", "surrogatepass")
        chunk: Optional[bytes] = first
        buf = b""
        pos, scan, final = 0, 0, False
        next_report = 8 << 20
        tried = -1  # the unit start last tried as a repeat (Note [A repeated payload is not searched])
        while True:
            if pos != tried and _KNOWN_ENDS:  # a unit starts at pos: where it ends may be known without a search
                tried = pos
                nl = buf.find(b"\n", pos)
                if 0 <= nl < len(buf) - 1:  # its first line and the byte after it are in buf
                    if buf[nl + 1] != 9:  # not a tab: a unit of one line (what the search would find)
                        rec = _fast_record(buf[pos:nl], self.lines + 1)
                        if rec is None or "str" in rec.meta and len(rec.meta) == 1:
                            rec = self._unit(buf, pos, nl)  # read as text, or an interned string: as any unit
                        else:  # what _unit gives for it
                            self.lines += 1
                        if rec is not None:
                            yield rec
                        pos = scan = nl + 1
                        continue
                    seen = self._repeat(buf, pos, nl)
                    if seen is not None:
                        yield seen[0]
                        pos = scan = seen[1] + 1
                        continue
            end = _UNIT_END.search(buf, scan)
            if not final and (end is None or end.start() == len(buf) - 1):  # the unit may go on: read more
                if chunk is None:
                    # up to the next 4 MB of the text when the unit is long: progress is still said at each 8 MB
                    chunk = read(_CHUNK if len(buf) - pos < _LONG_UNIT else _CHUNK_LONG - self.chars % _CHUNK_LONG)
                final = not chunk
                buf, scan, pos, tried = buf[pos:] + chunk, max(len(buf) - pos - 1, 0), 0, -1
                self.chars += len(chunk)
                chunk = None
                if self.progress is not None and self.chars >= next_report:
                    self.progress(self.chars)
                    next_report = (self.chars // (8 << 20) + 1) * (8 << 20)
                continue
            stop = len(buf) if end is None else end.start()
            if end is None and pos < stop:
                self.unterminated, self.skipped_before_end = self.lines + 1, len(self.skipped)
                # 200 characters: at most 4 bytes each, the first 200 decoded from 800 bytes are the text's
                self.unterminated_head = buf[pos:min(stop, pos + 800)].decode("utf-8", "replace")[:200]
            if pos < stop or end is not None:
                rec = self._unit(buf, pos, stop)
                if rec is not None:
                    yield rec
            if end is None:
                return
            pos = scan = stop + 1

    def _repeat(self, buf: bytes, pos: int, nl: int) -> Optional[tuple[Record, int]]:
        """The record of the unit at ``pos`` (its first line ends at ``nl``, a tab after it) and where the
        unit ends, if its payload is one kept (same md5, equal bytes) and ``buf`` holds it and the byte
        after its end; else None, and nothing is counted. See Note [A repeated payload is not searched]."""
        if buf[pos] == 9:  # a payload line without a record
            return None
        rec = _fast_record(buf[pos:nl], self.lines + 1)
        md5 = rec.meta.get("has_payload") if rec is not None else None
        kept = self._kept.get(md5) if type(md5) is str else None
        if kept is None:
            return None
        stop = nl + 2 + len(kept[0])
        if stop + 1 >= len(buf) or buf[stop] != 10 or buf[stop + 1] == 9 or not buf.startswith(kept[0], nl + 2):
            return None
        self._kept[md5] = self._kept.pop(md5)  # the most recently used last, as _payload does
        rec.payload = kept[1]
        self.lines += 2 + kept[2]
        return rec, stop

    def _unit(self, buf: bytes, pos: int, stop: int) -> Optional[Record]:
        """One line and the payload lines after it, ``buf[pos:stop]`` (Note [Reading a log in blocks]);
        counts its lines. Every newline inside a unit is followed by a tab (a unit ends at the first
        that is not), so the number of tabs removed from the payload says how many lines it had."""
        first = self.lines + 1
        nl = buf.find(b"\n", pos, stop)
        if buf.startswith(b"\t", pos):
            self.lines += buf.count(b"\n", pos, stop) + 1
            self._orphans(first, self.lines)
            return None
        line = buf[pos:stop] if nl < 0 else buf[pos:nl]
        rec = _fast_record(line, first)
        if rec is None:  # not a plain ASCII record line: read as text (Note [Metadata lines read as bytes])
            rec = self._record(line.decode("utf-8", "replace"), first, line if line.isascii() else None)
        if rec is not None and "str" in rec.meta and len(rec.meta) == 1:
            self._intern(rec, first)
            rec = None
        if nl < 0:
            self.lines += 1
        elif rec is None:
            self.lines += buf.count(b"\n", pos, stop) + 1
            self._orphans(first + 1, self.lines)
        else:  # buf[nl + 1] is the tab of the first payload line
            rec.payload, tabs = self._payload(buf, nl + 2, stop, rec.meta.get("has_payload"))
            self.lines += 2 + tabs  # the first line, the first payload line, one per "\n\t" removed
        return rec

    def _payload(self, buf: bytes, start: int, stop: int, md5: Any) -> tuple[str, int]:
        """The text of the payload ``buf[start:stop]`` and how many "\n\t" it held: the text decoded
        before when the same md5 came with equal bytes (Note [Reading a log as bytes])."""
        kept = self._kept.get(md5) if type(md5) is str else None
        if kept is not None and len(kept[0]) == stop - start and buf.startswith(kept[0], start):
            self._kept[md5] = self._kept.pop(md5)  # the most recently used last
            return kept[1], kept[2]
        raw = buf[start:stop]
        plain = raw.replace(b"\n\t", b"\n")
        text = plain.decode("utf-8", "replace")
        if type(md5) is str and len(raw) <= _KEPT_BYTES:
            old = self._kept.pop(md5, None)
            self._kept_bytes += len(raw) - (len(old[0]) if old is not None else 0)
            self._kept[md5] = (raw, text, len(raw) - len(plain))
            while self._kept_bytes > _KEPT_BYTES or len(self._kept) > _KEPT_PAYLOADS:
                self._kept_bytes -= len(self._kept.pop(next(iter(self._kept)))[0])
        return text, len(raw) - len(plain)

    def _orphans(self, first: int, last: int) -> None:
        for lineno in range(first, last + 1):
            self._skip(lineno, "payload line without a record before it")

    def _record(self, text: str, lineno: int, ascii_line: Optional[bytes] = None) -> Optional[Record]:
        """The record of a metadata line; ``ascii_line``: the same line as bytes, when it is ASCII
        (then msgspec reads its JSON, Note [Reading a log as bytes])."""
        if not text.strip():
            return None
        m = _PREFIX.match(text)
        if m is None:
            self._skip(lineno, "not a structured-trace line (no glog prefix)")
            return None
        try:
            meta = _json(text, m.end(), ascii_line)
        except ValueError as e:
            self._skip(lineno, f"metadata is not JSON ({e})")
            return None
        if not isinstance(meta, dict) or not meta:
            self._skip(lineno, "metadata is not a JSON object")
            return None
        return Record(meta, "" if "has_payload" in meta else None, lineno)

    def _intern(self, rec: Record, lineno: int) -> None:
        v = rec.meta["str"]
        if isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and isinstance(v[1], int):
            self.strings[v[1]] = v[0]
        else:
            self._skip(lineno, "'str' record is not [text, index]")

    def _skip(self, lineno: int, why: str) -> None:
        self.skipped.append(f"line {lineno}: {why}")


# Note [A repeated payload is not searched]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Most of a log's bytes are payloads it repeats (Note [Reading a log as bytes]), and finding where a
# unit ends is a search of all its bytes for a newline not followed by a tab. So before that search,
# the end of the unit's first line is found (a newline, at C speed); a unit whose first line is not
# followed by a tab is that line (most records have no payload); a unit whose first line is a record read from its bytes (Note [Metadata lines read as bytes]) with
# a payload line after it, whose md5 is one kept, is tried as a repeat: if the kept payload's bytes
# follow the "\n\t" and are followed by a newline and a byte that is not a tab, that newline is where
# the search would end the unit (every newline in a kept payload is followed by a tab, else its unit
# would have ended there), and the record is the one ``_unit`` makes of it. Anything else (the bytes
# differ, the buffer ends first) is searched and read as before. tests/test_trace_log_reader_fast.py
# checks both ways give the same records.
_KNOWN_ENDS = True  # False: every unit's end searched (tests compare the two)


# Note [Metadata lines read as bytes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Nearly every metadata line is ASCII with the glog prefix and JSON msgspec reads as an object. Such
# a line is read straight from its bytes: the prefix matched by the same pattern compiled for bytes
# (on ASCII, ``\d`` and ``[^\n]`` match the same characters in both), the JSON by msgspec, the event
# name taken as the record is made (``trace_structured`` writes it first). No text of the line is
# made. Any other line (not ASCII, no prefix, JSON msgspec refuses, not an object, empty) goes the
# text way, ``Reader._record``, which says what is wrong with it exactly as before;
# tests/test_trace_log_reader_fast.py checks both ways give the same records on damaged logs.
_PREFIX_BYTES = re.compile(_PREFIX.pattern.encode("ascii"))


def _fast_record(line: bytes, lineno: int) -> Optional[Record]:
    """The record of an ASCII metadata line msgspec reads as an object, or None (Note [Metadata lines read as bytes])."""
    m = _PREFIX_BYTES.match(line) if line.isascii() else None
    if m is None:
        return None
    try:
        meta = _META.decode(line[m.end():])
    except (msgspec.DecodeError, RecursionError):
        return None
    if type(meta) is not dict or not meta:
        return None
    event = next(iter(meta))
    return Record(meta, "" if "has_payload" in meta else None, lineno,
                  None if event in _CONTEXT_KEYS else event)


def _json(text: str, at: int, ascii_line: Optional[bytes]) -> Any:
    """``json.loads(text[at:])``, by msgspec when the line is ASCII and msgspec reads it (Note [Reading a log as bytes])."""
    if ascii_line is not None:
        try:
            return _META.decode(ascii_line[at:])
        except (msgspec.DecodeError, RecursionError):  # json.loads below reads it, or raises its own error
            pass
    return json.loads(text[at:])


def looks_like_trace(first: str) -> bool:
    """Whether a line has the glog prefix of Note [Structured trace line format]."""
    return _PREFIX.match(first) is not None
