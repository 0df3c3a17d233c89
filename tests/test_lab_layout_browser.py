"""The explorer in JupyterLab 4 at 1,440 x 900 with the file browser open, on a real GPT-2 capture
(``transformers``' config, random weights), and the static report of the same capture beside it.

Note [Fits its panel] (viz/inspector.py): after a click on the node with the longest name, then on the
one with the longest recorded user stack, nothing in the inspector is wider than its panel, no tab label is cut, the frame picker shows
its whole label; in the Partition tab each minimap covers at most a fifth of its canvas's width and a
quarter of its height. Note [One inspector]: the report, opened from its file, shows the same
inspector text for the same node. Reuses test_browser.py's JupyterLab harness.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from test_browser import ARTIFACTS, lab_page, notebook, open_and_run, serving

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]

WIDTH, HEIGHT = 1440, 900
MINI_SHARE = (0.2, 0.25)  # the minimap's most of its view's width and height (viz/view.js, Note [Minimap])

CELLS = [
    "import torch, transformers, tracer, viz",
    "torch.manual_seed(0)\n"
    "cfg = transformers.GPT2Config(n_layer=4, n_embd=256, n_head=4, vocab_size=1000, n_positions=128)\n"
    "model = transformers.GPT2LMHeadModel(cfg)\n"
    "ids = torch.randint(0, 1000, (2, 64))\n"
    "cap = tracer.capture(lambda ids: model(ids, labels=ids).loss, ids)\n"
    "viz.export_html(cap, 'report.html')\n"
    "ex = viz.Explorer(cap)\n"
    "drawn = set(ex.canvas.box_ids())\n"
    "stack = lambda n: len(n.meta.get('stack_trace') or '')\n"
    "pick = max((n for n in ex.graph.nodes if n.name in drawn), key=stack)\n"
    "named = max((n.name for n in ex.graph.nodes if n.name in drawn), key=len)\n"
    "print('FRAME', ex.frame.compile_id, 'PICK', pick.name, 'STACK', stack(pick), 'NAMED', named)",
    "ex",
]

# Inside the explorer's output: each measured element's scroll and client widths, every descendant of
# the inspector that reaches past its panel, the frame picker's label width in its own font.
MEASURE = """(root) => {
  const w = (e) => ({sw: e.scrollWidth, cw: e.clientWidth});
  const side = root.querySelector('.ds-side'), host = side.querySelector('.ds-inspector-host');
  const hr = host.getBoundingClientRect();
  const past = [...host.querySelectorAll('*')].filter((e) => e.getBoundingClientRect().right > hr.right + 0.5)
    .map((e) => e.tagName + ' ' + e.textContent.slice(0, 40));
  const labels = [...root.querySelectorAll('.ds-side-tabs > .lm-TabBar .lm-TabBar-tabLabel, '
    + '.ds-main-tabs > .lm-TabBar .lm-TabBar-tabLabel')].filter((e) => e.offsetParent)
    .map((e) => ({text: e.textContent, ...w(e)}));
  const sel = root.querySelector('.widget-dropdown select');
  const ctx = document.createElement('canvas').getContext('2d');
  ctx.font = getComputedStyle(sel).font;
  const label = sel.options[sel.selectedIndex].text;
  return {side: w(side), host: w(host), hostWidth: hr.width, past, labels,
          rows: host.querySelectorAll('tr').length, sideRight: side.getBoundingClientRect().right,
          select: {label, text: ctx.measureText(label).width, cw: sel.clientWidth},
          text: host.querySelector('.ds-inspect').innerText};
}"""

MINIMAPS = """(root) => [...root.querySelectorAll('.ds-canvas')].filter((c) => c.offsetParent).map((c) => {
  const v = c.querySelector('.ds-view').getBoundingClientRect(), m = c.querySelector('.ds-minimap');
  const r = m.getBoundingClientRect();
  return {shown: getComputedStyle(m).display !== 'none', w: r.width / v.width, h: r.height / v.height};
})"""


@pytest.fixture
def lab(tmp_path):
    with serving(tmp_path, "layout.ipynb", notebook(CELLS)) as server:
        yield server


def _click_node(page, scope, name: str) -> None:
    node = scope.locator(f'.ds-stage [data-node="{name}"]').first
    expect(node).to_be_attached(timeout=120_000)
    node.dispatch_event("click")


def test_nothing_is_clipped_and_the_report_inspects_alike(lab, browser):
    page, errors, kernel_ready = lab_page(browser, WIDTH, HEIGHT)
    try:
        open_and_run(page, lab, "layout.ipynb", kernel_ready)
        browser_panel = page.locator(".jp-FileBrowser").first
        if not browser_panel.is_visible():  # the file browser open, as a user has it
            page.locator('.jp-SideBar [data-id="filebrowser"]').first.click()
        expect(browser_panel).to_be_visible()
        printed = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea-output", has_text="PICK")
        expect(printed).to_contain_text("PICK", timeout=400_000)
        _, cid, _, pick, _, length, _, named = printed.inner_text().split()
        assert int(length) > 1000 and len(named) > 40  # the widest content the inspector gets: a long
        out = page.locator(".jp-Notebook .jp-Cell").nth(2)  # user stack, a long name (a parameter's)
        out.scroll_into_view_if_needed()
        for name in (named, pick):
            _click_node(page, out.locator(".ds-canvas").first, name)
            expect(out.locator(".ds-side .ds-inspect h4")).to_have_text(name, timeout=60_000)
            got = out.evaluate(MEASURE)
            page.screenshot(path=str(ARTIFACTS / f"lab_layout_inspector_{name[:20]}.png"))
            assert got["rows"] >= 10, got
            assert got["side"]["sw"] <= got["side"]["cw"] and got["host"]["sw"] <= got["host"]["cw"], got
            assert got["past"] == [], got["past"]
            assert 240 <= got["hostWidth"] and got["sideRight"] <= WIDTH, got
            assert {"Inspector", "Code", "Lifted inputs", "Graphs", "Partition"} <= {x["text"] for x in got["labels"]}, got
            assert all(x["sw"] <= x["cw"] for x in got["labels"]), got["labels"]
            assert got["select"]["label"].startswith(cid) and got["select"]["text"] <= got["select"]["cw"] - 20, got
        expect(out.locator(".ds-side .ds-inspect tr[data-key='stack']")).to_be_attached()
        widget_text = got["text"]

        # the Partition tab: two canvases side by side, each minimap a small corner of its canvas
        out.locator(".ds-main-tabs .lm-TabBar-tab", has_text="Partition").click()
        shown = out.locator(".ds-main-tabs .ds-canvas .ds-minimap:visible")
        expect(shown).to_have_count(2, timeout=120_000)
        minis = out.evaluate(MINIMAPS)
        page.screenshot(path=str(ARTIFACTS / "lab_layout_partition.png"))
        assert len([m for m in minis if m["shown"]]) == 2, minis
        assert all(m["w"] <= MINI_SHARE[0] + 0.01 and m["h"] <= MINI_SHARE[1] + 0.01 for m in minis if m["shown"]), minis
        assert not errors, errors

        # the report of the same capture, opened from its file: the same node's inspector says the same
        report = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        try:
            report.goto((lab.root / "report.html").as_uri())
            expect(report.locator(".ds-lazy[data-ds-frames-loaded]")).to_be_attached(timeout=60_000)
            section = report.locator("section.ds-frame", has=report.locator("h2", has_text=f"Frame {cid} "))
            host = section.locator('.ds-graphbox[data-kind="root"]').first
            host.scroll_into_view_if_needed()
            _click_node(report, host, pick)
            inspect = host.locator(".ds-nodeinfo .ds-inspect")
            expect(inspect.locator("h4")).to_have_text(pick, timeout=30_000)
            report.screenshot(path=str(ARTIFACTS / "lab_layout_report_inspector.png"))
            assert inspect.inner_text() == widget_text
            assert report.evaluate("document.documentElement.scrollWidth") <= WIDTH
        finally:
            report.close()
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "lab_layout_failure.png"))
        raise
    finally:
        page.close()
