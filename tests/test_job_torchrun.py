"""A real ``torchrun --nproc_per_node=2`` DDP job on CPU (gloo): tracer.capture in each rank,
load_job on its per-rank JSONs and on its TORCH_TRACE directory,
the divergence rank 1's graph break makes, and the job page in Chromium."""

from __future__ import annotations

import pytest
from torchrun_job import forward_frames as _forward

import tracer
import viz
from tracer.job import find_divergence, rank_diff


@pytest.fixture
def job_dir(ddp_job_dir):
    return ddp_job_dir  # one torchrun run per session (conftest.py), shared with the JupyterLab job test


def test_each_rank_saves_its_capture_and_the_ddp_split(job_dir):
    caps = {r: tracer.Capture.load(str(job_dir / f"rank{r}.json")) for r in (0, 1)}
    for cap in caps.values():
        tracer.validate(cap)
        # The one thing not recorded exactly: a later piece's placeholder that the previous piece
        # produced (split_module's boundary value) has no Dynamo source, so the origin of a saved
        # value read from it is unknown (tracer/_torch/aot*: saved-value origins).
        assert [p for p in cap.all_problems() if not ("piece " in p and "has no source; origin unknown" in p)] == []
    (whole,) = _forward(caps[0], "compiled")
    # torch's own record of DDPOptimizer's split: one optimize_ddp_split_child entry per piece
    (log0,) = (job_dir / "trace").glob("*rank_0*.log")
    children = log0.read_text(encoding="utf-8").count('"optimize_ddp_split_child"')
    assert children == len(whole.pieces) == 2
    assert whole.graph == whole.pieces[0].graph and all(p.aot is not None for p in whole.pieces)
    # rank 1 broke the graph in forward: restarted, then two smaller graphs, none split
    assert [f.status for f in _forward(caps[1])] == ["restarted", "compiled"]


def test_load_job_reports_the_divergence_on_the_forward_frame(job_dir):
    job = tracer.load_job(str(job_dir))
    assert sorted(job.ranks) == [0, 1] and job.problems == []
    caps = {r: tracer.Capture.load(str(job_dir / f"rank{r}.json")) for r in (0, 1)}  # what each rank saved
    (whole,) = _forward(caps[0], "compiled")
    (status,) = [d for d in job.divergence if d.kind == "status"]
    assert status.compile_ids == {0: whole.compile_id, 1: whole.compile_id} and status.ranks == [0, 1]
    assert "compiled on rank 0, restarted" in status.message and "graph_break" in status.message
    (frames,) = [d for d in job.divergence if d.kind == "frames"]
    assert frames.compile_ids[0] == "" and frames.compile_ids[1] in {f.compile_id for f in job.ranks[1].frames}
    assert any("no collectives in the graphs" in line for line in job.checked)
    assert tracer.Job.from_json(job.to_json()) == job
    # every other frame both ranks made is the same code in two processes: no finding names it,
    # although the object ids in their guards differ (what rank_diff masks before tracer.diff)
    named = {cid for d in job.divergence for cid in d.compile_ids.values()}
    other = {f.compile_id: f for f in caps[1].frames}
    same = [f for f in caps[0].frames if f.compile_id not in named]
    assert [f.compile_id for f in same] == [f.compile_id for f in caps[0].frames if f.compile_id != whole.compile_id] != []
    assert all(not rank_diff(f, other[f.compile_id]) for f in same)
    assert any(tracer.diff(f, other[f.compile_id]).guards for f in same)  # torch's ids differ between the ranks


def test_load_job_on_the_torch_trace_directory(job_dir):
    """torch's own per-rank logs give the same findings as the captures the ranks saved."""
    from_logs = tracer.load_job(str(job_dir / "trace"))
    from_json = tracer.load_job(str(job_dir))
    assert from_logs.meta["loaded_from"] == "TORCH_TRACE" and sorted(from_logs.ranks) == [0, 1]
    assert [(d.kind, d.compile_ids) for d in from_logs.divergence] == [(d.kind, d.compile_ids) for d in from_json.divergence]
    # read lazily, each frame pair let go once compared: the findings of the two logs compared whole
    logs = {r: tracer.load_trace(str(p)) for r, p in enumerate(sorted((job_dir / "trace").glob("*rank_*.log")))}
    assert (from_logs.divergence, from_logs.checked) == find_divergence(logs)
    assert [[f.compile_id for f in s.frames] for s in from_logs.ranks.values()] == [
        [f.compile_id for f in c.frames] for c in logs.values()]
    assert [s.problems for s in from_logs.ranks.values()] == [c.all_problems() for c in logs.values()]


@pytest.mark.browser
def test_job_page_in_chromium(job_dir, tmp_path, browser):
    job = tracer.load_job(str(job_dir))
    (whole,) = _forward(job.rank(0), "compiled")
    page_file = viz.export_job_html(job, tmp_path / "job.html")
    page = browser.new_page()
    try:
        page.goto(page_file.as_uri())
        cell = page.locator(f'td.ds-divergent[data-rank="1"][data-frame="{whole.compile_id}"]')
        assert cell.count() == 1
        assert cell.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(255, 235, 233)"
        cell.locator("a").click()
        assert page.evaluate("location.hash") == f"#ds-rank-1-{whole.compile_id}"
        target = page.locator(f'[id="ds-rank-1-{whole.compile_id}"]')
        assert target.is_visible() and "restarted" in target.inner_text()
        page.locator('a.ds-rank[href="#ds-rank-0"]').click()
        assert page.locator("#ds-rank-0").is_visible()
        assert "2 pieces" in page.locator(f'td[data-rank="0"][data-frame="{whole.compile_id}"]').inner_text()
    finally:
        page.close()
