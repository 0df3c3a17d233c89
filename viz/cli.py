"""The ``dynascope`` command: ``report`` a TORCH_TRACE log (or a directory of per-rank logs) as one HTML
file, or ``show`` it in the browser.

Invariant: the HTML is the same static report ``viz.export_html`` writes for a live capture (a
loaded log renders exactly like one); progress goes to stderr, only the output path to stdout.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time
import webbrowser
from typing import Optional

from markupsafe import Markup, escape

from tracer._text import plural
from tracer.model.capture import Capture
from tracer.trace_log import load_trace
from viz.html import capture_html, export_html
from viz.markup import fragment, render

__all__ = ["main"]


def _progress(msg: str) -> None:
    print(f"dynascope: {msg}", file=sys.stderr, flush=True)


def _logs(path: str) -> list[str]:
    """The log files of ``path``: itself, or every ``*.log``/``*.log.gz`` in it (one per rank), sorted."""
    if os.path.isdir(path):
        found = sorted(str(p) for p in pathlib.Path(path).iterdir()
                       if p.is_file() and (p.name.endswith(".log") or p.name.endswith(".log.gz")))
        if not found:
            raise ValueError(f"{path}: no TORCH_TRACE logs in this directory (expected *.log or *.log.gz files)")
        return found
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such file or directory")
    return [path]


def _load(paths: list[str]) -> list[Capture]:
    caps = []
    for p in paths:
        size = os.path.getsize(p)
        _progress(f"loading {p} ({size / 2**20:.1f} MB)")
        t0 = time.perf_counter()
        cap = load_trace(p, progress=lambda n: _progress(f"  {n / 2**20:.0f} MB read"))
        _progress(f"  {plural(len(cap.frames), 'compile attempt')}, {plural(len(cap.graph_breaks), 'graph break')} "
                  f"in {time.perf_counter() - t0:.2f}s")
        caps.append(cap)
    return caps


def write_report(path: str, out: str) -> pathlib.Path:
    """Load the log(s) at ``path`` and write one self-contained HTML report to ``out``."""
    caps = _load(_logs(path))
    _progress(f"rendering {out}")
    t0 = time.perf_counter()
    if len(caps) == 1:
        result = export_html(caps[0], out)
    else:  # one section per rank's log, in file order
        body = Markup("").join(Markup("<section><h1>{}</h1>{}</section>").format(escape(c.fn), fragment(capture_html(c, code=True)))
                               for c in caps)
        result = pathlib.Path(out)
        result.write_text(render("page.html.j2", title=os.path.basename(os.path.normpath(path)), body=body) + "\n",
                          encoding="utf-8")
    _progress(f"wrote {result} ({result.stat().st_size / 2**20:.1f} MB) in {time.perf_counter() - t0:.2f}s")
    return result


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="dynascope", description="Explore TORCH_TRACE logs as dynascope reports.")
    sub = p.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="write one self-contained HTML report of a log or a directory of logs")
    rep.add_argument("log", help="a TORCH_TRACE .log (or .log.gz) file, or the TORCH_TRACE directory")
    rep.add_argument("-o", "--output", default="report.html", help="HTML file to write (default: report.html)")
    show = sub.add_parser("show", help="write the report to a temporary file and open it in the browser")
    show.add_argument("log", help="a TORCH_TRACE .log (or .log.gz) file, or the TORCH_TRACE directory")
    a = p.parse_args(argv)
    try:
        if a.command == "report":
            out = write_report(a.log, a.output)
        else:
            fd, tmp = tempfile.mkstemp(prefix="dynascope-", suffix=".html")
            os.close(fd)
            out = write_report(a.log, tmp)
            webbrowser.open(out.resolve().as_uri())
    except (ValueError, OSError) as e:
        print(f"dynascope: error: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
