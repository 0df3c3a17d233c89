"""The explorer's search in JupyterLab + headless Chromium (Note [Search reaches folded nodes]).

A real capture of eight small blocks, shown grouped: the first view folds the last blocks into module
boxes. A search by a source line (one node per block) counts nodes and goes to each in turn: for a
node folded in a box the browser asks Python to open the boxes (the canvas's ``expanded`` trait), and
centres the node once the new drawing arrives. Reuses test_browser.py's JupyterLab harness.
"""

from __future__ import annotations

import pytest
from test_browser import ARTIFACTS, lab_page, notebook, open_and_run, serving

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

CELLS = [
    "import torch, tracer, viz",
    "class Block(torch.nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.norm = torch.nn.LayerNorm(16)\n"
    "        self.fc = torch.nn.Linear(16, 16)\n"
    "\n"
    "    def forward(self, x):\n"
    "        h = self.fc(self.norm(x))\n"
    "        h = torch.nn.functional.gelu(h)\n"
    "        return x + h\n"
    "\n"
    "class Blocks(torch.nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.blocks = torch.nn.ModuleList(Block() for _ in range(8))\n"
    "\n"
    "    def forward(self, x):\n"
    "        for b in self.blocks:\n"
    "            x = b(x)\n"
    "        return x\n"
    "\n"
    "cap = tracer.capture(Blocks(), torch.randn(4, 16))\n"
    "ex = viz.Explorer(cap)\n"
    "print(sorted(ex.canvas.group_paths()))",
    "ex",
]

STATE = """(c) => {
    const hit = c.querySelector('.ds-hit'), v = c.querySelector('.ds-view').getBoundingClientRect();
    let off = null;
    if (hit) { const r = hit.getBoundingClientRect(); off = Math.max(Math.abs((r.left + r.right - v.left - v.right) / 2),
                                                                      Math.abs((r.top + r.bottom - v.top - v.bottom) / 2)); }
    const sub = hit && hit.querySelector('text.sub');
    return {off, hit: hit && hit.getAttribute('data-node'), op: sub && sub.textContent, found: c.querySelector('.ds-found').textContent};
}"""


@pytest.fixture
def lab(tmp_path):
    with serving(tmp_path, "search.ipynb", notebook(CELLS)) as server:
        yield server


def test_widget_search_opens_folded_boxes_and_centres_each_node(lab, browser):
    page, errors, kernel_ready = lab_page(browser)
    try:
        open_and_run(page, lab, "search.ipynb", kernel_ready)
        printed = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea-output")
        printed.first.wait_for(timeout=240_000)
        assert "blocks.7" in printed.first.inner_text()  # the last block is folded in the first view
        canvas = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".ds-canvas").first
        canvas.locator("svg [data-group]").first.wait_for(timeout=120_000)
        canvas.scroll_into_view_if_needed()
        drawn_before = set(canvas.evaluate("(c) => [...c.querySelectorAll('.ds-stage [data-node]')]"
                                           ".map((e) => e.getAttribute('data-node'))"))
        box = canvas.locator("input.ds-search")
        box.fill("torch.nn.functional.gelu(h)")  # a source line: one node per block
        seen = []
        for i in range(8):
            box.press("Enter")
            page.wait_for_function(f"(c) => c.querySelector('.ds-found').textContent === '{i + 1} of 8'"
                                   " && c.querySelector('.ds-hit[data-node]')", arg=canvas.element_handle(),
                                   timeout=60_000)
            page.wait_for_timeout(100)
            s = canvas.evaluate(STATE)
            assert s["hit"] and "gelu" in s["op"] and s["off"] < 5, s
            seen.append(s["hit"])
        assert len(set(seen)) == 8, seen
        assert set(seen) - drawn_before  # folded at first: Python opened the boxes that folded them
        page.screenshot(path=str(ARTIFACTS / "explorer_search_folded.png"))
        box.fill("layer_norm")  # an op: nodes counted, not the boxes folding them
        box.press("Enter")
        page.wait_for_function("(c) => c.querySelector('.ds-found').textContent === '1 of 8'",
                               arg=canvas.element_handle(), timeout=30_000)
        assert not errors, errors
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "explorer_search_failure.png"))
        raise
