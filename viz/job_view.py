"""The Job view: a ranks x frames grid with divergent cells marked, the findings, each opening its
side-by-side view when asked for, as a widget (:class:`JobView`) whose grid (:class:`JobGrid`) opens
any rank's capture in the :class:`viz.Explorer`; the static page is viz/job_page.py.

Invariant: reads ``tracer.model`` only, and every string from a log or user code reaches markup
through an autoescaping template (viz/markup.py). The grid is made from the job's per-rank summaries
(``Job.ranks``); a rank's capture is opened (``Job.rank``) only for what shows it: a finding's
side-by-side view (:func:`side_html`), rendered when the finding is opened, and the explorer. The
browser side (``job_grid.js``) shows the markup, asks for a finding's view when it is opened
(``want``), draws the graphs of the view it gets back (``sides``) with the static report's code
(viz/report.js, joined with job_grid.js by :mod:`viz.browser_code`), and sends back rank numbers and
compile ids. A Job loaded from JSON renders like a live one. See Note [A finding's view on demand].
"""

from __future__ import annotations

import re
from typing import Any, Callable, Optional

import anywidget
import ipywidgets as W
import traitlets

from tracer.model import Capture, Divergence, Frame, Job
from viz import html
from viz.browser_code import bundle
from viz.diff_view import diff_html
from viz.markup import fragment, render
from viz.report_file import frame_payload
from viz.report_graphs import DrawingCache, canvas_css, report_data
from viz.report_info import report_info

__all__ = ["JobGrid", "JobView", "frame_key", "grid_columns", "job_html_summary", "side_html", "sides_html"]

_KEY = re.compile(r"r(\d+)-(\d+)")


def frame_key(rank: int, index: int) -> str:
    """The key that names frame ``index`` of ``rank`` in a finding's view (the job page's payload key)."""
    return f"r{rank}-{index}"

# Note [A finding's view on demand]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A finding's side-by-side view draws every graph of the frames it names on each rank, so a job of
# many findings carried megabytes of drawings before anything was opened. The markup now holds only
# each finding's title in a folded ``<details>``; its view is rendered when it is asked for: in the
# widget, job_grid.js sets ``want`` when a finding is opened and Python answers with the view's HTML
# in ``sides`` (rendered from the ranks' captures, ``Job.rank``); in the static page
# (viz/job_page.py) each view is a compressed payload decoded in the browser when opened, with the
# one-file report's mechanism (Note [One file, frames on demand] in viz/report_file.py). Either way
# the view is the same HTML (:func:`side_html`): the frame diff, each rank's frame reports, their
# drawings block and their nodes' facts for the inspector (Note [One inspector] in viz/inspector.py).

# Note [A rank's frame in a finding's view on demand]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A finding on a big frame drew both ranks' whole frame reports (every graph, thousands of guard
# rows) when it was opened: 3.3 MB of HTML for two 12-layer training frames, seconds to decode and
# lay out on a busy machine, though its diff is what one reads first. In the static page the view's
# payload therefore holds only the diff and, per rank, one folded line per frame naming that frame's
# payload in the rank's report (viz/job_page.py writes each frame once, for both places: the same
# HTML the rank's report opens); opening the line decodes the frame (viz/report_lazy.js sets up the
# lines a decoded payload holds). Without a diff (a status or frames finding) the frames are the view,
# so the first frame of each rank opens with it. Views with equal HTML (two findings on one frame
# pair) are stored once. The widget sends the same view, lines included (:meth:`JobView.show_side`):
# opening a rank's frame line sets ``want`` with its key (``r<rank>-<index>``, the static page's
# payload key) and Python answers in ``frame`` with that frame's HTML (:meth:`JobView.show_frames`: the
# static page's frame payload, :func:`viz.report_file.frame_payload`), so a finding's view costs the
# kernel and the browser its diff and one line per frame until a frame is opened. ``frame`` holds the
# last answer only (a dict trait is sent whole on every change: frames would pile up in it).


def grid_columns(job: Job) -> list[str]:
    """Every compile id of every rank, each once: rank order, then each rank's compile order."""
    seen: dict[str, None] = {}
    for summary in job.ranks.values():
        for f in summary.frames:
            seen.setdefault(f.compile_id, None)
    return list(seen)


def _cell(job: Job, rank: int, cid: str) -> dict[str, Any]:
    frame = job.ranks[rank].frame(cid)
    found = [d for d in job.divergence if rank in d.ranks and cid in d.compile_ids.values()]
    if frame is None:
        return {"present": False, "text": "", "cls": "ds-absent" + (" ds-divergent" if found else ""),
                "title": "; ".join(d.message for d in found)}
    text = frame.status if frame.status != "compiled" else f"{frame.nodes} nodes"
    if frame.pieces:
        text += f", {frame.pieces} pieces"
    cls = " ".join(c for c in ("ds-divergent" if found else "", "" if frame.status == "compiled" else "ds-grey") if c)
    return {"present": True, "text": text, "cls": cls, "title": "; ".join(d.message for d in found)}


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


def side_html(d: Divergence, frames: dict[int, list[Frame]], has: dict[int, bool],
              keys: Optional[dict[int, list[str]]] = None) -> str:
    """One finding side by side (job_side.html.j2): the frame diff it carries (graphs coloured, see
    Note [Diff colours] in viz/diff_view.py), then each rank's frame report with its graphs drawn from
    the fragment's own drawings block (:func:`viz.report_graphs.report_data`) and its nodes' facts
    (:func:`viz.report_info.report_info`), so the fragment draws the same in a static page and in the
    widget. ``frames``: per rank of the finding, the frames :func:`finding_frames` took from its
    capture; ``has``: whether that rank has a frame of the id the finding names. ``keys`` (the static
    page): per rank, the payload key of each of those frames; each frame is then a folded line that
    decodes that payload when opened, the first of each rank opened with the view when there is no
    diff (Note [A rank's frame in a finding's view on demand])."""
    ids = {r: d.compile_ids.get(r, "") for r in d.ranks}
    cols = [{"rank": r, "cid": ids[r], "frames": frames.get(r, [])} for r in d.ranks]
    diff = None
    if d.diff is not None and len(cols) == 2:
        a, b = (next(iter(c["frames"]), None) for c in cols)
        diff = fragment(diff_html(d.diff, a, b))
    data = info = None
    if keys is None:
        shown = [f for col in cols for f in col["frames"]]
        drawings, per_frame = report_data(shown)
        data, info = fragment(drawings), fragment(report_info(shown))
        graphs = iter(per_frame)
    for col in cols:
        if keys is None:
            col["lazy"] = []
            col["blocks"] = [fragment(render("job_side_frame.html.j2", frame=f,
                                             body=fragment(html.frame_html(f, next(graphs))))) for f in col["frames"]]
        else:
            col["lazy"] = [{"key": k, "compile_id": f.compile_id, "code": f.code, "status": f.status,
                            "nodes": len(f.graph.nodes), "open": diff is None and i == 0}
                           for i, (f, k) in enumerate(zip(col["frames"], keys.get(col["rank"], []), strict=True))]
            col["blocks"] = col["lazy"]
        col["later"] = [f.compile_id for f in col["frames"][1:]]
    named = next((c for c in d.compile_ids.values() if c), "")
    for col in cols:
        col["none"] = (f"no frame {named} on this rank" if not has.get(col["rank"]) else
                       f"the finding names no frame of this rank (it has a frame {named}: see the finding)")
        del col["frames"]
    return render("job_side.html.j2", cols=cols, diff=diff, data=data, info=info)


def finding_frames(d: Divergence, rank: int, cap: Capture) -> list[Frame]:
    """The frames finding ``d``'s view shows of ``rank`` (whose capture is ``cap``): :func:`_attempts`."""
    return _attempts(cap, d.compile_ids.get(rank, ""))


def _has(job: Job, d: Divergence) -> dict[int, bool]:
    named = next((c for c in d.compile_ids.values() if c), "")
    return {r: job.ranks[r].frame(named) is not None for r in d.ranks}


def sides_html(job: Job, which: Optional[list[int]] = None, keys: Optional[Callable[[int, int], str]] = None):
    """``(index, HTML)`` of each finding's view (``which``: those indexes; all by default), in finding
    order. Findings on the same ranks are rendered together, so each rank's capture is opened once for
    them (``Job.rank`` keeps one); only their frames are kept while their views are rendered.
    ``keys(rank, i)``: the payload key of frame ``i`` of ``rank`` (the static page; :func:`side_html`)."""
    todo = list(range(len(job.divergence))) if which is None else list(which)
    while todo:
        ranks = job.divergence[todo[0]].ranks
        group = [i for i in todo if job.divergence[i].ranks == ranks]
        todo = [i for i in todo if i not in group]
        frames: dict[int, dict[int, list[Frame]]] = {i: {} for i in group}
        named: dict[int, dict[int, list[str]]] = {i: {} for i in group}
        for r in ranks:
            cap = job.rank(r)
            at = {id(f): n for n, f in enumerate(cap.frames)}
            for i in group:
                frames[i][r] = finding_frames(job.divergence[i], r, cap)
                if keys is not None:
                    named[i][r] = [keys(r, at[id(f)]) for f in frames[i][r]]
            del cap
        for i in group:
            yield i, side_html(job.divergence[i], frames.pop(i), _has(job, job.divergence[i]),
                               named.pop(i) if keys is not None else None)


class JobGrid(anywidget.AnyWidget):
    """The grid and findings of a job in the widget (``job_grid.js``): a click on a cell or a rank
    sets ``picked``; ``current`` marks the shown cell; opening a finding sets ``want``, answered in
    ``sides`` (Note [A finding's view on demand]), and opening a rank's frame in it sets ``want``,
    answered in ``frame`` (Note [A rank's frame in a finding's view on demand]). Only markup rendered
    here (autoescaped) and plain ids cross to the browser."""

    _esm = bundle("job_grid")  # job_grid.js with report.js: draws the side-by-side views

    html = traitlets.Unicode("").tag(sync=True)  # job_html_summary(job): grid, findings (each view folded, empty)
    want = traitlets.Dict().tag(sync=True)  # set when a finding is opened: {"side": its index, "n": count},
    # or frames in a finding's view: {"frames": [frame_key, ...], "n": count}
    sides = traitlets.Dict().tag(sync=True)  # finding index (str) -> its view's HTML (side_html, one line per frame)
    frame = traitlets.Dict().tag(sync=True)  # the last frames asked for: {"n": the want's n, "frames": {key: HTML}}
    picked = traitlets.Dict().tag(sync=True)  # set by a click: {"rank": int, "frame": compile id or "", "n": click count}
    current = traitlets.Dict().tag(sync=True)  # {"rank": int, "frame": compile id}: the capture shown below


class JobView:
    """The widget: the job's grid and findings on top, one button per rank, and the chosen rank's
    capture in an :class:`viz.Explorer` below (at the first divergent frame of that rank, if any).
    A click on a grid cell opens that rank at that frame; on a rank, at its first divergent frame.

    >>> from tracer.model import Capture, Frame, Job
    >>> v = JobView(Job.of({0: Capture(fn="f", frames=[Frame("0/0", "f.py:1 in f")]), 1: Capture(fn="f")}))
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
        self._cache = DrawingCache()  # equal graphs of the frames opened in findings' views laid out once
        self.grid = JobGrid(html=job_html_summary(job))
        self.grid.observe(self._on_pick, names="picked")
        self.grid.observe(self._on_want, names="want")
        self._buttons = W.ToggleButtons(options=[(f"rank {r}", r) for r in sorted(job.ranks)], value=None)
        self._buttons.observe(lambda ch: ch["new"] is not None and not self._opening and self.open(ch["new"]), names="value")
        self._body = W.VBox([])
        self._root = W.VBox([self.grid, self._buttons, self._body])

    def open(self, rank: int, compile_id: Optional[str] = None) -> None:
        """Show ``rank``'s capture in the Explorer, at ``compile_id`` or its first divergent frame."""
        from viz.explorer import Explorer

        if rank not in self.job.ranks:
            raise KeyError(f"no rank {rank} in the job (ranks: {sorted(self.job.ranks)})")
        if compile_id is None:
            ids = [f.compile_id for f in self.job.ranks[rank].frames]
            compile_id = next((d.compile_ids[rank] for d in self.job.divergence if d.compile_ids.get(rank) in ids), None)
        self.explorer = None  # the rank shown before is let go before the next is opened (Job.rank keeps one)
        cap = self.job.rank(rank)
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

    def show_side(self, index: int) -> str:
        """Render finding ``index``'s view into ``grid.sides`` (what opening it in the widget does);
        return its HTML. See Note [A finding's view on demand]."""
        if not 0 <= index < len(self.job.divergence):
            raise IndexError(f"no finding {index} (the job has {len(self.job.divergence)})")
        key = str(index)
        if key not in self.grid.sides:
            ((_, text),) = sides_html(self.job, [index], keys=frame_key)
            self.grid.sides = {**self.grid.sides, key: text}
        return self.grid.sides[key]

    def show_frames(self, keys: list[str], n: int = 0) -> dict[str, str]:
        """Render the frames ``keys`` (:func:`frame_key`) of findings' views into ``grid.frame``, as
        ``{"n": n, "frames": {key: HTML}}`` (what opening a rank's frame line does; the HTML is the job
        page's frame payload); return the HTML by key. ``KeyError`` for a key naming no frame. See
        Note [A rank's frame in a finding's view on demand]."""
        out: dict[str, str] = {}
        for key in keys:
            m = _KEY.fullmatch(key) if isinstance(key, str) else None
            rank, i = (int(m.group(1)), int(m.group(2))) if m is not None else (-1, -1)
            if rank not in self.job.ranks or not i < len(self.job.ranks[rank].frames):
                raise KeyError(f"no frame {key!r} in the job (keys are r<rank>-<index of the rank's frame>)")
            cap = self.job.rank(rank)
            f = cap.frames[i]
            out[key] = (render("job_pieces.html.j2", frame=f) if f.pieces else "") + frame_payload(cap, f, self._cache)
            del cap
        self.grid.frame = {"n": n, "frames": out}
        return out

    def _on_want(self, change: dict[str, Any]) -> None:
        want = change["new"]
        side, frames = want.get("side"), want.get("frames")
        if isinstance(side, int) and 0 <= side < len(self.job.divergence):
            self.show_side(side)
        if isinstance(frames, list):
            try:
                self.show_frames(frames, want.get("n") if isinstance(want.get("n"), int) else 0)
            except KeyError as e:  # except: only changes display text (the browser says the frame could not be shown)
                self.grid.frame = {"n": want.get("n"), "frames": {}, "error": str(e)}

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


def job_html_summary(job: Job, **page: Any) -> str:
    """The grid and the findings, each finding's view folded and empty (the widget fills it when it
    is opened; Note [A finding's view on demand]); ``page``: what viz/job_page.py adds (the rank
    sections, its script)."""
    ranks = sorted(job.ranks)
    columns = grid_columns(job)
    return render("job.html.j2", job=job, ranks=ranks, columns=columns,
                  cells={(r, cid): _cell(job, r, cid) for r in ranks for cid in columns},
                  sides=[f"{d.kind}: {d.message}" for d in job.divergence], canvas_css=fragment(canvas_css()),
                  **{"reports": [], "script": "", **page})
