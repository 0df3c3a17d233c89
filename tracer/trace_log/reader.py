"""Lines of a TORCH_TRACE file -> records (metadata dict, payload text), with interned strings resolved.

Invariant: every line of the file is either part of a record that is returned or named in
``Reader.skipped`` (line number and why); nothing raises for a damaged line. Only the standard
library is used (json): a log loads on a machine without torch.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Iterator, Optional

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
_UNIT_END = re.compile("\n(?!\t)")
_CHUNK = 1 << 22  # characters read at a time


@dataclass
class Record:
    """One ``trace_structured`` call as the file holds it."""

    meta: dict[str, Any]  # the metadata object (event name first)
    payload: Optional[str]  # the payload lines joined by "\n" (tabs removed); None when there is none
    line: int  # 1-based line number of the metadata line

    @functools.cached_property
    def event(self) -> str:
        """The event name: the first key that is not a context key ("dynamo_start", "artifact", ...)."""
        for k in self.meta:
            if k not in _CONTEXT_KEYS:
                return k
        return ""


_CONTEXT_KEYS = frozenset(("rank", "compiled_autograd_id", "frame_id", "frame_compile_id", "attempt",
                           "has_payload", "stack", "severity", "timestamp", "pathname", "thread"))


@dataclass
class Reader:
    """Iterate the records of one open log; ``skipped`` lists what could not be read, by line."""

    fh: IO[str]
    progress: Optional[Callable[[int], None]] = None  # called with characters read, every ~8 MB
    skipped: list[str] = field(default_factory=list)
    strings: dict[int, str] = field(default_factory=dict)  # interned file names by index
    lines: int = 0
    chars: int = 0
    # the text ends without a newline: the first line of that last unit, and len(skipped) before it
    # (a cut-off log; see Note [A log cut off at the end] in tracer/trace_log/__init__.py)
    unterminated: Optional[int] = None
    skipped_before_end: int = 0
    unterminated_head: str = ""  # the start of that unit's first line

    def __iter__(self) -> Iterator[Record]:
        """Records in file order. See Note [Reading a log in blocks]."""
        buf, pos, scan, final = "", 0, 0, False
        next_report = 8 << 20
        while True:
            end = _UNIT_END.search(buf, scan)
            if not final and (end is None or end.start() == len(buf) - 1):  # the unit may go on: read more
                chunk = self.fh.read(_CHUNK)
                final = not chunk
                buf, scan, pos = buf[pos:] + chunk, max(len(buf) - pos - 1, 0), 0
                self.chars += len(chunk)
                if self.progress is not None and self.chars >= next_report:
                    self.progress(self.chars)
                    next_report = (self.chars // (8 << 20) + 1) * (8 << 20)
                continue
            stop = len(buf) if end is None else end.start()
            if end is None and pos < stop:
                self.unterminated, self.skipped_before_end = self.lines + 1, len(self.skipped)
                self.unterminated_head = buf[pos:min(stop, pos + 200)]
            if pos < stop or end is not None:
                rec = self._unit(buf, pos, stop)
                if rec is not None:
                    yield rec
            if end is None:
                return
            pos = scan = stop + 1

    def _unit(self, buf: str, pos: int, stop: int) -> Optional[Record]:
        """One line and the payload lines after it, ``buf[pos:stop]`` (Note [Reading a log in blocks]);
        counts its lines. Every newline inside a unit is followed by a tab (a unit ends at the first
        that is not), so the payload's length says how many lines it had: no second pass to count them."""
        first = self.lines + 1
        nl = buf.find("\n", pos, stop)
        if buf.startswith("\t", pos):
            self.lines += buf.count("\n", pos, stop) + 1
            self._orphans(first, self.lines)
            return None
        rec = self._record(buf[pos:stop] if nl < 0 else buf[pos:nl], first)
        if rec is not None and "str" in rec.meta and len(rec.meta) == 1:
            self._intern(rec, first)
            rec = None
        if nl < 0:
            self.lines += 1
        elif rec is None:
            self.lines += buf.count("\n", pos, stop) + 1
            self._orphans(first + 1, self.lines)
        else:  # buf[nl + 1] is the tab of the first payload line
            raw = stop - nl - 2
            rec.payload = buf[nl + 2:stop].replace("\n\t", "\n")
            self.lines += 2 + raw - len(rec.payload)  # the first line, the first payload line, one per "\n\t" removed
        return rec

    def _orphans(self, first: int, last: int) -> None:
        for lineno in range(first, last + 1):
            self._skip(lineno, "payload line without a record before it")

    def _record(self, text: str, lineno: int) -> Optional[Record]:
        if not text.strip():
            return None
        m = _PREFIX.match(text)
        if m is None:
            self._skip(lineno, "not a structured-trace line (no glog prefix)")
            return None
        try:
            meta = json.loads(text[m.end():])
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


def looks_like_trace(first: str) -> bool:
    """Whether a line has the glog prefix of Note [Structured trace line format]."""
    return _PREFIX.match(first) is not None
