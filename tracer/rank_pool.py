"""Per-rank files read in parallel: rank files -> one Capture at a time, in rank order, from a process pool.

Invariant: only plain data crosses the process boundary. A worker gets a file path and the name of
a loader (strings) and sends back its rank's Capture as the JSON text tracer.model's encoder writes
(``Capture.to_json``), or one error line; the parent decodes that text with the typed decoder
(``Capture.from_json``). No object of ours is ever pickled in either direction, so what reaches the
parent is exactly what a saved capture would give, and a result equals the serial load's (tests
compare the two jobs' JSON). A worker that raises, or dies, becomes that rank's error line, never a
hang and never the loss of the other ranks. See Note [Ranks read in worker processes].
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Optional

from tracer._text import plural
from tracer.model.capture import Capture

__all__ = ["LOADERS", "RankResult", "load_rank", "read_ranks", "worker_count"]

LOADERS = ("capture", "trace")  # a file saved by Capture.save, or a TORCH_TRACE log

RankResult = tuple[int, Optional[Capture], Optional[str]]  # (rank, its capture or None, the error line or None)

# Note [Ranks read in worker processes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Reading a rank's log is pure Python work (reading lines, parsing each logged graph), so threads
# would share one core; the standard library's ``ProcessPoolExecutor`` gives each rank a core. The
# number of workers is ``min(ranks, os.cpu_count())`` unless the caller says otherwise; one worker
# (or one rank) reads in this process, as the serial load always did, with no pool at all. How
# workers start (:func:`_context`): a fork of the caller when it runs one Python thread (a script,
# the CLI), so a script without an ``if __name__ == "__main__":`` guard still works; from a
# ``forkserver`` when it runs several (a notebook kernel does), because a fork copies whatever lock
# another thread held at that moment. A forkserver worker re-imports the main module of a script
# that has one, so such a script needs the guard; a kernel's main module has no file to re-import.
# What crosses: the worker reads its rank completely (``to_json`` reads every lazily parsed graph)
# and returns ``cap.to_json()``, a ``str``; the parent decodes it with ``Capture.from_json``, the
# same msgspec decoder that reads a saved capture, which checks every field's type. So a worker can
# never hand the parent one of our objects, a pickled Graph for instance, and the decoded capture is
# equal to the one the worker built (Capture's JSON round trip, tests/test_serialize.py).
# Memory: results come back in rank order and at most ``workers`` are submitted ahead of the one the
# caller is consuming, so the parent holds at most that many JSON texts waiting, plus the capture the
# caller is working on; the caller drops a capture before asking for the next one if it wants only
# one rank in memory at a time (``dynascope report`` of a directory does: viz/cli.py).
# Failure: ``ValueError``/``OSError`` from the loader (a damaged or foreign file) is returned by the
# worker as its message, the text the serial load puts in the problem; any other exception reaches
# the parent through its future and is named with its type; a worker process that dies (killed, out
# of memory) breaks the pool, and each rank not yet read then gets that as its error line: every
# rank gets an answer, and ``Future.result`` returns once the pool knows the worker is gone.


def worker_count(ranks: int, workers: Optional[int] = None) -> int:
    """How many processes read ``ranks`` files: ``workers`` if given (at least 1), else one per core,
    never more than the ranks.

    >>> worker_count(8, 1), worker_count(2, 16), worker_count(0)
    (1, 2, 1)
    """
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive int or None (one per core), got {workers!r}")
    cores = os.cpu_count() or 1
    return max(1, min(ranks, workers if workers is not None else cores))


def _loader(kind: str) -> Callable[[str], Capture]:
    if kind == "capture":
        return Capture.load
    if kind == "trace":
        from tracer.trace_log import load_trace  # the one place that reads a log

        return load_trace
    raise ValueError(f"unknown loader {kind!r} (must be one of {list(LOADERS)})")


def load_rank(kind: str, path: str) -> Capture:
    """The capture in ``path``, read by ``kind``'s loader (one of :data:`LOADERS`), in this process."""
    return _loader(kind)(path)


def _context() -> multiprocessing.context.BaseContext:
    """How workers start: See Note [Ranks read in worker processes]."""
    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver")


def _read_in_worker(kind: str, path: str) -> tuple[bool, str]:
    """In a worker: (True, the capture's JSON text) or (False, the loader's error line). Strings only."""
    try:
        return True, _loader(kind)(path).to_json()
    except (OSError, ValueError) as e:  # the rank's defined error; anything else reaches the parent's future
        return False, str(e)


def read_ranks(files: dict[int, str], kind: str, workers: Optional[int] = None,
               progress: Optional[Callable[[str], None]] = None, label: str = "rank") -> Iterator[RankResult]:
    """``(rank, capture, None)`` or ``(rank, None, error line)`` for every rank of ``files`` (rank ->
    path), in rank order, each read by ``kind``'s loader (one of :data:`LOADERS`) in
    :func:`worker_count` processes. ``progress(line)`` after each rank. See Note [Ranks read in
    worker processes]. ``label`` names a key in the progress lines ("log" where keys are file order)."""
    load = _loader(kind)
    ranks = sorted(files)
    n = worker_count(len(ranks), workers)
    t0 = time.perf_counter()

    def said(rank: int, cap: Optional[Capture], err: Optional[str]) -> RankResult:
        if progress is not None:
            what = plural(len(cap.frames), "compile attempt") if cap is not None else f"not read: {err}"
            progress(f"{label} {rank} ({os.path.basename(files[rank])}): {what} [{time.perf_counter() - t0:.1f}s, "
                     f"{n} worker{'s' if n != 1 else ''}]")
        return rank, cap, err

    if n == 1:
        for r in ranks:
            try:
                cap = load(files[r])
            except (OSError, ValueError) as e:  # the rank's defined error: the caller records it
                yield said(r, None, str(e))
                continue
            yield said(r, cap, None)
            del cap  # the caller may want one rank in memory at a time
        return
    with cf.ProcessPoolExecutor(max_workers=n, mp_context=_context()) as pool:
        pending: dict[int, cf.Future] = {}
        todo = iter(ranks)

        def submit_next() -> None:
            r = next(todo, None)
            if r is None:
                return
            try:
                pending[r] = pool.submit(_read_in_worker, kind, files[r])
            except BrokenProcessPool as e:  # the pool died before this rank was sent: the rank's error
                pending[r] = _failed(e)

        for _ in range(n):
            submit_next()
        for r in ranks:
            submit_next()
            yield said(r, *_result(pending.pop(r)))  # the future and its JSON text are dropped before the yield


def _failed(e: BaseException) -> cf.Future:
    fut: cf.Future = cf.Future()
    fut.set_exception(e)
    return fut


def _result(fut: cf.Future) -> tuple[Optional[Capture], Optional[str]]:
    """A worker's answer decoded (Capture.from_json), or the rank's error line."""
    error: Optional[BaseException] = None
    try:
        ok, text = fut.result()
    except BrokenProcessPool as e:
        return None, f"its worker process died before it was read ({e or 'killed'})"
    except Exception as e:  # except: records a problem (this rank's error line; the other ranks still load)
        error = e
    if error is not None:
        return None, f"its worker failed: {type(error).__name__}: {error}"
    if not ok:
        return None, text
    return Capture.from_json(text), None
