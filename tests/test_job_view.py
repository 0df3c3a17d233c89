"""What the job view draws for each kind of finding (Note [Kinds of divergence] in tracer/model/job.py),
in the static page (``viz.job_html``: each view a compressed payload whose ranks' frames are folded
lines naming the frames' own payloads) and in the widget (each view sent when the finding is opened,
``JobView.show_side``, the same lines, each frame sent when its line is opened, ``JobView.show_frames``):
each graph box of a view,
once its frames are opened, draws the graph torch recorded for that rank's frame (the browser side is
tests/test_job_browser.py)."""

from __future__ import annotations

import json
import re

import pytest
import torch
from test_job import _step

import tracer
import viz
from tracer.job import find_divergence
from tracer.model import DIVERGENCE_KINDS, Job
from viz.browser_code import bundle
from viz.job_view import finding_frames as view_frames
from viz.report_file import payloads
from viz.report_info import unintern

_SIDE = '<details class="ds-sidebyside" id="ds-side-'
_FRAME = re.compile(r'<div class="ds-side-frame" data-frame="|<details class="ds-lazy-frame ds-side-frame[^"]*" data-frame="')
_LAZY = re.compile(r'<details class="ds-lazy-frame ds-side-frame[^"]*" data-frame="([^"]*)" data-payload="([^"]*)"( open)?>'
                   r'<summary>.*?</summary><div class="ds-lazy-body"></div></details>', re.S)
_BLOCK = re.compile(r'<script type="application/json" class="ds-drawings">(.*?)</script>', re.S)
_BOX = re.compile(r'class="ds-graphbox" data-graph="(\d+)"')


def _scaled(x, n):
    return x * n


def _gated(x, n):
    return x.sin() if n > 0 else x.cos()


def _collective_caps():
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol

    def f(x):
        return funcol.all_reduce(x * 2, "sum", dist.group.WORLD) + 1

    def g(x):
        return x * 2 + 1

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        return tracer.capture(f, torch.randn(4)), tracer.capture(g, torch.randn(4))
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def jobs() -> dict[str, Job]:
    """Two-rank jobs whose findings cover every kind, each found by find_divergence as load_job does."""
    pairs = {
        "break": (tracer.capture(_step(False), torch.randn(3)), tracer.capture(_step(True), torch.randn(3))),
        "scaled": (tracer.capture(_scaled, torch.randn(3), 2), tracer.capture(_scaled, torch.randn(3), 3)),
        "gated": (tracer.capture(_gated, torch.randn(3), 1), tracer.capture(_gated, torch.randn(3), 2)),
        "recompile": (tracer.capture(_scaled, torch.randn(3), 2, more_calls=[(torch.randn(5), 2)]),
                      tracer.capture(_scaled, torch.randn(3), 2)),
        "collective": _collective_caps(),
    }
    out = {}
    for name, (a, b) in pairs.items():
        found, checked = find_divergence({0: a, 1: b})
        out[name] = Job.of({0: a, 1: b}, divergence=found, checked=checked)
    return out


def _sides(page: str) -> list[str]:
    """Each side-by-side view of a static job page, in finding order: its payload, decoded."""
    views = payloads(page)
    return [views[f"side-{i}"] for i in range(len([k for k in views if k.startswith("side-")]))]


def _opened(page: str, side: str) -> str:
    """A static page's view with each rank's frame opened: its folded line replaced by the frame's
    payload (what report_lazy.js puts in the line's body), in a ``ds-side-frame`` of that id."""
    views = payloads(page)
    return _LAZY.sub(lambda m: f'<div class="ds-side-frame" data-frame="{m.group(1)}">{views[m.group(2)]}</div>', side)


def _columns(side: str) -> dict[int, tuple[str, list[tuple[str, list[list[str]]]]]]:
    """rank -> (its column's markup, [(compile id, ids of the boxes drawn in each graph box of that
    frame's report)]), read from the drawings block report.js draws them from: the widget's view has
    one for the whole view, a static view's opened frame (:func:`_opened`) its own."""
    whole = 'class="ds-report ds-job-side"' in side
    shared = json.loads(_BLOCK.findall(side)[-1])["graphs"] if whole else None
    out = {}
    for col in side.split('<div><h4>rank ')[1:]:
        rank = int(re.match(r"\d+", col).group())
        frames = []
        for chunk in _FRAME.split(col)[1:]:
            graphs = shared if whole else json.loads(_BLOCK.findall(chunk)[0])["graphs"]
            frames.append((chunk.split('"', 1)[0], [[row[0] for row in graphs[int(i)]["b"]] for i in _BOX.findall(chunk)]))
        out[rank] = (col, frames)
    return out


def _names(graph) -> list[str]:
    return [n.name for n in graph.nodes]


def _finding(job: Job, kind: str) -> tuple[int, object]:
    return next((i, d) for i, d in enumerate(job.divergence) if d.kind == kind)


def _widget_opened(view, side: str) -> str:
    """:func:`_opened` for a view the widget sent: each line replaced by what the widget sends when it
    is opened (``JobView.show_frames``)."""
    return _LAZY.sub(lambda m: f'<div class="ds-side-frame" data-frame="{m.group(1)}">{view.show_frames([m.group(2)])[m.group(2)]}</div>', side)


def _both(job: Job) -> list[list[str]]:
    """The side-by-side views of the static page and those the widget sends when each is opened, with
    each rank's frame opened."""
    view = viz.JobView(job)
    page = viz.job_html(job)
    return [[_opened(page, side) for side in _sides(page)],
            [_widget_opened(view, view.show_side(i)) for i in range(len(job.divergence))]]


def test_every_kind_of_finding_is_covered(jobs):
    assert {d.kind for j in jobs.values() for d in j.divergence} == set(DIVERGENCE_KINDS)


def test_status_side_draws_the_compiled_frame_and_the_attempt_after_the_restart(jobs):
    job = jobs["break"]
    i, d = _finding(job, "status")
    plain, broken = job.rank(0), job.rank(1)
    assert d.compile_ids == {0: "0/0", 1: "0/0"} and broken.frame("0/0").status == "restarted"
    after = [f for f in broken.frames if f.compile_id.startswith("0/0_")]  # torch's attempt 1 of compile 0/0
    assert [f.status for f in after] == ["compiled"]
    for sides in _both(job):
        cols = _columns(sides[i])
        text0, ((cid0, drawn0),) = cols[0]
        assert text0.startswith("0, frame 0/0</h4>") and cid0 == "0/0"
        assert drawn0[0] == _names(plain.frame("0/0").graph)  # the root graph first, then AOT's
        text1, ((cid1, drawn1), (cid2, drawn2)) = cols[1]
        assert (cid1, drawn1, cid2) == ("0/0", [], after[0].compile_id)  # restarted: no graph box
        assert "no graph: Dynamo handed nothing to the backend" in text1 and "graph_break" in text1
        assert f"then, on rank 1: {after[0].compile_id}" in text1
        assert drawn2[0] == _names(after[0].graph)
        assert "Graphs (0)" not in sides[i]


def test_frames_side_draws_the_frame_one_rank_has(jobs):
    job = jobs["break"]
    i, d = _finding(job, "frames")
    only = d.compile_ids[1]
    assert d.compile_ids[0] == "" and only not in {f.compile_id for f in job.ranks[0].frames}  # the summary
    for sides in _both(job):
        cols = _columns(sides[i])
        assert cols[0][1] == [] and f"no frame {only} on this rank" in cols[0][0]
        ((cid, drawn),) = cols[1][1]
        assert cid == only and drawn[0] == _names(job.rank(1).frame(only).graph)


@pytest.mark.parametrize("name,kind", [("scaled", "graph"), ("scaled", "guards"), ("gated", "guards")])
def test_diff_findings_show_the_diff_and_both_frames_drawn(jobs, name, kind):
    job = jobs[name]
    i, d = _finding(job, kind)
    assert d.diff is not None and d.compile_ids == {0: "0/0", 1: "0/0"}
    if name == "gated":  # n > 0 either way: the same graph, only the guard on n differs
        assert [x.kind for x in job.divergence] == ["guards"] and not any(d.diff.graphs)
    for sides in _both(job):
        side = sides[i]
        assert "diff 0/0 → 0/0" in side and "each rank's frame report, every graph drawn" in side
        cols = _columns(side)
        for r in (0, 1):
            ((cid, drawn),) = cols[r][1]
            assert cid == "0/0" and drawn[0] == _names(job.rank(r).frame("0/0").graph)
        if kind == "graph":  # the diff's own two pictures (static SVG): a box per node of each rank's graph
            svgs = re.findall(r"<svg.*?</svg>", side.split("each rank's frame report")[0], re.S)
            for r, svg in zip((0, 1), svgs[:2], strict=True):  # the root graphs' pair first, then AOT's
                boxes = re.findall(r'<g class="node[^"]*" data-node="([^"]*)"', svg)
                assert boxes == _names(job.rank(r).frame("0/0").graph)


def test_recompiles_side_draws_the_recompiled_frame(jobs):
    job = jobs["recompile"]
    i, d = _finding(job, "recompiles")
    assert d.compile_ids == {0: "0/1", 1: ""}
    for sides in _both(job):
        cols = _columns(sides[i])
        ((cid, drawn),) = cols[0][1]
        assert cid == "0/1" and drawn[0] == _names(job.rank(0).frame("0/1").graph)
        assert cols[1][1] == [] and "no frame 0/1 on this rank" in cols[1][0]


def test_collectives_side_draws_the_graph_with_the_collective(jobs):
    job = jobs["collective"]
    i, d = _finding(job, "collectives")
    assert d.compile_ids == {0: "0/0", 1: ""}  # rank 1's graph has no collective: no frame is named
    for sides in _both(job):
        cols = _columns(sides[i])
        ((cid, drawn),) = cols[0][1]
        assert drawn[0] == _names(job.rank(0).frame("0/0").graph)
        assert any("all_reduce" in n.target for n in job.rank(0).frame("0/0").graph.nodes)
        # rank 1 has a frame 0/0, without the collective: the side does not claim it has no frame
        assert cols[1][1] == [] and "names no frame of this rank (it has a frame 0/0" in cols[1][0]


def test_static_page_carries_each_view_compressed_and_draws_with_one_script(jobs):
    job = jobs["break"]
    page = viz.job_html(job)
    script = bundle("report_file")  # the one-file report's script: report.js and report_lazy.js
    assert page.count("<script>") == 2 and page.count(script) == 1  # the script, and the link opener
    first_payload = page.index('class="ds-payload"')
    last_section = page.rindex('<section class="ds-rank-report"')
    assert last_section < page.index(script) < first_payload  # after what it sets up, before the payloads
    # the visible page: each finding folded and empty, each rank's frames one folded line each
    assert 'class="ds-drawings"' not in page.split('class="ds-payload"')[0]
    for i in range(len(job.divergence)):
        assert f'<details class="ds-sidebyside ds-lazy-frame" id="ds-side-{i}" data-payload="side-{i}"' in page
    for r in job.ranks:
        for k, f in enumerate(job.rank(r).frames):
            assert f'id="ds-rank-{r}-{f.compile_id}" data-payload="r{r}-{k}"' in page
            frame_view = payloads(page)[f"r{r}-{k}"]  # what the report's own frame payload holds
            assert frame_view.count('class="ds-drawings"') == frame_view.count('class="ds-node-info"') == 1


def test_widget_sends_a_view_when_it_is_opened(jobs):
    job = jobs["break"]
    view = viz.JobView(job)
    assert "<script>" not in view.grid.html  # the widget's markup runs nothing: its module draws it
    assert 'class="ds-drawings"' not in view.grid.html and view.grid.sides == {}
    assert view.grid.html.count('class="ds-sidebyside ds-lazy-frame"') == len(job.divergence)
    view.grid.want = {"side": 1, "n": 1}  # what job_grid.js sends when finding 1 is opened
    page = viz.job_html(job)
    assert list(view.grid.sides) == ["1"]
    # the view sent is the static page's: the diff (if any) and one folded line per rank's frame, no drawing
    sent = view.grid.sides["1"]
    assert sent == _sides(page)[1] and 'class="ds-drawings"' not in sent and 'class="ds-node-info"' not in sent
    keys = [key for _, key, _ in _LAZY.findall(sent)]
    ((_, whole),) = viz.job_view.sides_html(job, [1])  # the view with every frame drawn, as it was sent before
    assert keys and len(json.dumps(view.grid.get_state(["sides"]))) < len(whole) / 4
    assert view.grid.frame == {}
    # a rank's frame line opened: job_grid.js asks with its key, the answer is that frame only, the static page's
    view.grid.want = {"frames": keys[:1], "n": 7}
    assert view.grid.frame == {"n": 7, "frames": {keys[0]: payloads(page)[keys[0]]}}
    assert _BLOCK.findall(view.grid.frame["frames"][keys[0]])  # its drawings block: report.js draws it
    view.grid.want = {"frames": ["r9-0"], "n": 8}  # no such frame: an error line, nothing else
    assert view.grid.frame["frames"] == {} and "no frame 'r9-0'" in view.grid.frame["error"]
    with pytest.raises(KeyError, match="no frame 'r0-99'"):
        view.show_frames(["r0-99"])
    view.grid.want = {"side": 99, "n": 2}  # no such finding: nothing sent
    assert list(view.grid.sides) == ["1"]
    with pytest.raises(IndexError, match="no finding 99"):
        view.show_side(99)
    esm = view.grid._esm
    # report.js's set-up, called on the widget's own element (viz/browser_code.py "job_grid" bundle)
    assert "function dsReport(" in esm and "setUpReports(el)" in esm and esm.count("export default") == 1
    assert 'document.querySelectorAll(".ds-report")' not in esm  # only its own element's reports


def test_side_views_carry_the_inspector_facts_of_their_nodes(jobs):
    """The same facts the explorer's inspector and the report show (viz.node_info, Note [One inspector])."""
    job = jobs["scaled"]
    i, d = _finding(job, "graph")
    view = viz.JobView(job)
    col = view.show_side(i).split("<div><h4>rank 0")[1].split("<div><h4>rank ")[0]
    ((cid, key, _),) = _LAZY.findall(col)
    frame_html = view.show_frames([key])[key]  # rank 0's frame, as sent when its line is opened
    (block,) = re.findall(r'<script type="application/json" class="ds-node-info">(.*?)</script>', frame_html, re.S)
    facts = json.loads(block)
    graphs = json.loads(_BLOCK.findall(frame_html)[0])["graphs"]
    assert len(facts["graphs"]) == len(graphs)  # one entry per drawn graph, in the drawings' numbering
    frame0 = job.rank(0).frame("0/0")
    assert cid == "0/0"
    index = int(_BOX.findall(frame_html)[0])  # the root graph box: the first graph drawn
    drawn = [row[0] for row in graphs[index]["b"]]
    assert drawn
    for name in drawn:
        assert unintern(facts["graphs"][index][name], facts["values"]) == json.loads(json.dumps(
            viz.node_info(frame0, "", name), default=str))


def test_static_views_name_their_ranks_frames_and_hold_no_drawings(jobs):
    """Note [A rank's frame in a finding's view on demand]: a static view holds the diff and one folded
    line per rank's frame naming that frame's payload in the rank's report; the frames are the view
    (opened with it) only when there is no diff; two findings on one frame pair store one view."""
    for name, job in jobs.items():
        page = viz.job_html(job)
        views = payloads(page)
        for i, d in enumerate(job.divergence):
            side = views[f"side-{i}"]
            assert 'class="ds-drawings"' not in side and 'class="ds-node-info"' not in side, name
            lines = _LAZY.findall(side)
            for r in d.ranks:  # each line names the payload of that very frame in rank r's report
                cap = job.rank(r)
                col = side.split(f"<div><h4>rank {r}")[1].split("<div><h4>rank ")[0]
                named = [(cid, key) for cid, key, _ in _LAZY.findall(col)]
                assert named == [(f.compile_id, f"r{r}-{cap.frames.index(f)}")
                                 for f in view_frames(d, r, cap)], (name, i, r)
                assert all(key in views for _, key in named)
            opened = sum(1 for _, _, o in lines if o)
            assert opened == (0 if d.diff is not None else sum(1 for r in d.ranks if view_frames(d, r, job.rank(r))))
    job = jobs["scaled"]  # its graph and guards findings carry one FrameDiff of one frame pair: one view
    (ig, _), (iu, _) = _finding(job, "graph"), _finding(job, "guards")
    page = viz.job_html(job)
    assert _sides(page)[ig] == _sides(page)[iu]
    blocks = re.findall(r'data-frame="side-(\d+)" data-encoding="deflate" data-parts="(\d+)"', page)
    assert len(blocks) == len(job.divergence) and blocks[ig][1] == blocks[iu][1]
