"""Table headers wrap only between words, in the static report and in the explorer's panels (headless Chromium).

A narrow window squeezes every table; a header word drawn on two lines ("compil" / "e id") is a
failure. Words are measured with DOM ranges: a word whose boxes lie on more than one line was broken.
"""

from __future__ import annotations

import pytest
import torch

import tracer
import viz
from viz import panels

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

# Every visible header word whose glyphs are drawn on more than one line; and how many words were measured.
_BROKEN_WORDS = """() => {
  const broken = []; let measured = 0;
  for (const th of document.querySelectorAll('th')) {
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    for (let n; (n = walker.nextNode());) {
      for (const m of n.data.matchAll(/\\S+/g)) {
        const r = document.createRange();
        r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        const rects = [...r.getClientRects()].filter(c => c.width > 0);
        if (!rects.length) continue;  // not shown (a closed section, a hidden tab)
        measured += 1;
        if (new Set(rects.map(c => Math.round(c.top))).size > 1) broken.push(m[0]);
      }
    }
  }
  return {broken, measured};
}"""


def _capture() -> tracer.Capture:
    def breaks(x):
        y = x.sin()
        torch._dynamo.graph_break()
        return y.cos()

    return tracer.capture(breaks, torch.randn(3))


@pytest.mark.parametrize("width", [360, 700])
def test_report_headers_break_only_between_words(browser, tmp_path, width):
    path = viz.export_html(_capture(), tmp_path / "report.html")
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(path.resolve().as_uri(), timeout=30_000)
        page.wait_for_selector("th", timeout=30_000)
        res = page.evaluate(_BROKEN_WORDS)
    finally:
        page.close()
    assert res["measured"] >= 8, res  # the frames table's headers at least ("compile id", "speculations", ...)
    assert res["broken"] == [], res


def test_explorer_panel_headers_break_only_between_words(browser):
    # The explorer's overview panel (the HTML its Overview tab shows), in a narrow output area.
    html = panels.overview_html(_capture())
    page = browser.new_page(viewport={"width": 360, "height": 900})
    try:
        page.set_content(f"<!doctype html><html><body style='margin:0'>{html}</body></html>")
        page.wait_for_selector("th", timeout=30_000)
        res = page.evaluate(_BROKEN_WORDS)
    finally:
        page.close()
    assert res["measured"] >= 8, res
    assert res["broken"] == [], res
