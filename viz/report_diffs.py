"""The recompiles' diffs in a report: which frames each diff reads (:func:`diff_plan`, computing no
diff), each rendered as plain data once the later of them is (:func:`render_diffs`), and their lines and
blocks in the page's order (:func:`place_diffs`). The one-file report (viz/report_file.py) and its
worker path (viz/report_frames.py) render them with these.

Invariant: the page holds the diffs' blocks before every other block of their capture, in recompile
order, keyed ``recompile-N`` by their place among the recompiles whose diff exists; the problems their
first reads add to ``cap.problems`` stand where they stood when every diff was read before the first
frame, whichever process read them and in whatever order. See Note [Diffs rendered beside their later frame].
"""

from __future__ import annotations

from typing import Iterable

from tracer.diffing import recompile_frames
from tracer.model.capture import Capture
from tracer.model.lazy import pending
from viz.diff_view import diff_html, frame_of
from viz.report_blocks import ReportStats, encode_payload, payload_block

__all__ = ["diff_plan", "place_diffs", "render_diffs"]

# Note [Diffs rendered beside their later frame]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A recompile's diff reads the graphs of the two attempts it compares and draws them. Rendered before
# the first frame (as the report did until 2026-11-27), the diffs parse every diffed frame's graphs up
# front, and each frame keeps them until its own turn: on a log of distinct frames most of the log's
# graphs were held at once (a 200 MB peak for bench.report_workers' 42 MB log, against tlparse's 109).
# So each diff is rendered right after the later of the frames it reads (``diff_plan``: from
# tracer/diffing.py ``recompile_frames``, no diff computed to place it), and a frame is let go after its
# last use: its own payload or the last diff that reads it (and the diff, rendered, is let go too).
# Where it is rendered changes nothing on
# the page: ``place_diffs`` puts the blocks first, in recompile order, numbered as before (a recompile
# whose diff fails to compute has none), and puts back the problems a diff's first read added (taken
# out of ``cap.problems`` by ``render_diffs``) where the up-front reads had appended them. The worker
# processes of ``dynascope report -j N`` (viz/report_frames.py) give each diff to the run holding that frame.


def diff_plan(cap: Capture) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """(frame index -> the recompiles (indices in ``cap.recompiles``) whose diffs are rendered once that
    frame is, frame index -> the frames whose last use that frame's turn is) for every recompile that has
    or may have a diff. A diff that reads no frame of ``cap`` goes with frame 0. Reads no graph."""
    where = {id(f): i for i, f in enumerate(cap.frames)}
    after: dict[int, list[int]] = {}
    last = list(range(len(cap.frames)))
    for ri, r in enumerate(cap.recompiles):
        if pending(r, "diff"):  # the two attempts it will diff, and the frames it will draw
            pair = recompile_frames(cap, r) or ()
            frames = [*pair, *(frame_of(cap, f.compile_id) for f in pair)]
        elif r.diff is None:
            continue  # no diff: nothing to render
        else:  # computed already: the frames it draws
            frames = [frame_of(cap, r.diff.a), frame_of(cap, r.diff.b)]
        reads = [where[id(f)] for f in frames if f is not None and id(f) in where]
        k = max(reads, default=0)
        after.setdefault(k, []).append(ri)
        for fi in reads:
            last[fi] = max(last[fi], k)
    going: dict[int, list[int]] = {}
    for fi, k in enumerate(last):
        going.setdefault(k, []).append(fi)
    return after, going


def render_diffs(cap: Capture, recompiles: Iterable[int], release: bool = False) -> list[list]:
    """Recompiles ``recompiles`` (indices in ``cap.recompiles``) as plain data, each ``[index, payload of
    its diff's HTML or None (no diff), the diff's summary, the problems its first read added]``; those
    problems are taken out of ``cap.problems`` (:func:`place_diffs` puts them back in their place).
    ``release``: each diff let go once rendered (``Recompile.diff`` None), for captures nobody reads afterwards."""
    out = []
    for ri in recompiles:
        at = len(cap.problems)
        d = cap.recompiles[ri].diff  # computed here on its first read: a failure is a problem of cap
        html = None if d is None else diff_html(d, frame_of(cap, d.a), frame_of(cap, d.b))
        added = cap.problems[at:]
        del cap.problems[at:]
        if release and d is not None:
            cap.recompiles[ri].diff = None  # its node pairs: 10 MB at the peak of the distinct-frames log's report
        out.append([ri, None if html is None else encode_payload(html), "" if d is None else d.summary, added])
    return out


def place_diffs(cap: Capture, diffs: list[list], problems_at: int, stats: ReportStats,
                prefix: str = "") -> tuple[list, list[str]]:
    """The page's recompile lines and the diffs' payload blocks from :func:`render_diffs`' answers (here
    and in workers), in recompile order and numbered among the recompiles whose diff exists, keys after
    ``prefix``; the problems the diffs' reads added go into ``cap.problems`` at ``problems_at``."""
    recompiles, blocks, added = [], [], []
    for ri, payload, summary, problems in sorted(diffs, key=lambda x: x[0]):
        added += problems
        if payload is None:
            continue
        r, key = cap.recompiles[ri], f"{prefix}recompile-{len(blocks)}"
        blocks.append(payload_block(key, payload, []))
        stats.payload_bytes += len(payload)
        recompiles.append(({"compile_id": r.compile_id, "replaced": r.replaced, "diff": {"summary": summary}}, key))
    cap.problems[problems_at:problems_at] = added
    return recompiles, blocks
