"""The static report's kernels reach every node, in real Chromium (Note [One kernel chooser] in
viz/report.js): choosing an Inductor kernel whose nodes lie in two module groups draws and highlights
every node it computes (its own drawing, viz/report_kernels.py); a click on a node highlights its
kernel-mates, every node of the kernels computing it, and the inspector lists those kernels. A real
Inductor capture of eight small blocks (tests/test_code_links_browser.py's), whose fused kernels span
two blocks (a block's residual add with the next block's LayerNorm).
"""

from __future__ import annotations

import contextlib
import json
import re

import pytest
from chromium import checked_page
from test_browser import ARTIFACTS
from test_code_links_browser import BLOCKS, HIGHLIGHTED

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]

CLICK = """(c, name) => c.querySelector(`.ds-stage [data-node="${name}"]`)
    .dispatchEvent(new MouseEvent("click", {bubbles: true}))"""


# Each band the report draws over the code tab's output code (report_kernels.js markCode): its line
# number, the text of that line in the <pre>, and the band's and that line's top (client px).
BANDS = """(tab) => [...tab.querySelectorAll(".ds-kernel-line")].map((m) => {
    const pre = m.parentElement.querySelector("pre");
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    const texts = [];
    for (let t = walker.nextNode(); t; t = walker.nextNode()) texts.push(t);
    const lines = texts.map((t) => t.data).join("").split("\\n");
    const line = Number(m.dataset.line);
    let at = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0), k = 0;
    while (at >= texts[k].data.length) { at -= texts[k].data.length; k += 1; }
    const r = document.createRange();
    r.setStart(texts[k], at); r.setEnd(texts[k], Math.min(at + 1, texts[k].data.length));
    return {line, text: lines[line - 1], top: m.getBoundingClientRect().top, textTop: r.getBoundingClientRect().top};
})"""


@pytest.fixture(scope="module")
def blocks(tmp_path_factory):
    """(capture, report path, the root drawing as stored, [(label, nodes)] of the chooser)."""
    import torch

    import tracer
    import viz
    from viz import code_view
    from viz.report_file import expand

    scope: dict = {}
    exec(BLOCKS, scope)  # noqa: S102 - the same module source the JupyterLab test runs
    torch.manual_seed(0)
    cap = tracer.capture(scope["Blocks"](), torch.randn(4, 16), backend="inductor")
    path = viz.export_html(cap, tmp_path_factory.mktemp("kernels") / "blocks_inductor.html")
    page = expand(path.read_text(encoding="utf-8"))
    block = re.search(r'<script type="application/json" class="ds-drawings">([^<]*)</script>', page).group(1)
    return cap, path, json.loads(block)["graphs"][0], code_view.kernel_nodes(cap.frames[0])


@contextlib.contextmanager
def _open(browser, path):
    """The report at ``path`` with its frames loaded, its kernel chooser and the root graph's box drawn: (page,
    chooser, box), for a ``with`` block that fails on a page error (tests/chromium.py ``checked_page``)."""
    with checked_page(browser) as (page, _):
        page.goto(path.as_uri())
        page.wait_for_selector(".ds-lazy[data-ds-frames-loaded]", state="attached", timeout=30_000)
        picker = page.locator("select.ds-kernel-choice").first
        host = page.locator(f'.ds-graphbox[data-graph="{picker.get_attribute("data-graph")}"]').first
        assert host.get_attribute("data-kind") == "root"
        host.scroll_into_view_if_needed()
        host.locator("svg .boxes").wait_for(timeout=30_000)
        yield page, picker, host


def _spanning(cap, kernels) -> tuple[str, list[str]]:
    """A kernel whose nodes lie in two module groups (blocks) of the root graph, not all drawn in the
    first view."""
    from viz.graph_layout import layout
    from viz.grouping import first_expanded, graph_chains

    g = cap.frames[0].graph
    top = {b.id for b in layout(g, expanded=first_expanded(g), engine="linear").boxes}
    block = {n.name: next((p for p, _ in chain if re.search(r"blocks\W*\d+\W*$", p)), None)
             for n, chain in zip(g.nodes, graph_chains(g), strict=True)}
    spans = [(lb, ns) for lb, ns in kernels if len({block[n] for n in ns} - {None}) >= 2 and not set(ns) <= top]
    assert spans, kernels
    return spans[0]


def test_choosing_a_kernel_spanning_two_groups_draws_and_highlights_all_its_nodes(blocks, browser):
    from viz import code_view

    cap, path, root, kernels = blocks
    label, nodes = _spanning(cap, kernels)
    with _open(browser, path) as (page, picker, host):
        assert not set(nodes) <= set(host.evaluate(HIGHLIGHTED)["nodes"])  # the first view does not draw them all
        picker.select_option(label=label)
        page.wait_for_function(f"(c) => {{ const s = c.querySelector('.ds-stage .ds-selected[data-node]');"
                               f" return s && s.getAttribute('data-node') === '{nodes[0]}'; }}",
                               arg=host.element_handle(), timeout=30_000)
        s = host.evaluate(HIGHLIGHTED)
        host.screenshot(path=str(ARTIFACTS / "report_kernel_spanning.png"))
        assert set(nodes) <= set(s["nodes"]), (nodes, s)  # every node it computes drawn ...
        assert set(s["hi"]) == set(nodes), s  # ... and highlighted, no other
        assert f"its {len(nodes)} nodes drawn" in host.locator(".ds-crumbs").inner_text()
        info = host.locator(".ds-nodeinfo").inner_text()
        assert "kernels" in info and label.split(" ")[0] in info, info
        # the frame's code tab marks the lines the widget's code tab marks for it, each band on its line
        tab = page.locator("details.ds-code-tab").first
        tab.evaluate("(d) => { d.open = true; }")
        page.wait_for_function("(d) => d.querySelector('.ds-kernel-line')", arg=tab.element_handle(), timeout=10_000)
        (ig, kernel), = [(ig, k) for ig in cap.frames[0].inductor for k in ig.kernels
                         if code_view.kernel_key(ig, k) == dict(code_view.kernel_choices(cap.frames[0]))[label]]
        marks = tab.evaluate(BANDS)
        assert [m["line"] for m in marks] == code_view.kernel_lines(ig, [kernel]) and marks, marks
        assert all(kernel.name in m["text"] and abs(m["top"] - m["textTop"]) < 3 for m in marks), marks
        host.locator(".ds-toolbar button", has_text="back").click()  # back to the first view, boxes marked
        page.wait_for_function("(c) => c.querySelector('.ds-crumbs').textContent.startsWith('module boxes')",
                               arg=host.element_handle(), timeout=10_000)
        assert host.evaluate(HIGHLIGHTED)["boxes"]


def test_clicking_a_node_highlights_its_kernel_mates(blocks, browser):
    cap, path, root, kernels = blocks
    _, nodes = _spanning(cap, kernels)
    other = nodes[-1]  # a node of a kernel spanning two blocks, shown where search takes it (its block opened)
    mates = {m for lb, ns in kernels if other in ns for m in ns}
    computing = [lb for lb, ns in kernels if other in ns]
    with _open(browser, path) as (page, picker, host):
        host.evaluate("(c, n) => c.dsGoTo(n)", other)
        page.wait_for_function("([c, n]) => { const s = c.querySelector('.ds-stage .ds-selected[data-node]');"
                               " return s && s.getAttribute('data-node') === n; }",
                               arg=[host.element_handle(), other], timeout=10_000)
        assert not host.evaluate(HIGHLIGHTED)["hi"]  # no kernel chosen: nothing marked
        host.evaluate(CLICK, other)  # the click redraws at once
        s = host.evaluate(HIGHLIGHTED)
        host.screenshot(path=str(ARTIFACTS / "report_kernel_mates.png"))
        drawn = set(s["nodes"])
        assert len(mates & drawn) >= 2 and s["selected"] == other, (s, mates)
        assert set(s["hi"]) == mates & drawn, (s, mates)  # its kernel-mates drawn here, no other
        info = host.locator(".ds-nodeinfo").inner_text()
        assert "kernels" in info and all(lb.split(" ")[0] in info for lb in computing), info
