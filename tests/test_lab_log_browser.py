"""Captures loaded from TORCH_TRACE logs, shown in JupyterLab 4 at 1,440 x 900 with the file browser open.

The training-step logs of the CNN and of GPT-2 (bench/report_bytes.py writes them, as `dynascope report`
reads them): each explorer's first view shows module boxes inferred from the log (Note [Groups
inferred from a log] in viz/module_paths.py) with labels >= 10 px; no graph it draws (the root, and the
Partition tab's forward and backward) is wider than 4x the viewport; after a click on a node nothing
in the inspector reaches past its panel (Note [Fits its panel] in viz/inspector.py). Reuses
test_browser.py's JupyterLab harness.
"""

from __future__ import annotations

import json
import time

import pytest
from playwright.sync_api import expect
from test_browser import ARTIFACTS, lab_page, notebook, open_and_run, serving

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(1200)]

WIDTH, HEIGHT = 1440, 900
MODELS = ("cnn", "gpt2_hf")

# One shown canvas: the label size of its first view (12 px x the stage's scale), the module-box labels
# inside the view and the smallest, the drawing's width, its drawn nodes.
CANVAS = """(c) => {
  const stage = c.querySelector('.ds-stage'), vr = c.querySelector('.ds-view').getBoundingClientRect();
  const m = /scale\\(([0-9.e-]+)\\)/.exec(stage.style.transform || '');
  const labels = [];
  for (const t of stage.querySelectorAll('g.group > text:not(.sub)')) {
    const r = t.getBoundingClientRect();
    if (r.right > vr.left && r.left < vr.right && r.bottom > vr.top && r.top < vr.bottom) labels.push(r.height);
  }
  const svg = stage.querySelector('svg.ds-graph');
  return {label_px: 12 * (m ? parseFloat(m[1]) : 0), groups_in_view: labels.length,
          min_label: labels.length ? Math.min(...labels) : null, width: svg ? parseFloat(svg.getAttribute('width')) : 0,
          nodes: [...stage.querySelectorAll('[data-node]')].map((e) => e.getAttribute('data-node'))};
}"""

# The inspector after a click: its panel's scroll and client widths, and every element reaching past it.
SIDE = """(root) => {
  const side = root.querySelector('.ds-side'), host = side.querySelector('.ds-inspector-host');
  const hr = host.getBoundingClientRect();
  return {side: [side.scrollWidth, side.clientWidth], host: [host.scrollWidth, host.clientWidth],
          past: [...host.querySelectorAll('*')].filter((e) => e.getBoundingClientRect().right > hr.right + 0.5)
            .map((e) => e.tagName + ' ' + e.textContent.slice(0, 40)),
          rows: host.querySelectorAll('tr').length, right: side.getBoundingClientRect().right};
}"""


def _wait_drawn(page, out, canvas, seconds: float = 400) -> None:
    """Wait for the canvas's first module box, scrolling its cell into view again while waiting.

    JupyterLab renders cells (and their outputs) near the view only, and the cell's output may arrive
    after a first scroll, so the scroll is repeated; on a timeout the canvas's own state is in the error.
    """
    end = time.monotonic() + seconds
    while True:
        page.locator(".jp-Notebook .jp-Cell").last.scroll_into_view_if_needed()
        out.scroll_into_view_if_needed()
        try:
            expect(canvas.locator("svg [data-group]").first).to_be_attached(timeout=10_000)
            return
        except AssertionError:
            if time.monotonic() > end:
                state = canvas.evaluate(
                    "(c) => ({svg: c.querySelectorAll('svg').length, nodes: c.querySelectorAll('[data-node]').length,"
                    " text: c.innerText.slice(0, 400), html: c.innerHTML.slice(0, 1500)})") if canvas.count() else None
                outputs = out.locator(".jp-OutputArea-output").all_inner_texts()
                raise AssertionError(f"no module box drawn in {seconds:.0f} s: canvas {state}, outputs {outputs}") from None


@pytest.fixture
def lab(tmp_path):
    from bench.report_bytes import _log

    pytest.importorskip("transformers")
    logs = {name: _log(name, "full", str(tmp_path)) for name in MODELS}
    cells = ["import tracer, viz"]
    for name in MODELS:
        cells += [f"cap_{name} = tracer.load_trace({json.dumps(logs[name])})\n"
                  f"ex_{name} = viz.Explorer(cap_{name})\n"
                  f"print('FRAME', ex_{name}.frame.compile_id, len(ex_{name}.graph.nodes))",
                  f"ex_{name}"]
    with serving(tmp_path, "logs.ipynb", notebook(cells)) as server:
        yield server


def test_log_explorers_open_on_readable_module_boxes_and_fit(lab, browser):
    page, errors, kernel_ready = lab_page(browser, WIDTH, HEIGHT)
    try:
        open_and_run(page, lab, "logs.ipynb", kernel_ready)
        panel = page.locator(".jp-FileBrowser").first
        if not panel.is_visible():  # the file browser open, as a user has it
            page.locator('.jp-SideBar [data-id="filebrowser"]').first.click()
        expect(panel).to_be_visible()
        for k, name in enumerate(MODELS):
            out = page.locator(".jp-Notebook .jp-Cell").nth(2 + 2 * k)
            canvas = out.locator(".ds-canvas").first
            _wait_drawn(page, out, canvas)
            out.scroll_into_view_if_needed()
            page.wait_for_timeout(400)  # the fit runs in the next animation frame
            got = canvas.evaluate(CANVAS)
            page.screenshot(path=str(ARTIFACTS / f"lab_log_{name}.png"))
            assert got["label_px"] >= 9.99 and got["groups_in_view"] and got["min_label"] >= 10, got
            assert 0 < got["width"] <= 4 * WIDTH, got

            # a click on a node: the inspector fills and stays inside its panel
            node = got["nodes"][len(got["nodes"]) // 2]
            canvas.locator(f'.ds-stage [data-node="{node}"]').first.dispatch_event("click")
            expect(out.locator(".ds-side .ds-inspect h4")).to_have_text(node, timeout=60_000)
            side = out.evaluate(SIDE)
            assert side["rows"] >= 5 and side["past"] == [], side
            assert side["side"][0] <= side["side"][1] and side["host"][0] <= side["host"][1], side
            assert side["right"] <= WIDTH, side

            # the Partition tab: the AOT forward and backward drawn, neither wider than 4x the viewport
            out.locator(".ds-main-tabs .lm-TabBar-tab", has_text="Partition").click()
            shown = out.locator(".ds-main-tabs .ds-canvas:visible")
            expect(shown).to_have_count(2, timeout=120_000)
            for i in range(2):
                expect(shown.nth(i).locator("svg [data-node], svg [data-group]").first).to_be_attached(timeout=120_000)
            page.wait_for_timeout(400)
            widths = [shown.nth(i).evaluate(CANVAS)["width"] for i in range(2)]
            page.screenshot(path=str(ARTIFACTS / f"lab_log_{name}_partition.png"))
            assert all(0 < w <= 4 * WIDTH for w in widths), widths
            out.locator(".ds-main-tabs .lm-TabBar-tab", has_text="Graphs").first.click()
        assert not errors, errors
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "lab_log_failure.png"))
        raise
    finally:
        page.close()
