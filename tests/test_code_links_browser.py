"""A graph's code links to its nodes, and a kernel reaches inside folded modules, in real Chromium.

Note [Code lines link to nodes] (viz/view.js): a click on a line of a graph's code that defines a
node shows that node in the graph -- the module boxes folding it opened, selected, centred -- in the
static report (the "Code of the root graph" block) and in the explorer in JupyterLab (the Code side
tab). In JupyterLab also: choosing an Inductor kernel (the Code tab) whose nodes are all folded in
module boxes opens them and highlights every node it computes, and the selected node's inspector
lists its kernels. A real capture of eight small blocks: the first view folds the last blocks.
"""

from __future__ import annotations

import contextlib

import pytest
from chromium import checked_page
from playwright.sync_api import expect
from test_browser import ARTIFACTS, lab_page, notebook, open_and_run, serving

pytestmark = [pytest.mark.browser, pytest.mark.timeout(1200)]

BLOCKS = (
    "import torch\n"
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
)

# The client point of the first character of the line of code block ``sel`` (a <pre> inside it) that
# defines node ``name`` ("name = ..." or "name: ... = ..."), scrolled into view; null when none.
LINE_POINT = """([sel, name]) => {
    const pre = document.querySelector(sel).querySelector('pre');
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    const texts = [];
    for (let t = walker.nextNode(); t; t = walker.nextNode()) texts.push(t);
    const all = texts.map((t) => t.data).join('');
    const m = new RegExp(`(^|\\n)([ \\t]*)${name}(?: = |: )`).exec(all);
    if (!m) return null;
    let at = m.index + m[1].length + m[2].length, k = 0;
    while (at >= texts[k].data.length) { at -= texts[k].data.length; k += 1; }
    const r = document.createRange();
    r.setStart(texts[k], at); r.setEnd(texts[k], at + 1);
    for (let el = pre; el && el !== document.documentElement; el = el.parentElement) {  // every scrolling box
      if (el.scrollHeight > el.clientHeight + 1 && /auto|scroll/.test(getComputedStyle(el).overflowY)) {
        const er = el.getBoundingClientRect();
        el.scrollTop += r.getBoundingClientRect().top - (er.top + el.clientHeight / 2);
      }
    }
    window.scrollBy(0, r.getBoundingClientRect().top - innerHeight / 2);
    const box = r.getBoundingClientRect();
    return [box.left + box.width / 2, box.top + box.height / 2];
}"""

# The node selected in a canvas, its distance from the view's centre, the highlighted nodes drawn.
CANVAS = """(c) => {
    const sel = c.querySelector('.ds-stage .ds-selected[data-node]'), v = c.querySelector('.ds-view').getBoundingClientRect();
    let off = null;
    if (sel) { const r = sel.getBoundingClientRect(); off = Math.max(Math.abs((r.left + r.right - v.left - v.right) / 2),
                                                                      Math.abs((r.top + r.bottom - v.top - v.bottom) / 2)); }
    return {selected: sel && sel.getAttribute('data-node'), off,
            nodes: [...c.querySelectorAll('.ds-stage [data-node]')].map((e) => e.getAttribute('data-node')),
            hi: [...c.querySelectorAll('.ds-stage [data-node].highlight')].map((e) => e.getAttribute('data-node'))};
}"""


def _folded_node(cap) -> tuple[str, list[str]]:
    """A node of the root graph folded in a module box of its first view (the last block's gelu), and
    the nodes drawn there."""
    from viz.graph_layout import layout
    from viz.grouping import first_expanded

    g = cap.frames[0].graph
    drawn = [b.id for b in layout(g, expanded=first_expanded(g), engine="linear").boxes]
    gelu = [n.name for n in g.nodes if "gelu" in n.target]
    assert len(gelu) == 8 and gelu[-1] not in drawn  # the first view folds the last block
    return gelu[-1], drawn


@contextlib.contextmanager
def _report_page(browser, path):
    """A 1440x900 page showing the report at ``path`` with its frames loaded, for a ``with`` block that
    fails on a page error (tests/chromium.py ``checked_page``)."""
    with checked_page(browser) as (page, _):
        page.goto(path.as_uri())
        page.wait_for_selector(".ds-lazy[data-ds-frames-loaded]", state="attached", timeout=30_000)
        yield page


def test_report_code_line_shows_its_folded_node(browser, tmp_path):
    import torch

    import tracer
    import viz

    scope: dict = {}
    exec(BLOCKS, scope)  # noqa: S102 - the same module source the JupyterLab test runs
    torch.manual_seed(0)
    cap = tracer.capture(scope["Blocks"](), torch.randn(4, 16))
    name, drawn = _folded_node(cap)
    path = viz.export_html(cap, tmp_path / "blocks.html")
    with _report_page(browser, path) as page:
        block = page.locator(".ds-graph-code").first  # the first frame's root graph's code
        code = block.locator("xpath=ancestor::details[1]")
        assert "Code of the root graph" in code.locator("summary").first.inner_text()
        code.locator("summary").first.click()
        index = block.get_attribute("data-graph")
        sel = f'.ds-graph-code[data-graph="{index}"]'
        host = page.locator(f'.ds-graphbox[data-graph="{index}"]').first
        assert host.get_attribute("data-kind") == "root"
        host.scroll_into_view_if_needed()
        host.locator("svg .boxes").wait_for(timeout=30_000)
        code.scroll_into_view_if_needed()
        x, y = page.evaluate(LINE_POINT, [sel, name])
        page.mouse.click(x, y)
        page.wait_for_function("(h) => h.querySelector('.ds-stage .ds-selected[data-node]')", arg=host.element_handle(),
                               timeout=10_000)
        page.wait_for_timeout(300)
        s = host.evaluate(CANVAS)
        assert s["selected"] == name and s["off"] < 5, s  # opened, selected and centred
        assert name in host.locator(".ds-nodeinfo").inner_text()  # and inspected
        assert "opened" in host.locator(".ds-crumbs").inner_text()
        host.screenshot(path=str(ARTIFACTS / "report_code_line.png"))
        # a line defining no node (the signature) does nothing
        before = host.evaluate(CANVAS)
        page.evaluate("""(sel) => { const pre = document.querySelector(sel).querySelector('pre');
            pre.scrollIntoView({block: 'center'}); }""", sel)
        box = block.locator("pre").bounding_box()
        page.mouse.click(box["x"] + 8, box["y"] + 6)  # the first line: "class GraphModule..." or "def forward(...)"
        page.wait_for_timeout(200)
        assert host.evaluate(CANVAS)["selected"] == before["selected"]


CELLS = [
    BLOCKS,
    "import tracer, viz\n"
    "from viz import code_view\n"
    "from viz.grouping import first_expanded\n"
    "from viz.graph_layout import layout\n"
    "torch.manual_seed(0)\n"
    "cap = tracer.capture(Blocks(), torch.randn(4, 16), backend='inductor')\n"
    "ex = viz.Explorer(cap)\n"
    "g = cap.frames[0].graph\n"
    "drawn = {b.id for b in layout(g, expanded=first_expanded(g), engine='linear').boxes}\n"
    "gelu = [n.name for n in g.nodes if 'gelu' in n.target][-1]\n"
    "ig, kernel = next((ig, k) for ig in cap.frames[0].inductor for k in ig.kernels\n"
    "                  if len(k.dynamo_nodes) >= 2 and not drawn & set(k.dynamo_nodes))\n"
    "print('GELU', gelu, gelu in drawn)\n"
    "label = next(lb for lb, key in code_view.kernel_choices(cap.frames[0]) if key == code_view.kernel_key(ig, kernel))\n"
    "print('LABEL', label)\n"
    "print('KERNEL', kernel.name, ' '.join(kernel.dynamo_nodes))",
    "ex",
]


@pytest.fixture
def lab(tmp_path):
    with serving(tmp_path, "links.ipynb", notebook(CELLS)) as server:
        yield server


def test_widget_code_line_and_kernel_reach_folded_nodes(lab, browser):
    page, errors, kernel_ready = lab_page(browser, 1440, 900)
    try:
        open_and_run(page, lab, "links.ipynb", kernel_ready)
        printed = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea-output", has_text="KERNEL")
        expect(printed).to_contain_text("KERNEL", timeout=600_000)  # a cold Inductor compile; a release may warn first
        words = dict(line.split(" ", 1) for line in printed.inner_text().strip().splitlines()
                     if line.startswith(("GELU ", "LABEL ", "KERNEL ")))
        gelu, folded = words["GELU"].split()
        assert folded == "False"  # folded in the first view
        kernel_name, *kernel_nodes = words["KERNEL"].split()
        label = words["LABEL"]
        out = page.locator(".jp-Notebook .jp-Cell").nth(2)
        canvas = out.locator(".ds-canvas").first
        canvas.locator("svg [data-group]").first.wait_for(timeout=120_000)
        assert gelu not in canvas.evaluate(CANVAS)["nodes"]

        # the Code side tab: a click on the line computing the folded gelu opens its boxes and centres it
        out.locator(".ds-side-tabs .lm-TabBar-tab", has_text="Code").first.click()
        side = out.locator(".ds-graph-code").first
        side.wait_for(timeout=30_000)
        assert side.get_attribute("data-graph").endswith(":")  # the root graph's, as the canvas names it
        x, y = page.evaluate(LINE_POINT, [".ds-graph-code", gelu])
        page.mouse.click(x, y)
        page.wait_for_function(f"(c) => {{ const s = c.querySelector('.ds-stage .ds-selected[data-node]');"
                               f" return s && s.getAttribute('data-node') === '{gelu}'; }}",
                               arg=canvas.element_handle(), timeout=60_000)
        page.wait_for_timeout(300)
        s = canvas.evaluate(CANVAS)
        assert s["selected"] == gelu and s["off"] < 5, s
        page.screenshot(path=str(ARTIFACTS / "explorer_code_line.png"))

        # the Code tab: choosing a kernel whose nodes are all folded highlights every one of them, drawn
        out.locator(".ds-main-tabs > .lm-TabBar .lm-TabBar-tab", has_text="Code").first.click()
        picker = out.locator("select").filter(has=page.locator("option", has_text=label)).first
        picker.wait_for(timeout=30_000)
        picker.select_option(label=label)
        out.locator(".ds-main-tabs > .lm-TabBar .lm-TabBar-tab", has_text="Graphs").first.click()
        page.wait_for_function("([c, want]) => { const hi = new Set([...c.querySelectorAll('.ds-stage [data-node].highlight')]"
                               ".map((e) => e.getAttribute('data-node'))); return want.every((n) => hi.has(n)); }",
                               arg=[canvas.element_handle(), kernel_nodes], timeout=60_000)
        s = canvas.evaluate(CANVAS)
        assert set(kernel_nodes) <= set(s["hi"]) and s["selected"] == kernel_nodes[0], s
        # the selected node (the kernel's first) lists its kernels in the inspector
        out.locator(".ds-side-tabs .lm-TabBar-tab", has_text="Inspector").first.click()
        inspector = out.locator(".ds-side-tabs .ds-inspector, .ds-side-tabs table").first
        inspector.wait_for(timeout=30_000)
        page.wait_for_function(f"(o) => o.innerText.includes('{kernel_name}')", arg=out.element_handle(), timeout=30_000)
        text = out.locator(".ds-side-tabs").first.inner_text()
        assert "kernels" in text and kernel_name in text, text
        page.screenshot(path=str(ARTIFACTS / "explorer_kernel_folded.png"))
        assert not errors, errors
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "explorer_code_links_failure.png"))
        raise
    finally:
        page.close()


# The report's kernel chooser (Note [One kernel chooser] in viz/report.js): its labels, and per graph
# canvas the highlighted nodes and module boxes drawn.
HIGHLIGHTED = """(c) => ({
    nodes: [...c.querySelectorAll('.ds-stage [data-node]')].map((e) => e.getAttribute('data-node')),
    hi: [...c.querySelectorAll('.ds-stage [data-node].highlight')].map((e) => e.getAttribute('data-node')),
    boxes: [...c.querySelectorAll('.ds-stage [data-group].highlight')].map((e) => e.getAttribute('data-group')),
    selected: (c.querySelector('.ds-stage .ds-selected[data-node]') || {getAttribute: () => null}).getAttribute('data-node')})"""


def test_report_kernel_choice_highlights_folded_nodes(browser, tmp_path):
    """The one-file report of an Inductor capture offers the widget's kernel list (each kernel once);
    choosing a kernel whose nodes are all folded in the first view draws every one of them (the module
    boxes folding its first node opened, or the kernel's own drawing when they do not draw them all) and
    highlights them (the first one selected and inspected with its kernels); in the first view, every
    module box folding one of its nodes is highlighted."""
    import torch

    import tracer
    import viz
    from viz import code_view
    from viz.graph_layout import layout
    from viz.grouping import first_expanded

    scope: dict = {}
    exec(BLOCKS, scope)  # noqa: S102 - the same module source the JupyterLab test runs
    torch.manual_seed(0)
    cap = tracer.capture(scope["Blocks"](), torch.randn(4, 16), backend="inductor")
    g = cap.frames[0].graph
    top = layout(g, expanded=first_expanded(g), engine="linear").boxes
    labels = [lb for lb, _ in code_view.kernel_choices(cap.frames[0])]
    label, nodes = next((lb, ns) for lb, ns in code_view.kernel_nodes(cap.frames[0])
                        if len(ns) >= 2 and not {b.id for b in top} & set(ns))
    holders = {b.group for b in top if b.group is not None and set(b.members) & set(nodes)}
    path = viz.export_html(cap, tmp_path / "blocks_inductor.html")
    with _report_page(browser, path) as page:
        picker = page.locator("select.ds-kernel-choice").first
        shown = [t.strip() for t in picker.locator("option").all_inner_texts()][1:]
        assert shown == labels and len(set(shown)) == len(shown), shown  # the widget's list, each kernel once
        host = page.locator(f'.ds-graphbox[data-graph="{picker.get_attribute("data-graph")}"]').first
        assert host.get_attribute("data-kind") == "root"
        host.scroll_into_view_if_needed()
        host.locator("svg .boxes").wait_for(timeout=30_000)
        assert not set(nodes) & set(host.evaluate(HIGHLIGHTED)["nodes"])  # all folded in the first view
        picker.select_option(label=label)
        page.wait_for_function(f"(c) => {{ const s = c.querySelector('.ds-stage .ds-selected[data-node]');"
                               f" return s && s.getAttribute('data-node') === '{nodes[0]}'; }}",
                               arg=host.element_handle(), timeout=30_000)
        s = host.evaluate(HIGHLIGHTED)
        assert set(nodes) <= set(s["nodes"]) and set(s["hi"]) == set(nodes), s  # all its nodes drawn, no other marked
        crumbs = host.locator(".ds-crumbs").inner_text()
        assert "opened" in crumbs or f"its {len(nodes)} nodes drawn" in crumbs, crumbs
        info = host.locator(".ds-nodeinfo").inner_text()
        assert "kernels" in info and label.split(" ")[0] in info, info  # the node lists its kernels
        host.screenshot(path=str(ARTIFACTS / "report_kernel_folded.png"))
        for _ in range(len(nodes) + 4):  # up to the first view: the boxes folding the kernel's nodes marked
            if host.locator(".ds-crumbs").inner_text().startswith("module boxes"):
                break
            host.locator(".ds-toolbar button", has_text="back").click()
        page.wait_for_timeout(300)
        assert set(host.evaluate(HIGHLIGHTED)["boxes"]) == holders, holders
        picker.select_option(index=0)  # no kernel: nothing highlighted
        page.wait_for_function("(c) => c.querySelector('.ds-stage svg') && !c.querySelector('.ds-stage .highlight')",
                               arg=host.element_handle(), timeout=10_000)
