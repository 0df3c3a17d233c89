"""A directory's logs rendered in worker processes for the one-file report (``dynascope report <dir> -j N``):
each worker reads one log, renders its section and its payloads itself, and sends back that rendered
text, never the log's capture (:func:`write_report_in_workers`).

Invariant: the page is the one the in-process report writes (:func:`viz.report_file.write_report`
with one section per log), byte for byte, and the parent process holds what that page holds (the
sections, the compressed payloads) plus at most one answer per worker waiting: never a capture. Only
plain data crosses the process boundary: a worker gets a file path and its payload keys' prefix and
answers with JSON text (its section's strings and counts, its payload and part blocks, each part's
key), or one error line (tracer/rank_pool.py ``pooled``). See Note [Logs rendered in worker processes].
"""

from __future__ import annotations

import gc
import json
import os
import pathlib
import time
from typing import Callable, Iterator, Optional

from tracer._text import plural
from tracer.rank_pool import pooled, worker_count
from viz.markup import fragment
from viz.report_blocks import ReportStats, payload_block
from viz.report_file import _BLOCK, _PART, Payloads, _section, _write_page
from viz.report_graphs import DrawingCache

__all__ = ["write_report_in_workers"]

# Note [Logs rendered in worker processes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Before, a worker read its log completely and sent the whole capture back as JSON: the parent decoded
# a fully read rank (and held up to N JSON texts of whole ranks waiting), 5.2 times one rank's memory
# on a 1.06 GB job with two workers (bench/RESULTS.md, "Jobs of many ranks"). Now a worker does for its
# log what the in-process report does for each capture (viz/report_file.py ``_section`` with
# ``release``: frame by frame, each frame let go once its payload is built, Note [Letting a frame
# go]) and answers with the result: the section (strings and counts, the overview's markup) and the
# blocks its own ``Payloads`` wrote, with each part's key (its pieces' SHA-256 digests, Note [Equal
# parts of payloads stored once] in viz/report_file.py). The parent puts the blocks in page order and
# numbers the parts itself: a part whose key an earlier log already wrote is dropped and the payloads
# naming it name the page's number, so every part is stored once on the page, as the in-process report
# stores it, and the page is the same text. Payload keys are prefixed by the log's place among the logs
# read (``0-``, ``1-``, ...: write_report's ``ci``); a worker is told the place its log will have if
# every log before it is read, and when one is not, the logs after it are rendered again with their
# place (a new pool; an unreadable log is rare and named in a warning). What a worker holds is what the
# in-process report holds for one log (the log read lazily, one frame parsed, the payloads); drawing
# and node-facts caches are per worker, so an equal graph in two workers' logs is laid out in each
# (the text is the same: a drawing is a function of the graph).


def _render_in_worker(path: str, prefix: str) -> tuple[bool, str]:
    """In a worker: (True, the log's rendered section and blocks as JSON text) or (False, the loader's
    error line). Strings only. See Note [Logs rendered in worker processes]."""
    from tracer.trace_log import load_trace
    from tracer.trace_log.deferred import read_only_graphs

    with read_only_graphs():  # the report only reads: Note [Read-only graphs] in tracer/trace_log/deferred.py
        try:
            cap = load_trace(path)
        except (OSError, ValueError) as e:  # the log's defined error: the parent warns and goes on
            return False, str(e)
        out, cache = Payloads(), DrawingCache(stable=True)
        fn, frames, not_read = cap.fn, len(cap.frames), str(cap.meta.get("not_read") or "")
        section = _section(cap, prefix, cap.fn, out, cache, {}, True)
        del cap
        gc.collect()  # See Note [One capture at a time] in viz/report_file.py
    keys = [None] * len(out.parts.known)
    for key, n in out.parts.known.items():
        keys[n] = [d.hex() for d in key]
    section["overview"] = str(section["overview"])
    return True, json.dumps({"fn": fn, "frames": frames, "not_read": not_read, "section": section,
                             "blocks": out.blocks, "keys": keys, "html_bytes": out.stats.html_bytes,
                             "counted": out.stats.frames, "reused": cache.hits})


def _merge(page: Payloads, blocks: list[str], keys: list[list[str]]) -> None:
    """Append a worker's ``blocks`` to ``page`` in their order, each part stored once on the page:
    numbered by the page, dropped when the page already holds its key (Note [Logs rendered in worker
    processes])."""
    mine: dict[str, int] = {}  # the worker's part number -> the page's, for the parts the page lacks: None
    new: set[str] = set()
    for m in filter(None, map(_PART.fullmatch, blocks)):  # numbered first: a payload comes before the parts it names first
        key = tuple(bytes.fromhex(d) for d in keys[int(m.group(1))])
        n = page.parts.known.get(key)
        if n is None:
            n = page.parts.known[key] = len(page.parts.known)
            new.add(m.group(1))
        mine[m.group(1)] = n
    for b in blocks:
        m = _PART.fullmatch(b)
        if m is not None:
            if m.group(1) in new:
                page.blocks.append(b.replace(f'data-part="{m.group(1)}"', f'data-part="{mine[m.group(1)]}"', 1))
                page.stats.payload_bytes += len(m.group(2))
            continue
        m = _BLOCK.fullmatch(b)
        if m is None:
            raise ValueError(f"a worker sent a block that is not a payload: {b[:80]!r}")
        page.blocks.append(payload_block(m.group(1), m.group(3), [mine[p] for p in (m.group(2) or "").split()]))
        page.stats.payload_bytes += len(m.group(3))

def _rendered(paths: list[str], n: int, progress: Callable[[str], None]) -> Iterator[tuple[int, Optional[dict], Optional[str]]]:
    """``(file index, the worker's answer, None)`` or ``(file index, None, error line)`` for every log in
    ``paths``, in file order, each rendered in one of ``n`` worker processes with its keys' prefix; after
    a log that could not be read, the logs after it are rendered again (Note [Logs rendered in worker
    processes])."""
    todo, read, t0 = list(range(len(paths))), 0, time.perf_counter()
    while todo:
        calls = [(i, _render_in_worker, (paths[i], f"{read + k}-")) for k, i in enumerate(todo)]
        answers, redo = pooled(calls, n), []
        try:
            for i, text, err in answers:
                got = json.loads(text) if err is None else None
                what = plural(got["frames"], "compile attempt") if got is not None else f"not read: {err}"
                progress(f"log {i} ({os.path.basename(paths[i])}): {what} [{time.perf_counter() - t0:.1f}s, "
                         f"{n} worker{'s' if n != 1 else ''}]")
                del text
                yield i, got, err
                if got is None:
                    redo = todo[todo.index(i) + 1:]
                    break
                read += 1
                del got
        finally:
            answers.close()  # the pool's outstanding calls are cancelled
        todo = redo


def write_report_in_workers(out: str, paths: list[str], workers: Optional[int], *, title: str,
                            progress: Callable[[str], None], warn: Callable[[str], None]) -> ReportStats:
    """Write the report of the logs ``paths`` (one section per log, headed by its capture's ``fn``) at
    ``out``, each log read and rendered in one of ``workers`` processes (:func:`tracer.rank_pool.worker_count`);
    the same page as :func:`viz.report_file.write_report` writes in process. A log that cannot be
    read is a ``warn`` line; none read is a ``ValueError``. See Note [Logs rendered in worker processes]."""
    n = worker_count(len(paths), workers)
    stats = ReportStats(pathlib.Path(out))
    page = Payloads(stats)
    sections: list[dict[str, object]] = []
    errors, reused = [], 0
    for _, got, err in _rendered(paths, n, progress):
        if got is None:
            errors.append(err)
            warn(err)
            continue
        if got["not_read"]:
            warn(got["not_read"])
        section = got["section"]
        section["overview"] = fragment(section["overview"])
        sections.append(section)
        stats.headings.append(got["fn"])
        _merge(page, got["blocks"], got["keys"])
        stats.frames += got["counted"]
        stats.html_bytes += got["html_bytes"]
        reused += got["reused"]
        del got
    if not sections:
        raise ValueError(f"none of the {len(paths)} logs could be read: " + "; ".join(map(str, errors)))
    _write_page(stats, title, sections, page.blocks)
    stats.layouts_reused = reused
    return stats
