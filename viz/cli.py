"""The ``dynascope`` command: ``report`` a TORCH_TRACE log (or a directory of per-rank logs), or a
``torch.export.save`` archive (``.pt2``), as one HTML file, or ``show`` it in the browser.

Invariant: the HTML is the same one-file report ``viz.export_html`` writes for a live capture (a
loaded log renders exactly like one; :mod:`viz.report_file`: an overview up front, each frame stored
compressed and shown when opened); progress goes to stderr, only the output path to stdout.
What could not be read is one ``warning:`` line per log on stderr; the exit status is 2 only when
nothing could be read (one ``error:`` line, no traceback), 1 when ``show`` found no browser.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time
from typing import Iterator, Optional

from tracer._text import plural
from tracer.model.capture import Capture
from tracer.rank_pool import read_ranks, worker_count
from tracer.trace_log import load_trace, log_files
from tracer.trace_log.deferred import read_only_graphs
from viz.report_file import write_report as _write_file
from viz.report_warm import start as start_warming

__all__ = ["main"]


# Note [The report command imports what it uses]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A small log's report is over in half a second, a fifth of it imports. So this module imports at
# the top only what ``dynascope report LOG`` (one log, one process) runs: ``show``'s browser and
# temporary file, and the worker pools of ``-j N`` (viz/report_frames.py, viz/report_ranks.py, and
# through them ``multiprocessing``), are imported where they are used. ``import viz`` and ``import
# tracer`` import none of their public names' modules until one is used (Note [Lazy public names] in
# viz/__init__.py, Note [tracer's names loaded when used] in tracer/__init__.py); tests/test_cli.py
# checks which modules a report leaves imported.


def _progress(msg: str) -> None:
    print(f"dynascope: {msg}", file=sys.stderr, flush=True)


def _load_one(path: str) -> Capture:
    size = os.path.getsize(path)
    _progress(f"loading {path} ({size / 2**20:.1f} MB)")
    t0 = time.perf_counter()
    cap = load_trace(path, progress=lambda n: _progress(f"  {n / 2**20:.0f} MB read"))
    _progress(f"  {plural(len(cap.frames), 'compile attempt')}, {plural(len(cap.graph_breaks), 'graph break')} "
              f"in {time.perf_counter() - t0:.2f}s")
    if cap.meta.get("not_read"):
        _progress(f"warning: {cap.meta['not_read']}")
    return cap


def _load_many(paths: list[str], workers: Optional[int]) -> Iterator[Capture]:
    """Every log that can be read, one at a time in file order, read in this process (``-j 1``; with
    more workers each log is rendered in its worker: viz/report_ranks.py); one that cannot is a warning while another one could be read. The caller
    has each capture alone (Note [One capture at a time] in viz/report_file.py)."""
    total = sum(os.path.getsize(p) for p in paths)
    n = worker_count(len(paths), workers)
    _progress(f"loading {plural(len(paths), 'log')} ({total / 2**20:.1f} MB) with {plural(n, 'worker')}")
    errors, read = [], 0
    for _, cap, error in read_ranks(dict(enumerate(paths)), "trace", workers, progress=lambda line: _progress(f"  {line}"),
                                   label="log"):
        if cap is None:
            errors.append(error)
            _progress(f"warning: {error}")
            continue
        if cap.meta.get("not_read"):
            _progress(f"warning: {cap.meta['not_read']}")
        read += 1
        yield cap
        del cap  # See Note [One capture at a time] in viz/report_file.py
    if not read:
        raise ValueError(f"none of the {len(paths)} logs could be read: " + "; ".join(errors))


def _load_pt2(path: str) -> list[Capture]:
    """An exported program's archive: ``tracer.load_export`` (it imports torch when called; viz does not)."""
    from tracer.exporting import load_export

    _progress(f"loading {path} ({os.path.getsize(path) / 2**20:.1f} MB, torch.export archive)")
    return [load_export(path)]


def write_report(path: str, out: str, workers: Optional[int] = 1) -> pathlib.Path:
    """Load the log(s) at ``path`` (or the ``.pt2`` archive) and write one self-contained HTML report to
    ``out``; the logs of a directory are read and rendered one at a time, in this process (``workers``
    1, lazily) or in ``workers`` processes (None: one per core), the same file either way."""
    paths = None if path.endswith(".pt2") and os.path.isfile(path) else log_files(path)
    with read_only_graphs():  # the report only reads: Note [Read-only graphs] in tracer/trace_log/deferred.py
        return _write(path, out, workers, paths)


def _write(path: str, out: str, workers: Optional[int], paths: Optional[list[str]]) -> pathlib.Path:
    t0 = time.perf_counter()
    if paths is None or len(paths) == 1:
        warming = start_warming(paths[0]) if paths is not None and workers == 1 else None  # viz/report_warm.py
        try:
            caps = _load_pt2(path) if paths is None else [_load_one(paths[0])]
            n = 1 if paths is None else worker_count(len(caps[0].frames), workers)
            _progress(f"rendering {out}" + (f" in {n} processes (this one and {plural(n - 1, 'worker')} forked from it)"
                                            if n > 1 else ""))
            t0 = time.perf_counter()
            if n > 1:  # the frames rendered in workers forked after the load: viz/report_frames.py
                from viz.report_frames import write_log_in_workers  # a pool's imports only where one starts

                title = caps[0].fn or "capture"
                stats = write_log_in_workers(out, caps.pop(), paths[0], n, title=title,
                                             progress=lambda line: _progress(f"  {line}"))
            else:
                stats = _write_file(out, caps, title=caps[0].fn or "capture", release=True, warm=warming)
        finally:  # a helper whose answer was not read is ended
            if warming is not None:
                warming.close()
    elif worker_count(len(paths), workers) == 1:  # one section per rank's log, in file order, each rendered as soon as it is read
        stats = _write_file(out, _load_many(paths, workers), title=os.path.basename(os.path.normpath(path)),
                            headings=lambda cap: cap.fn, release=True)
    else:  # each log read and rendered in a worker, which sends back its section: viz/report_ranks.py
        from viz.report_ranks import write_report_in_workers  # a pool's imports only where one starts

        total = sum(os.path.getsize(p) for p in paths)
        _progress(f"loading {plural(len(paths), 'log')} ({total / 2**20:.1f} MB) with "
                  f"{plural(worker_count(len(paths), workers), 'worker')}")
        stats = write_report_in_workers(out, paths, workers, title=os.path.basename(os.path.normpath(path)),
                                        progress=lambda line: _progress(f"  {line}"),
                                        warn=lambda line: _progress(f"warning: {line}"))
    result = stats.path
    _progress(f"wrote {result} ({result.stat().st_size / 2**20:.1f} MB; {plural(stats.frames, 'frame')} stored "
              f"compressed, {stats.html_bytes / 2**20:.1f} MB of HTML when all are open; "
              f"{plural(stats.layouts_reused, 'graph')} drawn from an equal graph's layout) "
              f"in {time.perf_counter() - t0:.2f}s")
    return result


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="dynascope",
                                description="Explore TORCH_TRACE logs and torch.export .pt2 archives as dynascope reports.")
    sub = p.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="write one self-contained HTML report of a log or a directory of logs")
    rep.add_argument("log", help="a TORCH_TRACE .log (or .log.gz) file, the TORCH_TRACE directory, or a .pt2 archive")
    rep.add_argument("-o", "--output", default="report.html", help="HTML file to write (default: report.html)")
    rep.add_argument("-j", "--workers", type=int, default=1,
                     help="processes that render (default 1: all here, lazily, one log in memory at a time; one "
                          "log's first frame laid out beside the load by a helper when a second core is there). A "
                          "directory: N worker processes each read and render their logs and send back the rendered "
                          "section, not the log. One log: it is read here, then frames 1.. are rendered in N "
                          "processes forked from this one. The same file either way; it helps only where the "
                          "cores are free, and costs memory in each worker")
    show = sub.add_parser("show", help="write the report to a temporary file and open it in the browser")
    show.add_argument("log", help="a TORCH_TRACE .log (or .log.gz) file, or the TORCH_TRACE directory")
    a = p.parse_args(argv)
    try:
        if a.command == "report":
            out = write_report(a.log, a.output, a.workers)
        else:  # the browser's imports only here: Note [The report command imports what it uses]
            import tempfile
            import webbrowser

            fd, tmp = tempfile.mkstemp(prefix="dynascope-", suffix=".html")
            os.close(fd)
            out = write_report(a.log, tmp)
            if not webbrowser.open(out.resolve().as_uri()):
                print(out)
                _progress(f"no browser could be opened (no display, or $BROWSER failed); the report is {out}: "
                          f"open that file in a browser, or write it where you want with "
                          f"'dynascope report {a.log} -o report.html'")
                return 1
    except (ValueError, OSError) as e:
        print(f"dynascope: error: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0


# Note [The command exits without tearing down]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Once the report is written (closed, then renamed into place) and its path printed, nothing is left
# for the process to do, but an ordinary exit frees every object it still holds one by one (the
# parse and guard caches, the loaded log's strings) and runs a last cyclic collection over them: 0.1 s
# of the 106 MB synthetic log's report (bench/RESULTS.md, 2026-11-27). ``run`` (the program, ``python
# -m viz.cli`` and the ``dynascope`` script) flushes stdout and stderr and ends with ``os._exit``: the
# same output and exit status, the kernel frees the memory at once. ``main`` itself returns, so a
# caller in Python (tests, a notebook) keeps its process. No atexit work is skipped that matters: the
# report's zlib thread and any worker pool are ended before ``main`` returns, and the kept templates'
# files are written whole when compiled (viz/template_cache.py).
def run() -> None:
    """The program: :func:`main`, then exit at once with its status (Note [The command exits without tearing down])."""
    try:
        code = main()
    except SystemExit as e:  # argparse's usage errors and --help: their status, at once too
        code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1  # as Python's own exit
        if code == 1 and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
