"""TORCH_TRACE structured logs -> the same ``Capture`` a live ``tracer.capture`` makes, without torch.

- :mod:`tracer.trace_log.reader`      lines -> records (metadata + payload), interned strings
- :mod:`tracer.trace_log.events`      one parser per event kind, a table (Note [Events read from a log])
- :mod:`tracer.trace_log.graph_text`  ``print_readable`` text -> Graph nodes with edges, via ``ast``
- :mod:`tracer.trace_log.assemble`    the parsed state -> Capture (ids and statuses as live captures)

Invariant: nothing here imports torch; every line of the file is loaded or named in
``Capture.problems``, and what a log cannot contain is said there once (Note [What a log does not
contain] in assemble.py). A file that is not a trace raises one ``ValueError`` naming what was expected.
"""

from __future__ import annotations

import os
from typing import Callable, Optional

from tracer.model.capture import Capture
from tracer.trace_log.assemble import LOG_LIMITS, assemble
from tracer.trace_log.events import LogState, apply
from tracer.trace_log.reader import NotATrace, Reader, open_text

__all__ = ["LOG_LIMITS", "NotATrace", "load_trace"]

_SKIPPED_SHOWN = 200  # skipped lines listed one by one; more are summed up in one problem


def load_trace(path: str, progress: Optional[Callable[[int], None]] = None) -> Capture:
    """The Capture of one TORCH_TRACE structured log (``.log``, or gzip-compressed).

    ``progress(chars_read)`` is called every few MB. Raises ``NotATrace`` (a ValueError) when not
    one line of the file is a structured-trace record.
    """
    with open_text(path) as fh:
        reader = Reader(fh, progress=progress)
        st = LogState(reader.strings)
        records = 0
        for rec in reader:
            records += 1
            apply(rec, st)
    if records == 0 and not reader.strings:
        raise NotATrace(f"{path}: not a TORCH_TRACE structured log (expected lines like "
                        "'V1123 11:43:51.297000 22811 file.py:28] {\"dynamo_start\": ...}' as torch's "
                        "trace_structured writes them, found none in "
                        f"{reader.lines} lines)")
    cap = assemble(st, fn=os.path.basename(path))
    skipped = reader.skipped
    cap.problems.extend(skipped[:_SKIPPED_SHOWN])
    if len(skipped) > _SKIPPED_SHOWN:
        cap.problems.append(f"... and {len(skipped) - _SKIPPED_SHOWN} more lines skipped")
    cap.meta["log_lines"] = reader.lines
    return cap
