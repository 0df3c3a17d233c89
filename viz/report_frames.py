"""One log's frames rendered in worker processes for the one-file report (``dynascope report LOG -j N``):
this process reads the log lazily, then ``N`` workers each render a run of consecutive frames and the
diffs of the recompiles whose later frame is in it, and send back that rendered text (:func:`write_log_in_workers`).

Invariant: the page is the one the in-process report writes (:func:`viz.report_file.write_report` of
the one capture, ``release``), byte for byte. Only plain data crosses the process boundary: a worker
gets its frames' range and its recompiles' indices and answers with JSON text (each frame's entry and
counts, the problems its parses added, its payload and part blocks with each part's key, each diff's
payload, summary and the problems it added), or one error line; a worker that fails or dies is a
``ValueError`` naming its frames, never a hang. See Note [One log's frames rendered in worker processes].
"""

from __future__ import annotations

import gc
import json
import pathlib
import time
from typing import Callable, Iterator, Optional

from tracer._text import plural
from tracer.model.capture import Capture
from tracer.rank_pool import pooled, worker_count
from viz import panels
from viz.diff_view import decomposition_html
from viz.markup import fragment
from viz.report_blocks import ReportStats
from viz.report_diffs import diff_plan, place_diffs, render_diffs
from viz.report_file import Payloads, _entry, _write_page
from viz.report_graphs import DrawingCache
from viz.report_ranks import _merge

__all__ = ["frame_runs", "write_log_in_workers"]

# Note [One log's frames rendered in worker processes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A report of one big log spends its CPU in three serial steps (bench/RESULTS.md, "One log's frames in
# workers"): imports, the lazy load (a scan of every line) and rendering the frames (parsing their
# graphs, drawings, node facts, compression) and the recompiles' diffs. Only the last splits without a
# second scan, so this process loads the log lazily and renders what needs the whole capture (the
# export's decomposition, the overview) and frame 0; frames 1.. go to ``N`` workers in ``N`` runs of
# consecutive frames (:func:`frame_runs`), and each recompile's diff to the run that holds the later of
# the frames it diffs and draws (:func:`_owners`, from viz/report_diffs.py's ``diff_plan``: no diff is
# computed to place it, Note [Diffs rendered beside their later frame]); one whose frames are all
# frame 0 is rendered here with it. Frame 0 is rendered
# here first because a log's frames
# repeat their graphs (each step, each recompile of the same code, Note [Drawings of equal graphs] in
# viz/report_graphs.py): its parses, drawings and node facts are then in the caches every worker
# starts from, instead of being made once per worker (on the bench's log of one repeated frame that is
# most of the rendering's CPU). Run k's blocks come before run k+1's on the page, so this process
# appends each run's blocks in order and numbers their parts itself (viz/report_ranks.py's ``_merge``:
# a part already on the page is dropped and named by its page number), which gives the serial page's
# blocks and numbers (Note [Equal parts of payloads stored once]). Workers start by ``fork`` (rank_pool's
# ``_context``: the CLI runs one thread once frame 0's head is compressed), so they read this process's
# lazily loaded capture and its caches without a second scan and without pickling them (``_LOADED``);
# started any other way (a parent with several threads) a worker loads the log itself and starts with
# empty caches (the text is the same: a drawing is a function of the graph). A worker renders its
# diffs first, before any frame of its run is let go (a diff draws both frames' graphs); the earlier
# frame of a diff may be in an earlier run, whose graphs the worker parses itself (its copy of that
# frame was not let go: this process lets frame 0 go only once no worker is left to fork, and the
# others after the pool). Then it lets each frame go once rendered (Note [Letting a frame go]) and
# answers with plain data: the frames' entries and (ops, guards) counts, the problems its parses added
# to each frame (Note [Problems of deferred parses] in tracer/model/frame.py; copied onto this
# process's frames before the overview, which lists them), the blocks and the parts' keys, and per diff
# its payload (its HTML compressed, no part: viz/report_diffs.py), its summary and what
# its first read added to ``cap.problems`` (a diff that fails is such a problem and no payload). This
# process puts the diffs in recompile order, numbers their keys as the serial page does (a failed diff
# is skipped), writes their blocks before all others and inserts their problems where the serial
# report's first reads appended them, so the page is the serial one. One order is not kept: when a
# frame has several graphs whose text does not parse, their problems come in the order the graphs were
# first read, which a diff rendered elsewhere can change (it needs two unreadable graph texts in one frame).
# Failure: a worker that raises or dies (killed, out of memory) is its run's error line from
# ``pooled`` (the pool knows a dead worker: no hang); the report then stops with a ``ValueError``
# naming the frames and the cause, the CLI's ``error:`` line and exit status 2, and writes nothing.

_LOADED: dict[str, tuple[Capture, DrawingCache, dict[bytes, str]]] = {}  # path -> what workers forked from this process read


def _render(cap: Capture, frames: range, out: Payloads, cache: DrawingCache, facts: dict[bytes, str],
            let_go: bool = True) -> tuple[list, list, list]:
    """Frames ``frames`` of ``cap`` added to ``out`` as viz/report_file.py's ``_section`` adds them (each
    let go once rendered, with ``let_go``); their entries, (ops, guards) counts and problems after rendering."""
    entries, counts, problems = [], [], []
    for fi in frames:
        f = cap.frames[fi]
        entry = _entry(f, str(fi))
        out.frame(entry["key"], cap, f, cache, facts)
        entries.append(entry)
        counts.append((panels.ops(f.graph), entry["guards"]))
        problems.append(list(f.problems))
        if let_go:
            f.let_go()
    return entries, counts, problems


def _owners(cap: Capture, runs: list[range]) -> list[list[int]]:
    """Per run, the recompiles (indices in ``cap.recompiles``) whose diff is rendered with the later of the
    frames it reads, in that run; the others (none of their frames after frame 0) last (viz/report_diffs.py)."""
    owners: list[list[int]] = [[] for _ in range(len(runs) + 1)]
    for k, recompiles in sorted(diff_plan(cap)[0].items()):
        owners[next((j for j, run in enumerate(runs) if k in run), len(runs))] += recompiles
    return owners


def frame_runs(frames: int, n: int) -> list[range]:
    """``frames`` split into at most ``n`` runs of consecutive frames, as equal as can be, in order.

    >>> frame_runs(5, 2), frame_runs(1, 3), frame_runs(0, 2)
    ([range(0, 3), range(3, 5)], [range(0, 1)], [])
    """
    n = max(1, min(n, frames))
    step, extra = divmod(frames, n)
    runs, at = [], 0
    for k in range(n):
        size = step + (k < extra)
        if size:
            runs.append(range(at, at + size))
        at += size
    return runs


def _render_run(path: str, start: int, stop: int, recompiles: list[int]) -> tuple[bool, str]:
    """In a worker: (True, the diffs of ``recompiles`` (indices in ``cap.recompiles``) then frames
    ``start``..``stop - 1`` of the log at ``path`` rendered, as JSON text) or (False, the loader's error
    line). Strings only (Note [One log's frames rendered in worker processes])."""
    from tracer.trace_log.deferred import read_only_graphs

    cap = _LOADED.get(path)  # (capture, drawing cache, facts cache) when forked from the parent
    with read_only_graphs():  # Note [Read-only graphs] in tracer/trace_log/deferred.py
        if cap is None:  # not forked from the parent that loaded it
            from tracer.trace_log import load_trace

            try:
                cap = load_trace(path)
            except (OSError, ValueError) as e:
                return False, str(e)
            cache, facts = DrawingCache(stable=True), {}
        else:
            cap, cache, facts = cap
        out, hits = Payloads(), cache.hits
        diffs = render_diffs(cap, recompiles, release=True)  # before any frame of the run is let go: a diff draws both frames' graphs
        entries, counts, problems = _render(cap, range(start, stop), out, cache, facts)
        blocks = out.blocks  # every head compressed
    return True, json.dumps({"entries": entries, "counts": counts, "problems": problems, "blocks": blocks,
                             "keys": _keys(out), "html_bytes": out.stats.html_bytes, "reused": cache.hits - hits,
                             "diffs": diffs})


def _keys(out: Payloads) -> list[list[str]]:
    """Each part's key (its pieces' digests, hex) by the part's number in ``out``."""
    keys: list[list[str]] = [[] for _ in out.parts.known]
    for key, n in out.parts.known.items():
        keys[n] = [d.hex() for d in key]
    return keys


def _alone(render: Callable[[], None]) -> Iterator[tuple[int, Optional[str], Optional[str]]]:
    """No worker: ``render()`` here, no answer (one run left after frame 0)."""
    render()
    yield from ()


def write_log_in_workers(out: str, cap: Capture, path: str, workers: Optional[int], *, title: str,
                         progress: Callable[[str], None]) -> ReportStats:
    """Write the report of ``cap`` (loaded lazily from ``path``, read-only) at ``out``, its frames and
    recompiles' diffs rendered in ``workers`` processes; the page :func:`viz.report_file.write_report`
    writes for ``[cap]`` with ``release``. ``ValueError`` if a worker fails. See Note [One log's frames
    rendered in worker processes]."""
    stats = ReportStats(pathlib.Path(out))
    page = Payloads(stats)
    problems_at = len(cap.problems)  # where the serial report's diffs add their problems
    decomposition = None
    if cap.export is not None and cap.export.decomposition is not None:
        d = cap.export.decomposition
        page.add("decomposition", decomposition_html(cap, heading=False))
        decomposition = {"a": d.a, "b": d.b, "summary": d.summary, "key": "decomposition"}
    frames = cap.frames
    cache, facts = DrawingCache(stable=True), {}
    t0 = time.perf_counter()
    # frame 0 here: its caches go to every worker; let go once no worker is left to fork (its diffs draw it)
    entries, counts, _ = _render(cap, range(1), page, cache, facts, let_go=False)
    runs = [range(r.start + 1, r.stop + 1) for r in frame_runs(len(frames) - 1, worker_count(len(frames) - 1, workers))]
    owners = _owners(cap, runs)
    diffs = render_diffs(cap, owners[-1], release=True)  # the recompiles that draw frame 0 only
    page.blocks  # noqa: B018 -- its head compressed and the zlib thread ended: a fork copies one thread
    progress(f"frame 0 rendered here [{time.perf_counter() - t0:.1f}s]")
    first_hits = cache.hits
    reused, mine = 0, Payloads()  # the last run: rendered here while the workers render the others
    here: dict[str, object] = {}

    def render_mine(c: Capture = cap) -> None:
        t = time.perf_counter()
        hits = cache.hits
        here["diffs"] = render_diffs(c, owners[len(runs) - 1], release=True)  # before any frame of the run is let go
        here["entries"], here["counts"], here["problems"] = _render(c, runs[-1], mine, cache, facts)
        here["reused"] = cache.hits - hits
        progress(f"frames {runs[-1].start}-{runs[-1].stop - 1}: {plural(len(runs[-1]), 'frame')} rendered here "
                 f"[{time.perf_counter() - t:.1f}s]")

    def merge(r: range, got: dict) -> None:
        nonlocal reused
        _merge(page, got["blocks"], got["keys"])
        for fi, probs in zip(r, got["problems"], strict=True):
            frames[fi].problems = probs  # set, not read: a read would run its waiting parses here (Note [Problems of deferred parses])
            frames[fi].let_go()
        entries.extend(got["entries"])
        counts.extend(tuple(c) for c in got["counts"])
        diffs.extend(got["diffs"])
        stats.frames += len(r)
        stats.html_bytes += got["html_bytes"]
        reused += got["reused"]

    _LOADED[path] = (cap, cache, facts)
    try:
        answers = pooled([(k, _render_run, (path, r.start, r.stop, owners[k])) for k, r in enumerate(runs[:-1])],
                         len(runs) - 1, meanwhile=render_mine) if len(runs) > 1 else _alone(render_mine)  # no worker: 2 frames
        try:
            for k, text, err in answers:
                r = runs[k]
                if err is not None:
                    raise ValueError(f"frames {r.start}-{r.stop - 1} of {path} could not be rendered: {err}")
                got = json.loads(text)
                del text
                progress(f"frames {r.start}-{r.stop - 1}: {plural(len(r), 'frame')} rendered "
                         f"[{time.perf_counter() - t0:.1f}s, {plural(len(runs) - 1, 'worker')}]")
                merge(r, got)
                del got
        finally:
            answers.close()  # a failed run: the others are cancelled, the pool shut down
        frames[0].let_go()  # no worker is left to fork from this process: its diffs are rendered
        merge(runs[-1], {**here, "blocks": mine.blocks, "keys": _keys(mine), "html_bytes": mine.stats.html_bytes})
    finally:
        _LOADED.pop(path, None)
    recompiles, blocks = place_diffs(cap, diffs, problems_at, stats)
    head = {"heading": "", "recompiles": recompiles, "decomposition": decomposition, "frames": entries,
            "overview": fragment(panels.overview_html(cap, counts, [e["key"] for e in entries]))}
    del cap, render_mine
    frames = []  # noqa: F841 -- the cell merge() reads: the capture's frames let go before the page is written
    gc.collect()  # See Note [One capture at a time] in viz/report_file.py
    blocks += page.blocks  # the diffs' blocks first, as the serial page has them
    _write_page(stats, title, [head], blocks)
    stats.layouts_reused = reused + first_hits
    return stats
