"""The Job view in JupyterLab + headless Chromium, on the per-rank captures of a real 2-rank torchrun job.

A notebook loads the job (``tracer.load_job``) and displays ``viz.JobView``; the test checks the
ranks x frames grid renders with the divergent cells marked (rank 1's graph break in ``forward``),
then clicks cells and a rank and checks the chosen rank's capture opens in the explorer at that
frame, and that a finding's "side by side" link opens its view: the kernel sends the view with one
folded line per rank's frame (the messages' bytes are measured on the kernel's websocket), then each
frame when its line is opened, and its graph is drawn. The
server is the one of tests/test_browser.py (its own port, token, root and settings; always shut down).
"""

from __future__ import annotations

import shutil

import pytest
from chromium import checked_page
from test_browser import ARTIFACTS, lab_page, notebook, open_and_run, serving
from torchrun_job import forward_frames

import tracer
from viz.job_view import frame_key, sides_html

# Note: ipywidgets shows a Dropdown entry with non-breaking spaces, so the compile id is read up to
# the first whitespace of any kind.

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

CELLS = [
    "import tracer, viz",
    "job = tracer.load_job('job')\nprint(job)",
    "view = viz.JobView(job)\nview",
]


@pytest.fixture
def lab(tmp_path, ddp_job_dir):
    (tmp_path / "job").mkdir()
    for r in (0, 1):
        shutil.copy(ddp_job_dir / f"rank{r}.json", tmp_path / "job" / f"rank{r}.json")
    with serving(tmp_path, "job.ipynb", notebook(CELLS)) as server:
        yield server


def _shown_frame(out) -> str:
    """The compile id the explorer's frame selector shows (its entry starts with the id)."""
    sel = out.locator(".widget-dropdown select").first
    return sel.evaluate("s => s.selectedOptions.length ? s.selectedOptions[0].textContent : ''").split()[0]


def _active_rank(out) -> str:
    return out.locator(".widget-toggle-button.mod-active").first.inner_text().strip()


def test_job_view_in_jupyterlab(lab, browser, ddp_job_dir):
    job = tracer.load_job(str(lab.root / "job"))  # what the notebook loads, to know what to expect
    (whole,) = forward_frames(job.rank(0), "compiled")  # rank 0's forward; rank 1 broke the graph there
    cid = whole.compile_id
    (status,) = [d for d in job.divergence if d.kind == "status"]
    assert status.compile_ids == {0: cid, 1: cid}
    named = {c for d in job.divergence for c in d.compile_ids.values()}
    # rank 1 only, named by no finding: the resume function after the break (compiled, so a graph is drawn)
    resumed = [f for f in job.ranks[1].frames if f.status == "compiled" and f.compile_id not in named][-1].compile_id
    assert resumed not in {f.compile_id for f in job.ranks[0].frames}
    assert "torch_dynamo_resume_in_forward" in job.ranks[1].frame(resumed).code

    page, errors, kernel_ready = lab_page(browser)
    received: list[str] = []  # every message the kernel sent the page, as text

    def on_ws(ws) -> None:
        if "/api/kernels/" in ws.url:
            ws.on("framereceived", lambda p: received.append(p if isinstance(p, str) else p.decode("utf-8", "replace")))
    page.on("websocket", on_ws)
    try:
        open_and_run(page, lab, "job.ipynb", kernel_ready)
        out = page.locator(".jp-Notebook .jp-Cell").nth(2)
        grid = out.locator(".ds-job table.ds-grid")
        grid.wait_for(timeout=240_000)

        # the grid: one row per rank, one column per compile id, the forward frame marked on both ranks
        assert grid.locator("tbody tr").count() == 2
        columns = grid.locator("thead th").all_inner_texts()[1:]
        assert columns == [f.compile_id for f in job.ranks[1].frames], columns  # rank 1 has every id rank 0 has
        for rank in (0, 1):
            cell = grid.locator(f'td[data-rank="{rank}"][data-frame="{cid}"]')
            assert "ds-divergent" in cell.get_attribute("class")
            assert cell.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(255, 235, 233)"
            assert "restarted" in cell.get_attribute("title")
        assert "ds-absent" in grid.locator(f'td[data-rank="0"][data-frame="{resumed}"]').get_attribute("class")
        # marked: on each rank a finding names, the column of every compile id it names (the forward frame's
        # status; the first frame only rank 1 made, also where rank 0 lacks it)
        marked = grid.locator("td.ds-divergent").evaluate_all("es => es.map(e => [Number(e.dataset.rank), e.dataset.frame])")
        expected = {(r, c) for d in job.divergence for r in d.ranks for c in d.compile_ids.values() if c}
        assert sorted(map(tuple, marked)) == sorted(expected) and (0, cid) in expected and len(expected) == 4
        page.screenshot(path=str(ARTIFACTS / "job_view_grid.png"))

        # a click on rank 1's divergent cell: rank 1's capture opens in the explorer at that frame
        grid.locator(f'td[data-rank="1"][data-frame="{cid}"] a').click()
        out.locator(".widget-dropdown select").first.wait_for(timeout=60_000)
        page.wait_for_function("() => document.querySelector('.ds-job td.ds-picked') !== null", timeout=30_000)
        assert (_active_rank(out), _shown_frame(out)) == ("rank 1", cid)
        assert grid.locator("td.ds-picked").get_attribute("data-rank") == "1"
        # a click on rank 1's resume function (no finding): the explorer follows, its graph is drawn
        grid.locator(f'td[data-rank="1"][data-frame="{resumed}"] a').click()
        page.wait_for_function(
            "f => { const s = document.querySelector('.jp-Notebook .widget-dropdown select');"
            " return s && s.selectedOptions.length && s.selectedOptions[0].textContent.split(/\\s/)[0] === f; }",
            arg=resumed, timeout=60_000)
        out.locator(".ds-canvas svg [data-node]").first.wait_for(timeout=60_000)
        assert _active_rank(out) == "rank 1"
        page.screenshot(path=str(ARTIFACTS / "job_view_rank1.png"))
        # a click on "rank 0": rank 0 at its first divergent frame, the forward graph of 2 pieces
        grid.locator('a.ds-rank[data-rank="0"]').click()
        page.wait_for_function(
            "() => [...document.querySelectorAll('.jp-Notebook .widget-toggle-button.mod-active')]"
            ".some(b => b.textContent.trim() === 'rank 0')", timeout=60_000)
        page.wait_for_function(
            "f => { const s = document.querySelector('.jp-Notebook .widget-dropdown select');"
            " return s && s.selectedOptions.length && s.selectedOptions[0].textContent.split(/\\s/)[0] === f; }",
            arg=cid, timeout=60_000)
        out.locator(".ds-canvas svg [data-node]").first.wait_for(timeout=60_000)
        assert grid.locator("td.ds-picked").get_attribute("data-frame") == cid
        assert "2 pieces" in grid.locator(f'td[data-rank="0"][data-frame="{cid}"]').inner_text()

        # a finding's "side by side" link opens its view in place (no navigation away from the notebook)
        url = page.url
        links = out.locator('.ds-divergence a[href^="#ds-side-"]')
        assert links.count() == len(job.divergence)
        index = job.divergence.index(status)
        side = out.locator(f'details[id="ds-side-{index}"]')
        assert side.locator(".ds-lazy-body").first.inner_html() == ""  # sent only when the finding is opened
        seen = len(received)
        links.nth(index).click()
        page.wait_for_function("e => e.open", arg=side.element_handle(), timeout=10_000)
        side.locator("h4", has_text=f"rank 1, frame {cid}").wait_for(timeout=60_000)  # asked for, rendered, sent
        assert side.locator("h4", has_text=f"rank 1, frame {cid}").count() == 1 and page.url == url
        # a status finding has no diff: each rank's first frame line opens with the view and is asked for
        (after,) = [f for f in job.rank(1).frames if f.compile_id.startswith(cid + "_")]
        columns = side.locator(".ds-side > div")
        for col, c in ((columns.nth(0), cid), (columns.nth(1), cid)):
            page.wait_for_function("e => e.dataset.dsLoaded === '1'", timeout=60_000,
                                   arg=col.locator(f'details.ds-lazy-frame[data-frame="{c}"]').element_handle())
        later = columns.nth(1).locator(f'details.ds-lazy-frame[data-frame="{after.compile_id}"]')
        assert later.get_attribute("open") is None and later.locator(".ds-lazy-body").inner_html() == ""
        # what came over the kernel's websocket: the view (its lines, no drawing), then the two open frames
        ((_, whole_view),) = sides_html(job, [index])  # the view with every frame in it
        ((_, lines_view),) = sides_html(job, [index], keys=frame_key)
        sent = [m for m in received[seen:] if '"sides"' in m]
        frames_sent = [m for m in received[seen:] if '"frame"' in m and '"frames"' in m]
        assert len(sent) == 1 and "ds-drawings" not in sent[0] and "ds-lazy-frame" in sent[0], [len(m) for m in sent]
        assert len(sent[0]) < len(lines_view) + 4096 and len(lines_view) < len(whole_view) / 10, \
            (len(sent[0]), len(lines_view), len(whole_view))
        keys = {f"r0-{[f.compile_id for f in job.rank(0).frames].index(cid)}",
                f"r1-{[f.compile_id for f in job.rank(1).frames].index(cid)}"}
        assert frames_sent and all(k in "".join(frames_sent) for k in keys)
        assert f"r1-{[f.compile_id for f in job.rank(1).frames].index(after.compile_id)}" not in "".join(frames_sent)
        # rank 1's attempt after the restart: opened by a click, sent then, its graph drawn
        seen = len(received)
        later.locator("summary").click()
        page.wait_for_function("e => e.dataset.dsLoaded === '1'", arg=later.element_handle(), timeout=60_000)
        assert [m for m in received[seen:] if '"frame"' in m] and not [m for m in received[seen:] if '"sides"' in m]
        # both frames' graphs are drawn in the widget: rank 0's forward and, on rank 1, where the forward
        # frame restarted, the attempt of the same compile that followed (its report below the restart's)
        for col, frame in ((columns.nth(0), whole), (columns.nth(1), after)):
            shown = col.locator(f'.ds-side-frame[data-frame="{frame.compile_id}"]')
            host = shown.locator('.ds-graphbox[data-kind="root"]')
            host.scroll_into_view_if_needed()
            drawn = host.locator(".ds-canvas svg [data-node]")
            drawn.first.wait_for(timeout=30_000)
            names = drawn.evaluate_all("es => es.map(e => e.getAttribute('data-node'))")
            assert sorted(names) == sorted(n.name for n in frame.graph.nodes), names
        assert "no graph: Dynamo handed nothing" in columns.nth(1).inner_text()  # the restarted attempt
        page.screenshot(path=str(ARTIFACTS / "job_view_side.png"))
        assert not errors, errors
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "job_view_failure.png"))
        raise


def test_job_page_draws_the_side_by_side_graphs(browser, ddp_job_dir, tmp_path):
    """The static page (viz.export_job_html, no kernel): a finding's side-by-side view draws its graphs."""
    import viz

    job = tracer.load_job(str(ddp_job_dir))
    index, status = next((i, d) for i, d in enumerate(job.divergence) if d.kind == "status")
    frame = job.rank(0).frame(status.compile_ids[0])
    path = viz.export_job_html(job, tmp_path / "job.html")
    with checked_page(browser, 1500, 1000) as (page, _):
        page.goto(path.as_uri())
        side = page.locator(f'details[id="ds-side-{index}"]')
        assert not side.evaluate("e => e.open") and side.locator(".ds-graphbox").count() == 0  # not decoded yet
        page.locator(f'a[href="#ds-side-{index}"]').click()  # scrolls to the finding's view and opens it
        page.wait_for_function("e => e.open", arg=side.element_handle(), timeout=10_000)
        host = side.locator(".ds-side > div").nth(0).locator('.ds-graphbox[data-kind="root"]')
        host.scroll_into_view_if_needed()
        drawn = host.locator(".ds-canvas svg [data-node]")
        drawn.first.wait_for(timeout=30_000)
        assert sorted(drawn.evaluate_all("es => es.map(e => e.getAttribute('data-node'))")) == sorted(
            n.name for n in frame.graph.nodes)
        # a node's facts: the inspector the report and the widget show (viz.node_info, Note [One inspector])
        call = next(n for n in frame.graph.nodes if n.op == "call_function")
        node = host.locator(f'.ds-canvas svg [data-node="{call.name}"]').first
        node.scroll_into_view_if_needed()
        node.click()
        target = host.locator('.ds-nodeinfo tr[data-key="target"] td').first
        target.wait_for(timeout=10_000)
        assert target.inner_text() == viz.node_info(frame, "", call.name)["target"] == call.target


def test_job_page_first_paint_and_a_rank_frame_on_demand(browser, ddp_job_dir, tmp_path):
    """The static page's first contentful paint is measured (the figure is bench/job_scale.py's), and a
    rank's frame, opened from the grid, is decoded from its payload and drawn."""
    import viz

    job = tracer.load_job(str(ddp_job_dir))
    cid = next(d for d in job.divergence if d.kind == "status").compile_ids[1]
    path = viz.export_job_html(job, tmp_path / "job.html")
    with checked_page(browser) as (page, _):
        page.goto(path.as_uri(), wait_until="load")
        fcp = page.evaluate("() => new Promise((done) => new PerformanceObserver((l) => done(l.getEntries()[0].startTime))"
                            ".observe({type: 'paint', buffered: true}))")
        assert fcp > 0
        frame = page.locator(f'details[id="ds-rank-1-{cid}"]')
        assert frame.get_attribute("data-ds-loaded") is None  # nothing decoded before it is asked for
        page.locator(f'td[data-rank="1"][data-frame="{cid}"] a').click()
        page.wait_for_function("e => e.dataset.dsLoaded === '1'", arg=frame.element_handle(), timeout=30_000)
        assert frame.evaluate("e => e.open") and "restarted" in frame.inner_text()
