"""What the job view draws for each kind of finding (Note [Kinds of divergence] in tracer/model/job.py),
in the static page (``viz.job_html``: each view a compressed payload) and in the widget (each view sent
when the finding is opened, ``JobView.show_side``): every side-by-side view carries its own drawings
block and its nodes' facts, and each graph box of it draws the graph torch recorded for that rank's
frame (the browser side is tests/test_job_browser.py)."""

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
from viz.report_file import payloads
from viz.report_info import unintern

_SIDE = '<details class="ds-sidebyside" id="ds-side-'
_FRAME = '<div class="ds-side-frame" data-frame="'
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


def _columns(side: str) -> dict[int, tuple[str, list[tuple[str, list[list[str]]]]]]:
    """rank -> (its column's markup, [(compile id, ids of the boxes drawn in each graph box of that
    frame's report)]), read from the side's own drawings block: report.js draws exactly these."""
    (block,) = _BLOCK.findall(side)
    graphs = json.loads(block)["graphs"]
    out = {}
    for col in side.split('<div><h4>rank ')[1:]:
        rank = int(re.match(r"\d+", col).group())
        frames = [(chunk.split('"', 1)[0],
                   [[row[0] for row in graphs[int(i)]["b"]] for i in _BOX.findall(chunk)])
                  for chunk in col.split(_FRAME)[1:]]
        out[rank] = (col, frames)
    return out


def _names(graph) -> list[str]:
    return [n.name for n in graph.nodes]


def _finding(job: Job, kind: str) -> tuple[int, object]:
    return next((i, d) for i, d in enumerate(job.divergence) if d.kind == kind)


def _both(job: Job) -> list[list[str]]:
    """The side-by-side views of the static page and those the widget sends when each is opened."""
    view = viz.JobView(job)
    return [_sides(viz.job_html(job)), [view.show_side(i) for i in range(len(job.divergence))]]


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
    assert list(view.grid.sides) == ["1"] and view.grid.sides["1"] == _sides(viz.job_html(job))[1]
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
    side = viz.JobView(job).show_side(i)
    (block,) = re.findall(r'<script type="application/json" class="ds-node-info">(.*?)</script>', side, re.S)
    facts = json.loads(block)
    graphs = json.loads(_BLOCK.findall(side)[0])["graphs"]
    assert len(facts["graphs"]) == len(graphs)  # one entry per drawn graph, in the drawings' numbering
    frame0 = job.rank(0).frame("0/0")
    drawn = _columns(side)[0][1][0][1][0]  # rank 0's root graph box: the first graph drawn
    index = next(int(g) for g in _BOX.findall(side.split('<div><h4>rank ')[1]))
    for name in drawn:
        assert unintern(facts["graphs"][index][name], facts["values"]) == json.loads(json.dumps(
            viz.node_info(frame0, "", name), default=str))
