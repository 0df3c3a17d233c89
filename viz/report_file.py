"""The report as one self-contained HTML file that opens in a second whatever the log's size: an
overview up front, each frame's graphs, guards and code stored compressed and shown when asked for.

Invariant: the file is the whole report (inline CSS, one inline script, no network, no kernel) and
the visible part is small: per capture its overview (every frame, break, recompile, problem and the
compile-time chart), then one folded entry per frame. A frame's section is exactly what the eager
report shows for it (:func:`viz.html.frame_html` with its Code tab, and its own drawings block), one
payload per frame: its UTF-8 HTML compressed with zlib and written in base64 in an inert
``<script type="application/octet-stream">`` block. The browser decodes a payload with
``DecompressionStream("deflate")`` when its frame is opened (viz/report_lazy.js, in the page's one
script: viz/browser_code.py's ``"report_file"`` bundle) and sets it up with the report's own code
(viz/report.js); a small report (:data:`OPEN_ALL_BYTES`) opens every frame at load.
One file rather than a directory with an index (tlparse's way): Note [One file, frames on demand].

Escaping: every string from the model reaches the page through the autoescaping templates
(:mod:`viz.markup`); a payload is base64 (``A-Z a-z 0-9 + / =``), so nothing in it can end its
``<script>`` element; inside, the drawings are :func:`viz.markup.json_block` JSON.
"""

from __future__ import annotations

import collections
import gc
import hashlib
import pathlib
import re
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Iterable, Optional, Union

from tracer.model import Capture, Frame
from tracer.model.profile import Profile
from tracer.model.profile_diff import ProfileDiff
from viz import panels
from viz.browser_code import bundle
from viz.code_view import frame_code_html
from viz.diff_view import decomposition_html
from viz.html import frame_html
from viz.markup import fragment, render
from viz.profile_view import graph_times, profile_html, time_facts
from viz.report_blocks import ReportStats, decode_payload, encode_payload, payload_block
from viz.report_diffs import diff_plan, place_diffs, render_diffs
from viz.report_graphs import DrawingCache, canvas_css, frame_graphs, report_data
from viz.report_info import report_info

__all__ = ["OPEN_ALL_BYTES", "Payloads", "ReportStats", "decode_payload", "encode_payload", "expand", "export_html",
           "frame_payload", "payloads", "write_report"]

# Note [One file, frames on demand]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Why one file and not a directory with an index (tlparse's way): a report is something people send
# (attach to a bug, drop in a chat); one file stays whole when it is mailed, uploaded or opened from
# a download folder, and a page opened from ``file://`` cannot fetch its sibling files in every
# browser anyway. Why it still opens in a second: what the browser parses and lays out at load is the
# overview and one line per frame; a frame's HTML and drawings (most of the bytes: a 12-layer training
# step is about 1 MB of them) stay an inert base64 string until that frame is opened, and zlib makes
# them about 7 times smaller on disk. Why the decoded payload is the eager report's frame section with
# its own drawings block: the page's script then draws it with the very code that draws every other
# report (viz/report.js setUpReports), nothing is rendered twice or in two ways. Frame by frame: one
# frame's payload is built and compressed before the next is built (only the compressed payloads wait
# for the page to be written, about a seventh of the HTML), and equal graphs are laid out once (Note
# [Drawings of equal graphs] in viz/report_graphs.py).

OPEN_ALL_BYTES = 512 * 1024  # a report whose payloads are smaller (compressed) opens every frame at load
_BLOCK = re.compile(r'<script type="application/octet-stream" class="ds-payload" data-frame="([0-9a-z-]+)" '
                    r'data-encoding="deflate"(?: data-parts="([0-9 ]*)")?>([A-Za-z0-9+/=]*)</script>')
_PART = re.compile(r'\n?<script type="application/octet-stream" class="ds-part" data-part="([0-9]+)" '
                   r'data-encoding="deflate">([A-Za-z0-9+/=]*)</script>')

# Note [Equal parts of payloads stored once]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Most of a frame's payload is its drawings block and its nodes' facts (for a 12-layer training frame
# 0.57 and 1.37 MB of 2.4 MB), and those are equal whenever the frames' graphs are (every rank of a
# job, each step compiled again: Note [Drawings of equal graphs]); only the frame's own section
# (its compile id, its code) differs. So a frame payload is cut in three at fixed places of its
# template: the head (the section, up to the drawings block's opening tag) stays in the frame's own
# block; the drawings JSON, and the rest (the facts block and the closing tags), are *parts*, each
# compressed once per distinct text (keyed by its pieces' SHA-256 digests, ``_Parts``) and written once, as a
# ``<script class="ds-part" data-part="N">`` block; the frame's block names its parts in order
# (``data-parts="N M"``) and its HTML is its head followed by them, exactly the text one block held
# before (``frame_payload``). Compressing 64 equal 12-layer frames then costs 64 heads and 2 parts,
# and the file holds them once.
_DATA, _INFO = "\ue000ds-drawings\ue000", "\ue000ds-node-info\ue000"  # cut marks (the template's, after the body)


def _frame_template() -> tuple[str, str, str, str]:
    """The text of report_frame.html.j2 around its body, drawings and facts, rendered once: the body goes in
    as it is (a fragment), so the frame's HTML is these pieces and the three joined, and its text is not
    searched for the cut marks (a frame's body is megabytes; a mark in it would widen it to 2 bytes a character)."""
    global _TEMPLATE
    if _TEMPLATE is None:
        html = render("report_frame.html.j2", body=fragment(_BODY), data=fragment(_DATA), info=fragment(_INFO))
        before, _, rest = html.partition(_BODY)
        rest, _, end = rest.rpartition(_INFO)
        after, _, mid = rest.rpartition(_DATA)
        _TEMPLATE = (before, after, mid, end)
    return _TEMPLATE


_BODY = "\ue000ds-body\ue000"
_TEMPLATE: Optional[tuple[str, str, str, str]] = None


class _Parts:
    """The parts written so far (Note [Equal parts of payloads stored once]): key -> number. A part
    comes as pieces (the drawings JSON alone; the facts block between the template's text around it)
    and its key is the tuple of the pieces' SHA-256 digests, each computed once per string object: a
    repeated frame's drawings and facts blocks are the very strings the caches of viz/report_graphs.py
    and viz/report_info.py handed out before, so they are not hashed again (a string cannot change)."""

    def __init__(self) -> None:
        self.known: dict[tuple[bytes, ...], int] = {}
        self._digests: dict[int, tuple[str, bytes]] = {}  # id -> (the string, held so the id stays its, digest)

    def _digest(self, text: str) -> bytes:
        got = self._digests.get(id(text))
        if got is not None and got[0] is text:
            return got[1]
        digest = hashlib.sha256(text.encode("utf-8")).digest()
        if len(text) > 4096:  # only long texts are worth remembering (the small ones are new strings each frame)
            if len(self._digests) >= 8:
                self._digests.pop(next(iter(self._digests)))
            self._digests[id(text)] = (text, digest)
        return digest

    def add(self, pieces: tuple[str, ...], blocks: list[str], stats: "ReportStats") -> int:
        key = tuple(self._digest(p) for p in pieces)
        n = self.known.get(key)
        if n is None:
            n = self.known[key] = len(self.known)
            p = encode_payload("".join(pieces))
            stats.payload_bytes += len(p)
            blocks.append(f'<script type="application/octet-stream" class="ds-part" data-part="{n}" '
                          f'data-encoding="deflate">{p}</script>')
        return n


def frame_payload(cap: Capture, frame: Frame, cache: Optional[DrawingCache] = None,
                  facts: Optional[dict[bytes, str]] = None, profile: Optional[Profile] = None) -> str:
    """The HTML a frame's payload holds: its section as the eager report shows it (Code tab
    included) inside a ``.ds-report`` of its own with its drawings block and its nodes' facts for
    the inspector (viz/report_info.py, Note [One inspector] in viz/inspector.py); with ``profile``,
    graphs coloured by time and each node's time in the inspector (viz/profile_view.py)."""
    head, data, rest = _frame_pieces(cap, frame, cache, facts, profile)
    return head + data + "".join(rest)


def _frame_pieces(cap: Capture, frame: Frame, cache: Optional[DrawingCache], facts: Optional[dict[bytes, str]],
                  profile: Optional[Profile]) -> tuple[str, str, tuple[str, str, str]]:
    """``frame_payload``'s HTML cut at Note [Equal parts of payloads stored once]: (head, drawings, rest),
    the rest as its three pieces (the template's text, the facts block, the template's text)."""
    times = [graph_times(profile, frame)] if profile is not None else None
    data, (graphs,) = report_data([frame], cache, times)
    extra = (lambda f, kind, node: time_facts(profile, f, kind, node)) if profile is not None else None
    body = frame_html(frame, graphs, frame_code_html(cap, frame), cache=cache)
    before, after, mid, end = _frame_template()
    head = before + body + after
    digest = cache.nodes_digest if cache is not None else None
    return head, data, (mid, report_info([frame], facts, extra, digest), end)


def payloads(page: str) -> dict[str, str]:
    """Frame key -> decoded HTML of every payload in a written report's text (tests, tools)."""
    parts = _parts_of(page)
    return {m.group(1): _whole(m, parts) for m in _BLOCK.finditer(page)}


def expand(page: str) -> str:
    """A written report's text with each payload block replaced by its decoded HTML (and the parts'
    blocks it named removed): what the page shows once every frame is open, for reading in Python."""
    parts = _parts_of(page)
    return _PART.sub("", _BLOCK.sub(lambda m: _whole(m, parts), page))


def _parts_of(page: str) -> dict[str, str]:
    return {m.group(1): decode_payload(m.group(2)) for m in _PART.finditer(page)}


def _whole(m: re.Match, parts: dict[str, str]) -> str:
    """A payload block's HTML: its own text, then its parts' (Note [Equal parts of payloads stored once])."""
    try:
        return decode_payload(m.group(3)) + "".join(parts[n] for n in (m.group(2) or "").split())
    except KeyError as e:
        raise ValueError(f"payload {m.group(1)!r} names part {e} that the page does not hold") from None


class Payloads:
    """The payload and part blocks of one page, in page order (``blocks``), with the parts written once
    (Note [Equal parts of payloads stored once]); ``stats`` counts what they hold once ``blocks`` is
    read. The one-file report and the job page (viz/job_page.py) write their blocks through it."""

    def __init__(self, stats: Optional[ReportStats] = None) -> None:
        self._blocks: list[Union[str, Future, list[str]]] = []  # a list: a reserved place (``reserve``)
        self.parts = _Parts()
        self.stats = stats if stats is not None else ReportStats(pathlib.Path())
        self._pool: Optional[ThreadPoolExecutor] = None
        self._waiting: collections.deque[Future] = collections.deque()

    @property
    def blocks(self) -> list[str]:
        """Every block in page order, each frame's head compressed by now (Note [Heads compressed beside rendering])."""
        for i, b in enumerate(self._blocks):
            if isinstance(b, Future):
                block, n = b.result()
                self.stats.payload_bytes += n
                self._blocks[i] = block
        if self._pool is not None:
            self._pool.shutdown()
            self._pool, self._waiting = None, collections.deque()
        if any(isinstance(b, list) for b in self._blocks):
            self._blocks = [x for b in self._blocks for x in (b if isinstance(b, list) else [b])]  # type: ignore[union-attr]
        return self._blocks  # type: ignore[return-value]  # every Future replaced above

    def reserve(self) -> list[str]:
        """A place in page order for blocks made later (the diffs: Note [Diffs rendered beside their later
        frame] in viz/report_diffs.py): the caller extends the list returned before ``blocks`` is read."""
        slot: list[str] = []
        self._blocks.append(slot)
        return slot

    def add(self, key: str, html: str, shared: bool = False) -> None:
        """Payload ``key`` holding ``html``; ``shared``: stored as a part, once however many payloads
        hold the same text (each of them then is an empty block naming it)."""
        p = encode_payload("" if shared else html)
        self.stats.payload_bytes += len(p)
        at = len(self._blocks)
        self._blocks.append("")  # the block before the part it is the first to name
        self._blocks[at] = payload_block(key, p, [self.parts.add((html,), self._blocks, self.stats)] if shared else [])

    def frame(self, key: str, cap: Capture, frame: Frame, cache: Optional[DrawingCache], facts: Optional[dict[bytes, str]],
              profile: Optional[Profile] = None, before: str = "") -> None:
        """``frame``'s payload (:func:`frame_payload`, after ``before``) as ``key``, drawings and facts as parts."""
        head, data, rest = _frame_pieces(cap, frame, cache, facts, profile)
        head = before + head
        self.stats.frames, self.stats.html_bytes = self.stats.frames + 1, self.stats.html_bytes + len(head) + len(data) + sum(map(len, rest))
        at = len(self._blocks)
        self._blocks.append("")  # the frame's block before the parts it is the first to name
        parts = [self.parts.add((data,), self._blocks, self.stats), self.parts.add(rest, self._blocks, self.stats)]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="dynascope-zlib")
        self._blocks[at] = job = self._pool.submit(_frame_block, key, head, parts)
        self._waiting.append(job)
        if len(self._waiting) > _HEADS_WAITING:  # Note [Heads compressed beside rendering]: a few heads held at most
            self._waiting.popleft().result()


# Note [Heads compressed beside rendering]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A frame's head (its section up to the drawings: tables, guards, every graph's code) differs per
# frame, so each is compressed, about a fifth of what a repeated frame costs (0.7 MB for a 12-layer
# training frame). zlib lets go of the GIL while it deflates, so each head is compressed in one
# worker thread while the next frame is rendered: on a machine with a free core the report's wall
# time loses that part. The bytes are the same (zlib is deterministic; each block keeps its place in
# page order, its parts numbered when the frame was rendered); at most ``_HEADS_WAITING`` heads wait.
_HEADS_WAITING = 4


def _frame_block(key: str, head: str, parts: list[int]) -> tuple[str, int]:
    """A frame's payload block and its payload's length (Note [Heads compressed beside rendering])."""
    p = encode_payload(head)
    return payload_block(key, p, parts), len(p)


def _entry(frame: Frame, key: str) -> dict[str, object]:
    """What the page's folded line of a frame shows: plain strings and counts (the section keeps no
    model object, Note [One capture at a time])."""
    graphs = frame_graphs(frame) if frame.has_graph else []
    return {"frame": {"compile_id": frame.compile_id, "code": frame.code, "status": frame.status}, "key": key,
            "graphs": len(graphs), "nodes": sum(len(g.nodes) for _, _, g, _ in graphs),
            "problems": len(frame.problems), "guards": len(frame.guards)}


# Note [Letting a frame go]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# A fully read log holds several times its bytes (parsed nodes, guards); the report needs one frame's
# at a time. With ``release`` (the CLI, whose captures nobody else reads), a frame's graphs and guards
# are emptied after its last use: its payload built and what the overview counts of them read, and the
# last recompile diff that reads it rendered (Note [Diffs rendered beside their later frame] in
# viz/report_diffs.py). Memory then holds the lazily loaded log plus the frames a later diff still
# reads. ``export_html`` never lets go: the capture is the caller's.


# Note [One capture at a time]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``write_report`` takes its captures from an iterable and is done with each before it asks for the
# next: what it keeps of a capture (its section) is rendered text, strings and counts, never a model
# object, and no name of the loop still refers to the capture while the next one is read. So with
# ``caps`` a generator (``dynascope report`` of a directory of rank logs, viz/cli.py) the process
# holds one rank's capture, the pages' compressed payloads and the sections: a job of many big ranks
# needs the memory of its largest rank, not of all of them. Dropping the last reference is not enough:
# rendering leaves reference cycles that name the capture (a jinja2 render ``Context`` holds its
# variables, ``cap`` among them, and is itself in a cycle), and after a lazy field's first read the
# loader has moved every object to the oldest generation (Note [No cyclic GC while a log is read] in
# tracer/_no_gc.py), which only a full collection visits. So with ``release`` (captures nobody else
# reads) each capture is followed by one ``gc.collect()``: it walks one rank's objects once, a small
# part of rendering them, and frees the rank before the next is read (not after the last of a list: none is read after it).


def write_report(path: Union[str, pathlib.Path], caps: Iterable[Capture], *, title: str,
                 headings: Union[list[str], Callable[[Capture], str], None] = None,
                 release: bool = False, profile: Optional[Profile] = None, warm: Optional[Callable] = None) -> ReportStats:
    """Write ``caps`` as one report file at ``path`` (Note [One file, frames on demand]); ``headings``:
    one ``<h1>`` per capture (a directory of per-rank logs), as a list or made from each capture
    (``lambda cap: cap.fn``), none for one capture. ``release``: empty each frame's graphs and guards
    once its payload is built (Note [Letting a frame go]): only for captures nobody reads afterwards.
    With headings, ``caps`` is read one capture at a time (Note [One capture at a time]). ``profile``:
    the Profile of the one capture, shown before its overview and on its graphs. ``warm(cache, facts)``
    runs before the first frame with a graph renders and may only add cache entries (viz/report_warm.py)."""
    if headings is None:
        caps = list(caps)
    one = not headings and len(caps) == 1  # type: ignore[arg-type]
    stats = ReportStats(pathlib.Path(path), headings=list(headings) if isinstance(headings, list) else [])
    cache, facts = DrawingCache(stable=True), {}  # facts: viz/report_info.py's blocks of repeated frames
    sections: list[dict[str, object]] = []
    out_blocks = Payloads(stats)  # payload and part elements, in page order
    ci = -1
    for cap in caps:  # not enumerate(): its reused result tuple would hold the last capture while the next is read
        ci += 1
        heading = "" if not headings else headings[ci] if isinstance(headings, list) else headings(cap)
        if callable(headings):
            stats.headings.append(heading)
        sections.append(_section(cap, "" if one else f"{ci}-", heading, out_blocks, cache, facts, release, profile, warm))
        del cap  # See Note [One capture at a time]
        if release and (not isinstance(caps, list) or ci < len(caps) - 1):
            gc.collect()  # the cycles its rendering left (jinja's render contexts name it): See Note [One capture at a time]
    _write_page(stats, title, sections, out_blocks.blocks)  # every head compressed: stats.payload_bytes is whole
    stats.layouts_reused = cache.hits
    return stats


def _write_page(stats: ReportStats, title: str, sections: list[dict[str, object]], blocks: list[str]) -> None:
    """Write the page at ``stats.path``: ``sections``, the script, the ``blocks`` (also viz/report_ranks.py's)."""
    tmp = stats.path.with_name(stats.path.name + ".part")  # never a half-written report at ``path``
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(render("report_file.html.j2", title=title, sections=sections,
                             open_all=stats.payload_bytes <= OPEN_ALL_BYTES, canvas_css=fragment(canvas_css())))
            out.write(f"\n<script>{bundle('report_file')}</script>")  # before the payloads: viz/report_lazy.js
            for block in blocks:
                out.write("\n" + block)
            out.write("\n</body></html>\n")
        tmp.replace(stats.path)
    except BaseException:  # except: re-raises, after removing the partial file
        tmp.unlink(missing_ok=True)
        raise


def _section(cap: Capture, prefix: str, heading: str, out: Payloads, cache: DrawingCache, facts: dict[bytes, str],
             release: bool, profile: Optional[Profile] = None, warm: Optional[Callable] = None) -> dict[str, object]:
    """One capture's part of the page: its payloads added to ``out``, its visible section returned (text, strings and counts only: Note [One capture at a time])."""
    problems_at, (after, going) = len(cap.problems), diff_plan(cap)  # See Note [Diffs rendered beside their later frame]
    diff_blocks, diffs = out.reserve(), []  # the diffs' blocks come first, made as their frames are rendered
    decomposition = None  # an export record's run_decompositions() diff, stored like a recompile's
    if cap.export is not None and cap.export.decomposition is not None:
        d, key = cap.export.decomposition, f"{prefix}decomposition"
        out.add(key, decomposition_html(cap, heading=False))
        decomposition = {"a": d.a, "b": d.b, "summary": d.summary, "key": key}
    entries, counts = [], []
    for fi, f in enumerate(cap.frames):  # ``warm``: its graphs parsed here meanwhile (viz/report_warm.py)
        entry = _entry(f, f"{prefix}{fi}")
        if warm is not None and entry["graphs"]:
            warm(cache, facts)
        out.frame(entry["key"], cap, f, cache, facts, profile)
        entries.append(entry)
        counts.append((panels.ops(f.graph), entry["guards"]))
        diffs += render_diffs(cap, after.get(fi, []), release)  # once the later of the frames they read is rendered
        for j in going.get(fi, []) if release else []:
            cap.frames[j].let_go()
    if not cap.frames:  # diffs that read no frame of cap: diff_plan puts them with frame 0
        diffs += render_diffs(cap, after.get(0, []), release)
    recompiles, blocks = place_diffs(cap, diffs, problems_at, out.stats, prefix)
    diff_blocks.extend(blocks)
    return {"heading": heading, "recompiles": recompiles, "decomposition": decomposition, "frames": entries,
            "overview": fragment((profile_html(profile) if profile is not None else "")
                                 + panels.overview_html(cap, counts, [e["key"] for e in entries]))}


def export_html(cap: Union[Capture, Profile, ProfileDiff], path: Union[str, pathlib.Path]) -> pathlib.Path:
    """Write ``cap`` as one standalone HTML file that opens in any browser, no kernel, with each frame's
    Code tab; return its path. The overview is up front, each frame stored compressed and shown when
    opened (all of them at load when the report is small); the capture is left as it is. A
    :class:`tracer.Profile` writes its capture's report with the profile's tables first, each graph
    coloured by time and each node's time in the inspector; a :class:`tracer.ProfileDiff` its tables
    (:mod:`viz.profile_diff_view`)."""
    if isinstance(cap, ProfileDiff):
        from viz.profile_diff_view import export_profile_diff_html

        return export_profile_diff_html(cap, path)
    if isinstance(cap, Profile):
        if cap.capture is None:
            raise ValueError("this Profile holds no capture (nothing to draw)")
        return write_report(path, [cap.capture], title=cap.fn or "profile", profile=cap).path
    return write_report(path, [cap], title=cap.fn or "capture").path
