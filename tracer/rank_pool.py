"""Per-rank files read in parallel, in rank order, from a process pool: rank files -> one Capture at a
time (:func:`read_ranks`), or -> what each rank adds to a job, compared in its worker (:func:`compare_ranks`).

Invariant: only plain data crosses the process boundary. A worker gets file paths, rank numbers and
the name of a loader and sends back JSON text tracer.model's encoder writes (its rank's
``Capture.to_json``, or a one-rank ``Job.to_json``), or one error line; the parent decodes that
text with the typed decoder (``Capture.from_json``, ``Job.from_json``). No object of ours is ever
pickled in either direction, so what reaches the parent is exactly what a saved capture (or job)
would give, and a result equals the serial load's (tests compare the two jobs' JSON). A worker that raises, or dies, becomes that rank's error line, never a
hang and never the loss of the other ranks. See Note [Ranks read in worker processes].
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Callable, Optional

from tracer._text import plural
from tracer.model.capture import Capture

if TYPE_CHECKING:
    import concurrent.futures as cf
    import multiprocessing.context

__all__ = ["LOADERS", "RankResult", "compare_ranks", "load_rank", "pooled", "read_ranks", "worker_count"]

LOADERS = ("capture", "trace", "trace-read-only")  # a file saved by Capture.save, or a TORCH_TRACE log (editable, or read-only)

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
# What crosses: for ``read_ranks`` the worker reads its rank completely
# (``to_json`` reads every lazily parsed graph) and returns ``cap.to_json()``, a ``str``; the parent
# decodes it with ``Capture.from_json``, the same msgspec decoder that reads a saved capture, which
# checks every field's type. For ``compare_ranks`` (``load_job(workers=N)``) the worker compares its
# rank with the reference itself, both read lazily and let go frame by frame as the in-process load
# does (Note [Ranks compared one at a time] in tracer/job.py), and returns what the rank adds to the
# job, a one-rank ``Job``'s JSON (summary, findings, checked lines, collectives), decoded with
# ``Job.from_json``. So a worker can never hand the parent one of our objects, a pickled Graph for
# instance, and what is decoded equals what the worker built (the JSON round trips,
# tests/test_serialize.py and tests/test_job.py).
# Memory: results come back in rank order and at most ``workers`` are submitted ahead of the one the
# caller is consuming, so the parent holds at most that many JSON texts waiting, plus what the caller
# keeps: for ``read_ranks`` the capture it is working on (the caller drops it before asking for the
# next one if it wants only one rank in memory at a time); for ``compare_ranks`` summaries and findings
# only, each worker holding what the in-process load holds (two lazily read ranks and one frame pair).
# ``dynascope report <dir> -j N`` sends no capture either: its workers render their log and answer with
# the rendered section and payloads, through :func:`pooled` (Note [Logs rendered in worker processes]
# in viz/report_ranks.py).
# Failure: ``ValueError``/``OSError`` from the loader (a damaged or foreign file) is returned by the
# worker as its message, the text the serial load puts in the problem; any other exception reaches
# the parent through its future and is named with its type; a worker process that dies (killed, out
# of memory) breaks the pool, and each rank not yet read then gets that as its error line: every
# rank gets an answer, and ``Future.result`` returns once the pool knows the worker is gone.
# Imports: ``concurrent.futures.process`` and ``multiprocessing`` are imported by the functions that
# start a pool, never at import: one worker (``dynascope report LOG``, a serial ``load_job``) starts
# none, and they were a tenth of a small log's report (Note [tracer's names loaded when used] in
# tracer/__init__.py).


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
    if kind == "trace-read-only":  # Note [Read-only graphs] in tracer/trace_log/deferred.py
        from tracer.trace_log import load_trace

        return lambda path: load_trace(path, read_only=True)
    raise ValueError(f"unknown loader {kind!r} (must be one of {list(LOADERS)})")


def load_rank(kind: str, path: str) -> Capture:
    """The capture in ``path``, read by ``kind``'s loader (one of :data:`LOADERS`), in this process."""
    return _loader(kind)(path)


def _context() -> multiprocessing.context.BaseContext:
    """How workers start: See Note [Ranks read in worker processes]."""
    import multiprocessing

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
    for r, text, err in pooled([(r, _read_in_worker, (kind, files[r])) for r in ranks], n):
        yield said(r, *((Capture.from_json(text), None) if err is None else (None, err)))
        del text  # the JSON text is dropped before the next rank is asked for


def compare_ranks(files: dict[int, str], kind: str, task: Callable[[str, str, int, int, Optional[str]], tuple[bool, str]],
                  decode: Callable[[str], Any], workers: Optional[int] = None,
                  progress: Optional[Callable[[str], None]] = None) -> Iterator[tuple[int, Any, Optional[str]]]:
    """``(rank, part, None)`` or ``(rank, None, error line)`` for every rank of ``files``, in rank order:
    ``part`` is what ``task(kind, path, rank, reference rank, reference path or None)`` (a module-level
    function: tracer/job.py's, answering ``(True, a one-rank Job's JSON)`` or ``(False, error line)``)
    found for the rank in a worker process (its summary and findings with the reference, the lowest
    rank that can be read), decoded from its JSON text by ``decode`` (``Job.from_json``). A reference
    that cannot be read is that rank's error line, and the ranks after it are compared again with the
    next one. See Note [Ranks read in worker processes]."""
    todo = sorted(files)
    n = worker_count(len(todo), workers)
    t0 = time.perf_counter()
    while todo:
        ref, redo = todo[0], None
        calls = [(r, task, (kind, files[r], r, ref, None if r == ref else files[ref])) for r in todo]
        answers = pooled(calls, n)
        try:
            for r, text, err in answers:
                part = decode(text) if err is None else None
                if progress is not None:
                    what = plural(len(part.ranks[r].frames), "compile attempt") if part is not None else f"not read: {err}"
                    progress(f"rank {r} ({os.path.basename(files[r])}): {what} [{time.perf_counter() - t0:.1f}s, "
                             f"{n} worker{'s' if n != 1 else ''}]")
                yield r, part, err
                if r == ref and part is None:  # no reference: the others were compared with an unreadable file
                    redo = todo[1:]
                    break
        finally:
            answers.close()  # the pool's outstanding calls are cancelled
        todo = redo or []


def pooled(calls: list[tuple[int, Callable[..., tuple[bool, str]], tuple]], n: int,
           meanwhile: Optional[Callable[[], None]] = None) -> Iterator[tuple[int, Optional[str], Optional[str]]]:
    """``(key, text, None)`` or ``(key, None, error line)`` for each ``(key, fn, args)`` of ``calls``, in
    order, each ``fn(*args)`` (a module-level function answering ``(ok, text)``, strings only) run in a
    pool of ``n`` worker processes, at most ``n`` submitted ahead of the one being answered. Closing the
    generator cancels what is not running yet. ``meanwhile()``: run here once the first calls are sent
    (the workers started), before the first answer is waited for (viz/report_frames.py renders its own
    frames then)."""
    import concurrent.futures as cf
    from concurrent.futures.process import BrokenProcessPool

    with cf.ProcessPoolExecutor(max_workers=n, mp_context=_context()) as pool:
        pending: dict[int, cf.Future] = {}
        todo = iter(calls)

        def submit_next() -> None:
            call = next(todo, None)
            if call is None:
                return
            key, fn, args = call
            try:
                pending[key] = pool.submit(fn, *args)
            except BrokenProcessPool as e:  # the pool died before this call was sent: its error
                pending[key] = _failed(e)

        for _ in range(n):
            submit_next()
        try:
            if meanwhile is not None:
                meanwhile()
            for key, _, _ in calls:
                submit_next()
                yield (key, *_answer(pending.pop(key)))  # the future and its text are dropped before the yield
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _failed(e: BaseException) -> cf.Future:
    import concurrent.futures as cf

    fut: cf.Future = cf.Future()
    fut.set_exception(e)
    return fut


def _answer(fut: cf.Future) -> tuple[Optional[str], Optional[str]]:
    """A worker's text, or the call's error line."""
    from concurrent.futures.process import BrokenProcessPool

    error: Optional[BaseException] = None
    try:
        ok, text = fut.result()
    except BrokenProcessPool as e:
        return None, f"its worker process died before it was read ({e or 'killed'})"
    except Exception as e:  # except: records a problem (this rank's error line; the other ranks still load)
        error = e
    if error is not None:
        return None, f"its worker failed: {type(error).__name__}: {error}"
    return (text, None) if ok else (None, text)


def _result(fut: cf.Future) -> tuple[Optional[Capture], Optional[str]]:
    """A worker's answer decoded (Capture.from_json), or the rank's error line."""
    text, err = _answer(fut)
    return (Capture.from_json(text), None) if err is None else (None, err)
