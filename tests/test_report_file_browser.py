"""The one-file report of a large log in Chromium: the overview is there at once, every frame waits in
its payload, and a frame deep in the log renders its graph when asked for (its address, then a click);
also for the bench's 100 MB log (issue "Post-mortem at scale")."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest
from chromium import checked_page

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def big_report(child_trace_dir, tmp_path_factory):
    """``dynascope report`` of the real test log repeated to 8 MB (bench/report_vs_tlparse.py's synthetic
    log: every copy a distinct compile), written by the command itself."""
    from bench.report_vs_tlparse import synthetic_log

    (log,) = glob.glob(os.path.join(child_trace_dir, "*.log"))
    tmp = tmp_path_factory.mktemp("big_report")
    big = tmp / "big.log"
    synthetic_log(log, str(big), 8 * 2**20)
    out = tmp / "big.html"
    r = subprocess.run([sys.executable, "-m", "viz.cli", "report", str(big), "-o", str(out)], capture_output=True,
                       text=True, timeout=300, env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def report_of_100_mb(tmp_path_factory):
    """``dynascope report`` of the bench's own big log: one real transformer12 training step's TORCH_TRACE log
    (written by torch in a child process) repeated to 100 MiB, every copy a distinct compile
    (bench/report_vs_tlparse.py), written by the command itself."""
    from bench.report_vs_tlparse import synthetic_log, training_log

    tmp = tmp_path_factory.mktemp("report_100_mb")
    big = tmp / "big.log"
    size = synthetic_log(training_log(str(tmp), "full"), str(big), 100 * 2**20)
    out = tmp / "big.html"
    r = subprocess.run([sys.executable, "-m", "viz.cli", "report", str(big), "-o", str(out)], capture_output=True,
                       text=True, timeout=300, env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT)
    assert r.returncode == 0, r.stderr
    big.unlink()  # 100 MB of the test machine's disk
    return out, size


@pytest.mark.slow
def test_report_of_the_100_mb_log_opens_and_a_frame_deep_in_it_renders_its_graph(report_of_100_mb, browser):
    out, size = report_of_100_mb
    assert size >= 100 * 2**20
    assert out.stat().st_size < 10 * 2**20  # frames stored compressed: a page, not the log again
    with checked_page(browser) as (page, _):
        page.goto(out.as_uri(), timeout=60_000)
        frames = page.locator("details.ds-lazy-frame")
        n = frames.count()
        assert n >= 60, n  # one entry per compile: ~64 copies of the training step
        assert page.locator(".ds-graphbox").count() == 0 and page.locator(".ds-frame").count() == 0
        assert "Graph breaks" in page.locator(".ds-panel").first.inner_text()
        deep = frames.nth(n - 2)
        key = deep.get_attribute("data-payload")
        page.evaluate("(k) => { location.hash = 'ds-frame-' + k; }", key)
        page.wait_for_selector(f"#ds-frame-{key}[data-ds-loaded='1'] .ds-graphbox svg [data-node]", timeout=30_000)
        assert deep.evaluate("(d) => d.open")
        assert page.locator(".ds-frame").count() == 1  # only the frame asked for was decoded
        # the training step's graphs are all there: Dynamo's, the joint, the forward and the backward
        kinds = deep.locator("section.ds-frame").inner_text()
        assert all(k in kinds for k in ("forward", "backward")), kinds[:500]


def test_large_report_opens_with_the_overview_and_a_deep_frame_renders_on_demand(big_report, browser):
    with checked_page(browser) as (page, _):
        page.goto(big_report.as_uri(), timeout=60_000)
        frames = page.locator("details.ds-lazy-frame")
        n = frames.count()
        assert n >= 100, n  # every compile of the log has its entry
        assert page.locator(".ds-lazy[data-open-all]").count() == 0  # large: nothing opened at load
        assert page.locator(".ds-graphbox").count() == 0 and page.locator(".ds-frame").count() == 0
        assert "Graph breaks" in page.locator(".ds-panel").first.inner_text()  # the overview is there
        # a frame deep in the log, by its address: decoded, inserted, its root graph drawn
        deep = frames.nth(n - 2)
        key = deep.get_attribute("data-payload")
        page.evaluate("(k) => { location.hash = 'ds-frame-' + k; }", key)
        page.wait_for_selector(f"#ds-frame-{key}[data-ds-loaded='1'] .ds-graphbox svg [data-node]", timeout=30_000)
        assert deep.evaluate("(d) => d.open")
        assert deep.locator("section.ds-frame h2").inner_text().startswith("Frame ")
        assert page.locator(".ds-frame").count() == 1  # only the frame asked for was decoded
        # another one by a click on its entry
        other = frames.nth(n - 1)
        other.locator("summary").click()
        other.locator(".ds-graphbox svg [data-node]").first.wait_for(timeout=30_000)
        assert page.locator(".ds-frame").count() == 2
        # and by its compile id in the overview's frames table
        page.locator('.ds-panel a[href="#ds-frame-3"]').click()
        page.wait_for_selector("#ds-frame-3[data-ds-loaded='1']", state="attached", timeout=30_000)
        assert page.locator(".ds-frame").count() == 3
