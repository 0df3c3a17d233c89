"""The Job view: a ranks x frames grid with divergent cells marked, the findings side by side, and
each rank's capture — as static HTML (:func:`job_html`, :func:`export_job_html`) and as a widget
(:class:`JobView`) whose grid (:class:`JobGrid`) opens any rank's capture in the :class:`viz.Explorer`.

Invariant: reads ``tracer.model`` only, and every string from a log or user code reaches markup
through an autoescaping template (viz/markup.py); the browser side (``job_grid.js``) shows that
markup, draws the graphs of each finding's side-by-side view from the view's own JSON drawings block
with the static report's code (viz/report.js, joined with job_grid.js by :mod:`viz.browser_code`), and
sends back rank numbers and compile ids. A Job loaded from JSON renders like a live one.
"""

from __future__ import annotations

import pathlib
from collections.abc import Container
from typing import Any, Optional, Union

import anywidget
import ipywidgets as W
import traitlets

from tracer.model import Capture, Divergence, Frame, Job
from viz import html
from viz.browser_code import bundle
from viz.diff_view import diff_html
from viz.markup import fragment, render
from viz.report_graphs import canvas_css, report_data, report_script

__all__ = ["JobGrid", "JobView", "export_job_html", "grid_columns", "job_html", "mimebundle"]

def grid_columns(job: Job) -> list[str]:
    """Every compile id of every rank, each once: rank order, then each rank's compile order."""
    seen: dict[str, None] = {}
    for cap in job.ranks.values():
        for f in cap.frames:
            seen.setdefault(f.compile_id, None)
    return list(seen)


def _cell(job: Job, rank: int, cid: str) -> dict[str, Any]:
    cap = job.ranks[rank]
    frame = next((f for f in cap.frames if f.compile_id == cid), None)
    found = [d for d in job.divergence if rank in d.ranks and cid in d.compile_ids.values()]
    if frame is None:
        return {"present": False, "text": "", "cls": "ds-absent" + (" ds-divergent" if found else ""),
                "title": "; ".join(d.message for d in found)}
    text = frame.status if frame.status != "compiled" else f"{len(frame.graph.nodes)} nodes"
    if frame.pieces:
        text += f", {len(frame.pieces)} pieces"
    cls = " ".join(c for c in ("ds-divergent" if found else "", "" if frame.status == "compiled" else "ds-grey") if c)
    return {"present": True, "text": text, "cls": cls, "title": "; ".join(d.message for d in found)}


def _rank_report(rank: int, cap: Capture) -> str:
    """The rank's capture report (the same as ``viz.capture_html``), each frame anchored for the grid."""
    return html.capture_html(cap, lambda frame, body: render("job_frame.html.j2", rank=rank, frame=frame,
                                                             body=fragment(body)))


def _attempts(cap: Capture, cid: str) -> list[Frame]:
    """Frame ``cid`` of ``cap`` and, when Dynamo restarted it, the attempts of the same compile that
    followed ("4/0" restarted -> "4/0_1", Note [Compile ids and attempts] in tracer/model/frame.py)."""
    at = next((i for i, f in enumerate(cap.frames) if f.compile_id == cid), None) if cid else None
    if at is None:
        return []
    first = cap.frames[at]
    if first.status != "restarted":
        return [first]
    base = cid.split("_", 1)[0]
    return [first, *(f for f in cap.frames[at + 1:] if f.compile_id.split("_", 1)[0] == base)]


def _side(job: Job, d: Divergence) -> str:
    """One finding side by side (job_side.html.j2): the frame diff it carries (graphs coloured, see
    Note [Diff colours] in viz/diff_view.py), then each rank's frame report with its graphs drawn from
    the fragment's own drawings block (:func:`viz.report_graphs.report_data`), so the fragment draws
    the same in a static page and in the widget."""
    ids = {r: d.compile_ids.get(r, "") for r in d.ranks}
    cols = [{"rank": r, "cid": ids[r], "frames": _attempts(job.ranks[r], ids[r])} for r in d.ranks]
    frames = [f for col in cols for f in col["frames"]]
    data, per_frame = report_data(frames)
    graphs = iter(per_frame)
    for col in cols:
        col["blocks"] = [fragment(render("job_side_frame.html.j2", frame=f,
                                         body=fragment(html.frame_html(f, next(graphs))))) for f in col["frames"]]
        col["later"] = [f.compile_id for f in col.pop("frames")[1:]]
    diff = None
    if d.diff is not None and len(cols) == 2:
        a, b = (next(iter(_attempts(job.ranks[c["rank"]], c["cid"])), None) for c in cols)
        diff = fragment(diff_html(d.diff, a, b))
    named = next((c for c in d.compile_ids.values() if c), "")
    for col in cols:
        has = any(f.compile_id == named for f in job.ranks[col["rank"]].frames)
        col["none"] = (f"no frame {named} on this rank" if not has else
                       f"the finding names no frame of this rank (it has a frame {named}: see the finding)")
    return render("job_side.html.j2", cols=cols, diff=diff, data=fragment(data))


def _sides(job: Job) -> list[dict[str, Any]]:
    """Per finding, its title and side-by-side view (:func:`_side`)."""
    return [{"title": f"{d.kind}: {d.message}", "body": fragment(_side(job, d))} for d in job.divergence]


def job_html(job: Job) -> str:
    """Self-contained HTML of ``job`` (the ``text/html`` of its mimebundle); deterministic."""
    ranks = sorted(job.ranks)
    columns = grid_columns(job)
    return render("job.html.j2", job=job, ranks=ranks, columns=columns,
                  cells={(r, cid): _cell(job, r, cid) for r in ranks for cid in columns},
                  sides=_sides(job), reports={r: fragment(_rank_report(r, job.ranks[r])) for r in ranks},
                  canvas_css=fragment(canvas_css()), script=fragment(report_script()))


def export_job_html(job: Job, path: Union[str, pathlib.Path]) -> pathlib.Path:
    """Write ``job`` as one standalone HTML file (no kernel needed); return its path."""
    p = pathlib.Path(path)
    p.write_text(render("page.html.j2", title=f"job of {len(job.ranks)} ranks", body=fragment(job_html(job))) + "\n",
                 encoding="utf-8")
    return p


class JobGrid(anywidget.AnyWidget):
    """The grid and findings of a job in the widget (``job_grid.js``): a click on a cell or a rank
    sets ``picked``; ``current`` marks the shown cell. Only markup rendered here (autoescaped)
    and plain ids cross to the browser."""

    _esm = bundle("job_grid")  # job_grid.js with report.js: draws the side-by-side views

    html = traitlets.Unicode("").tag(sync=True)  # job_html_summary(job): grid, findings, side-by-side views
    picked = traitlets.Dict().tag(sync=True)  # set by a click: {"rank": int, "frame": compile id or "", "n": click count}
    current = traitlets.Dict().tag(sync=True)  # {"rank": int, "frame": compile id}: the capture shown below


class JobView:
    """The widget: the job's grid and findings on top, one button per rank, and the chosen rank's
    capture in an :class:`viz.Explorer` below (at the first divergent frame of that rank, if any).
    A click on a grid cell opens that rank at that frame; on a rank, at its first divergent frame.

    >>> from tracer.model import Capture, Frame, Job
    >>> v = JobView(Job(ranks={0: Capture(fn="f", frames=[Frame("0/0", "f.py:1 in f")]), 1: Capture(fn="f")}))
    >>> v.open(1); v
    JobView(2 ranks, showing rank 1)
    """

    def __init__(self, job: Job, *, height: int = 520) -> None:
        if not isinstance(job, Job):
            raise TypeError(f"JobView needs a tracer.model.Job, got {type(job).__name__}")
        self.job = job
        self._height = height
        self.rank: Optional[int] = None
        self.explorer = None
        self._opening = False
        self.grid = JobGrid(html=job_html_summary(job))
        self.grid.observe(self._on_pick, names="picked")
        self._buttons = W.ToggleButtons(options=[(f"rank {r}", r) for r in sorted(job.ranks)], value=None)
        self._buttons.observe(lambda ch: ch["new"] is not None and not self._opening and self.open(ch["new"]), names="value")
        self._body = W.VBox([])
        self._root = W.VBox([self.grid, self._buttons, self._body])

    def open(self, rank: int, compile_id: Optional[str] = None) -> None:
        """Show ``rank``'s capture in the Explorer, at ``compile_id`` or its first divergent frame."""
        from viz.explorer import Explorer

        if rank not in self.job.ranks:
            raise KeyError(f"no rank {rank} in the job (ranks: {sorted(self.job.ranks)})")
        cap = self.job.ranks[rank]
        if compile_id is None:
            ids = [f.compile_id for f in cap.frames]
            compile_id = next((d.compile_ids[rank] for d in self.job.divergence if d.compile_ids.get(rank) in ids), None)
        self.rank = rank
        self.explorer = Explorer(cap, frame=compile_id, height=self._height) if cap.frames else None
        self._body.children = [self.explorer.widget] if self.explorer is not None else [W.HTML("(no frames on this rank)")]
        shown = self.explorer.frame.compile_id if self.explorer is not None and self.explorer.frame is not None else ""
        self.grid.current = {"rank": rank, "frame": shown}
        self._opening = True  # the button follows the rank; its observer must not open the rank again
        try:
            self._buttons.value = rank
        finally:
            self._opening = False

    def _on_pick(self, change: dict[str, Any]) -> None:
        picked = change["new"]
        rank = picked.get("rank")
        if isinstance(rank, int) and rank in self.job.ranks:
            self.open(rank, picked.get("frame") or None)

    @property
    def widget(self) -> W.Widget:
        return self._root

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, Any]:
        bundle = dict(self._root._repr_mimebundle_())
        bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        showing = f", showing rank {self.rank}" if self.rank is not None else ""
        return f"JobView({len(self.job.ranks)} ranks{showing})"


def job_html_summary(job: Job) -> str:
    """The grid, findings and side-by-side views without the per-rank reports (the widget shows a
    rank's capture in the Explorer)."""
    ranks = sorted(job.ranks)
    columns = grid_columns(job)
    return render("job.html.j2", job=job, ranks=ranks, columns=columns,
                  cells={(r, cid): _cell(job, r, cid) for r in ranks for cid in columns}, sides=_sides(job), reports={},
                  canvas_css=fragment(canvas_css()), script="")


def mimebundle(job: Job, include: Container[str] | None = None, exclude: Container[str] | None = None) -> dict[str, Any]:
    """The ``_repr_mimebundle_`` of a Job: the JobView widget, its static HTML and its text."""
    from viz.mimebundle import bundle

    return bundle(lambda: JobView(job).widget, lambda: job_html(job), str(job), include, exclude)
