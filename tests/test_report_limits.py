"""Limits of the source apart from problems of this run (Note [Limits of the source]), in what a user sees.

A real TORCH_TRACE log (tests/trace_log_child.py) made into a report by the ``dynascope`` command and
opened in headless Chromium: a clean log's report shows no red problems box, only the folded note of
what a log cannot contain; the same log cut off shows the red box with the line that says where it
broke. The explorer widget's overview makes the same distinction.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

from tracer.trace_log import LOG_LIMITS, load_trace

LIMITS = [f"{k}: {why}" for k, why in LOG_LIMITS.items()]  # as a loaded log states them
N = len(LIMITS)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RED = "rgb(207, 34, 46)"  # #cf222e, the problems box's border


@pytest.fixture(scope="module")
def logs(child_trace_dir, tmp_path_factory) -> dict[str, str]:
    (log,) = glob.glob(str(child_trace_dir / "*.log"))
    with open(log, "rb") as fh:
        data = fh.read()
    d = tmp_path_factory.mktemp("limits")
    cut = d / "cut.log"
    cut.write_bytes(data[:data.index(b"\nV", len(data) // 2) + 60])  # into a record line
    return {"clean": log, "cut": str(cut)}


def _report(log: str, out) -> str:
    r = subprocess.run([sys.executable, "-m", "viz.cli", "report", log, "-o", str(out)], capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return out.as_uri()


def test_explorer_overview_tells_limits_from_problems(logs):
    from viz.explorer import Explorer

    clean, cut = load_trace(logs["clean"]), load_trace(logs["cut"])
    assert clean.all_problems() == [] and clean.limits == LIMITS == cut.limits
    html = Explorer(clean)._overview.value
    assert '<div class="ds-problems">' not in html and "problem(s)" not in html
    assert html.count(f'<details class="ds-limits ds-muted"><summary>Limits of the source ({N}): what a TORCH_TRACE log '
                      'cannot contain, not problems of this run</summary>') == 1
    html = Explorer(cut)._overview.value
    assert html.count('<div class="ds-problems"><h4>Problems (1)</h4>') == 1 and f"Limits of the source ({N})" in html


@pytest.mark.browser
def test_clean_log_report_has_no_red_box_and_a_folded_limits_note(logs, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(_report(logs["clean"], tmp_path / "clean.html"), timeout=30_000)
    assert page.locator(".ds-problems").count() == 0
    note = page.locator("details.ds-limits")
    assert note.count() == 1 and note.is_visible() and not note.evaluate("e => e.open")
    summary = note.locator("summary")
    assert summary.inner_text() == (f"Limits of the source ({N}): what a TORCH_TRACE log cannot contain, "
                                    "not problems of this run")
    assert summary.evaluate("e => getComputedStyle(e).color") != RED
    items = note.locator("li")
    assert items.count() == N and not items.first.is_visible()  # folded
    summary.click()
    assert items.first.is_visible() and [items.nth(i).inner_text() for i in range(N)] == LIMITS
    page.close()


@pytest.mark.browser
def test_damaged_log_report_shows_the_red_box(logs, browser, tmp_path):
    want = load_trace(logs["cut"]).meta["not_read"]
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(_report(logs["cut"], tmp_path / "cut.html"), timeout=30_000)
    box = page.locator(".ds-problems").first
    assert box.is_visible() and box.evaluate("e => getComputedStyle(e).borderTopColor") == RED
    assert box.locator("h4").inner_text() == "Problems (1)" and box.locator("li").inner_text() == want
    assert page.locator("details.ds-limits").count() == 1  # the limits stay a note, apart
    page.close()
