"""The one-file report's caches warmed by a helper process: while ``dynascope report LOG`` reads the
whole log, a process forked from it reads only the log's head and renders its first frame with a graph,
then hands this process the drawings, node facts and guard texts it made (:func:`start`).

Invariant: the page is byte for byte the one written without the helper. Every entry handed over is
one of the content-keyed caches' own (Note [Drawings of equal graphs] in viz/report_graphs.py, the node
facts' key in viz/report_info.py, Note [Equal guards rendered once] in viz/panels.py): a value is a pure
function of its key, so a frame whose graphs differ from the head's simply finds no entry and is made
here. Only plain data crosses (``marshal`` of dicts, lists, tuples, strings, numbers and bytes, read
back from the helper's pipe, never a file); a helper that fails, dies or answers nothing only means
nothing is warmed. See Note [A helper renders the first frame beside the load].
"""

from __future__ import annotations

import marshal
import os
import select
import signal
import sys
import time
from typing import Any, Optional

from viz import panels
from viz.report_graphs import DrawingCache

__all__ = ["Warming", "start"]

# Note [A helper renders the first frame beside the load]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A report of one log is three serial steps in one process: the lazy load (a scan of every line), then
# the frames, the first of each distinct graph costing most (its graphs parsed, laid out, every node's
# facts: 0.5 s of the 106 MB synthetic log's 1.4 s, where the 63 repeats of it cost 0.2 s in all;
# bench/RESULTS.md, 2026-11-27). Laying out the first frame does not need the whole log, only the
# records of that frame, which a log writes first. So, on a machine with a second core, the command forks
# one helper before the load: it reads the log's head (``tracer.trace_log.load_head``: up to the attempt
# after the first one with a Dynamo graph), renders that frame into empty caches as the report would,
# and writes what the caches then hold down a pipe, while this process scans the whole log and parses
# the first frame's graphs itself (the model objects stay here; only rendered text and drawings come
# back). Before rendering the first frame with a graph, this process reads the pipe (waiting for the
# helper if it is not done) and puts the entries into its own caches; the frame's drawings and facts
# are then cache hits, as for any repeated frame.
# Exact whatever the head holds: the caches are keyed by content (the nodes' JSON digest, the frame's
# fields the facts depend on, the guards' JSON), so an entry can only serve an equal graph, frame or
# guard list; the helper's frame may lack later records (then it keys differently and nothing hits).
# Bounded: the helper is given at most as long again as this process has run since the fork, then
# killed (nothing warmed). Not with ``-j N`` (its workers start from this process's caches anyway), and
# only while a core is free (``_core_free``): the helper costs 0.2-0.3 s of CPU more in all (its own load
# of the head and parse), which on a busy machine comes out of the report's share: measured 1-13 %
# slower than without it at load 3-5 on 2 cores (median 3-4 %), and 0.77-0.86x tlparse's wall instead of
# 1.3-1.5x with a core free (bench/RESULTS.md, 2026-11-27), so it is forked only then. Nor for a log
# under ``_MIN_BYTES``: its scan is over before the helper's own load and parse are (the 1.66 MB
# training log: 0.54 s with the helper, 0.50 s without, 7 rounds, bench/RESULTS.md 2026-11-27).
_MIN_CORES = 2
_MIN_BYTES = 16 * 2**20


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _core_free(cores: int) -> bool:
    """Whether a core is free for the helper now: nothing else runnable beside this process on all but
    one core (``/proc/loadavg``'s running count, this process included), and the last minute's load
    average below the cores (a command run in a loop, as the bench does, adds 1 by itself); where there
    is no /proc, the load average alone. Measured (bench/RESULTS.md, 2026-11-27): the helper pays off
    when it gets a core (0.77-0.86x tlparse's wall), costs 1-13 % at load 3-5; allowing one other
    runnable process gave mixed rounds at load ~2 (run G), so nothing else may be runnable."""
    try:
        with open("/proc/loadavg", encoding="ascii") as fh:
            fields = fh.read().split()
        load, running = float(fields[0]), int(fields[3].split("/")[0])
    except (OSError, ValueError, IndexError):  # no /proc: the load average alone
        try:
            load, running = os.getloadavg()[0], 1
        except OSError:  # no load average either: no helper
            return False
    return running - 1 <= cores - _MIN_CORES and load < cores


class Warming:
    """A helper forked by :func:`start`; calling it (``warming(cache, facts)``) waits for its answer and
    puts the entries into ``cache``, ``facts`` and the guard texts' cache. Only the first call reads."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd, self.started = pid, fd, time.perf_counter()
        self.entries = 0  # entries put into the caches (0: nothing warmed)
        self.error = ""  # why nothing was warmed, when the helper failed or ran out of time

    def __call__(self, cache: DrawingCache, facts: dict[bytes, str]) -> None:
        if self.fd < 0:
            return
        data = self._answer()
        if data.startswith(b"!"):  # the helper's error (_helper)
            self.error = data[1:].decode("utf-8", "replace")
            return
        try:
            items, blocks, infos, guards = marshal.loads(data) if data else ((), (), (), ())
        except (EOFError, ValueError, TypeError) as e:  # a damaged answer warms nothing (made here instead)
            self.error = f"the helper's answer is not readable ({e})"
            return
        for key, value in items:
            cache.put(key, value)
        for key, value in blocks:
            cache.blocks[key] = value
        facts.update(infos)
        panels._GUARDS_KEPT.update(guards)  # bounded by guards_html itself on its next miss
        self.entries = len(items) + len(blocks) + len(infos) + len(guards)

    def close(self) -> None:
        """End the helper if its answer was never read (no frame with a graph, or the report failed)."""
        if self.fd >= 0:
            os.kill(self.pid, signal.SIGKILL)
            os.close(self.fd)
            self.fd = -1
            os.waitpid(self.pid, 0)

    def _answer(self) -> bytes:
        """The helper's bytes (empty if it failed or ran out of time); the helper reaped either way."""
        fd, self.fd = self.fd, -1
        chunks, done = [], False
        deadline = time.perf_counter() + max(1.0, time.perf_counter() - self.started)
        try:
            while not done:
                left = deadline - time.perf_counter()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    os.kill(self.pid, signal.SIGKILL)
                    self.error, chunks = "the helper did not answer in time", []
                    break
                chunk = os.read(fd, 1 << 20)
                done = not chunk
                chunks.append(chunk)
        finally:
            os.close(fd)
            _, status = os.waitpid(self.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1) and not self.error:  # 1: it wrote its error
            self.error = f"the helper ended with status {code}"
        return b"".join(chunks)


def start(path: str) -> Optional[Warming]:
    """Fork the helper of Note [A helper renders the first frame beside the load] for the log at
    ``path``, or None (one core, no core free now, a log under 16 MB, or no ``fork``). Call before loading,
    while this process runs one thread. ``$DYNASCOPE_REPORT_HELPER``: "auto" (the default), "always"
    (whatever the load and size, for measuring) or "never"."""
    mode = os.environ.get("DYNASCOPE_REPORT_HELPER", "auto")
    if mode not in ("auto", "always", "never"):
        raise ValueError(f"DYNASCOPE_REPORT_HELPER={mode!r} (must be one of 'auto', 'always', 'never')")
    cores = _cores()
    if mode == "never" or not hasattr(os, "fork") or (mode == "auto" and not (
            cores >= _MIN_CORES and _size(path) >= _MIN_BYTES and _core_free(cores))):
        return None
    return _fork(path)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:  # except: unreadable: the load says why, no helper
        return 0


def _fork(path: str) -> Warming:
    """The helper forked, whatever the machine's load."""
    sys.stdout.flush()
    sys.stderr.flush()  # a forked child holds copies of unwritten buffers
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the helper: never returns
        os.close(r)
        os._exit(_helper(path, w))
    os.close(w)
    return Warming(pid, r)


def _helper(path: str, fd: int) -> int:
    """The helper's work and exit status: its answer, or "!" and its error (status 1), written to ``fd``."""
    with os.fdopen(fd, "wb") as out:
        error: Optional[BaseException] = None
        try:
            data, code = _warm(path), 0
        except BaseException as e:  # except: records a problem (its error is the answer: Warming.error)
            error = e
        if error is not None:
            data, code = b"!" + f"{type(error).__name__}: {error}".encode("utf-8", "replace"), 1
        try:
            out.write(data)
        except OSError:  # this process gone meanwhile (its report failed): nobody to answer
            code = 1
    return code


def _warm(path: str) -> bytes:
    """In the helper: the head's first frame with a graph rendered into empty caches; their entries."""
    from tracer.trace_log import load_head
    from tracer.trace_log.deferred import read_only_graphs
    from viz.report_graphs import frame_graphs, report_data
    from viz.report_info import report_info

    with read_only_graphs():
        cap = load_head(path)
        cache, facts = DrawingCache(stable=True), {}
        panels._GUARDS_KEPT.clear()
        for f in cap.frames:
            if f.has_graph and frame_graphs(f):  # the calls viz/report_file.py's _frame_pieces makes, the rest left out
                report_data([f], cache)
                panels.guards_html(f.guards, report=True)
                report_info([f], facts, None, cache.nodes_digest)
                break
    return marshal.dumps((_items(cache), list(cache.blocks.items()), list(facts.items()),
                          list(panels._GUARDS_KEPT.items())))


def _items(cache: DrawingCache) -> list[tuple[bytes, Any]]:
    return list(cache._items.items())
