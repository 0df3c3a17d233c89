"""The Job view as one static page (:func:`job_html`, :func:`export_job_html`): the grid and the
findings up front, each finding's side-by-side view and each rank's frames stored compressed and
shown when opened.

Invariant: the page is self-contained (inline CSS, one script, no network, no kernel) and what the
browser lays out at load is the grid, the findings and one line per frame of each rank. A finding's
view is the widget's (:func:`viz.job_view.side_html`) with each rank's frame a folded line naming that
frame's payload (Note [A rank's frame in a finding's view on demand] in viz/job_view.py), and a rank's
frame exactly the one-file report's (:func:`viz.report_file.frame_payload`: its section, Code tab, drawings and nodes' facts for
the inspector); each is a payload (:func:`viz.report_file.encode_payload`: UTF-8, zlib, base64 in an
inert script block; drawings and facts of equal frames stored once: Note [Equal parts of payloads stored
once] in viz/report_file.py) that the report's own browser code decodes with ``DecompressionStream`` when it
is opened (viz/report_lazy.js, the ``"report_file"`` bundle). See Note [A finding's view on demand]
in viz/job_view.py. Ranks are opened one at a time (``Job.rank`` keeps one), so writing the page of a
job of many big ranks needs the memory of one rank fully read.
"""

from __future__ import annotations

import pathlib
from collections.abc import Container
from typing import Any, Union

from tracer.model import Job
from viz.browser_code import bundle
from viz.job_view import JobView, frame_key, job_html_summary, sides_html
from viz.markup import fragment, render
from viz.report_file import Payloads
from viz.report_graphs import DrawingCache

__all__ = ["export_job_html", "job_html", "mimebundle"]


def job_html(job: Job) -> str:
    """Self-contained HTML of ``job`` (the ``text/html`` of its mimebundle); deterministic. Each
    finding's view and each rank's frame is a payload decoded in the browser when opened; a finding's
    view names its ranks' frame payloads (Note [A rank's frame in a finding's view on demand] in
    viz/job_view.py)."""
    out = Payloads()
    cache: DrawingCache = DrawingCache()
    facts: dict[bytes, str] = {}
    reports: list[dict[str, Any]] = []
    for r in sorted(job.ranks):
        summary = job.ranks[r]
        cap = job.rank(r)
        frames = []
        for i, (s, f) in enumerate(zip(summary.frames, cap.frames, strict=True)):
            key = frame_key(r, i)
            out.frame(key, cap, f, cache, facts, before=render("job_pieces.html.j2", frame=f) if f.pieces else "")
            frames.append({"key": key, "compile_id": s.compile_id, "code": s.code, "status": s.status,
                           "nodes": s.nodes, "pieces": s.pieces})
        reports.append({"rank": r, "frames": frames, "path": summary.path})
        del cap
    for i, text in sides_html(job, keys=frame_key):
        out.add(f"side-{i}", text, shared=True)  # two findings on one frame pair: one view stored
    return job_html_summary(job, reports=reports, script=fragment(bundle("report_file")),
                            payloads=fragment("\n".join(out.blocks)))


def export_job_html(job: Job, path: Union[str, pathlib.Path]) -> pathlib.Path:
    """Write ``job`` as one standalone HTML file (no kernel needed); return its path."""
    p = pathlib.Path(path)
    p.write_text(render("page.html.j2", title=f"job of {len(job.ranks)} ranks", body=fragment(job_html(job))) + "\n",
                 encoding="utf-8")
    return p


def mimebundle(job: Job, include: Container[str] | None = None, exclude: Container[str] | None = None) -> dict[str, Any]:
    """The ``_repr_mimebundle_`` of a Job: the JobView widget, its static HTML and its text."""
    from viz.mimebundle import bundle

    return bundle(lambda: JobView(job).widget, lambda: job_html(job), str(job), include, exclude)
