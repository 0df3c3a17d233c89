"""The two SVG renderers of a Layout (viz/svg.py's ``to_svg`` as text, viz/svg_draw.js's ``buildSvg``
with DOM calls in Chromium) draw the same elements, attributes, numbers and text."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

import viz
from viz.browser_code import Bundle, join
from viz.drawing import drawing
from viz.style import css
from viz.synthetic import chain_graph, joint_like_graph

pytestmark = [pytest.mark.browser, pytest.mark.slow]

UID = "u1"
_BUILD = """async ([src, d, roleCss, uid]) => {
  const { buildSvg } = await import(URL.createObjectURL(new Blob([src], {type: "text/javascript"})));
  return new XMLSerializer().serializeToString(buildSvg(d, roleCss, uid));
}"""


def _tree(e: ET.Element, browser_side: bool) -> tuple:
    """An element as comparable data; the browser's marker id carries the canvas's suffix (several
    canvases share a page) and its module boxes name their box (``data-box``): both set aside."""
    attrs = dict(e.attrib)
    if browser_side:
        attrs.pop("data-box", None)
        for k in ("id", "marker-end"):
            if k in attrs:
                attrs[k] = attrs[k].replace(f"-{UID}", "")
    return (e.tag, (e.text or "").strip(), tuple(sorted(attrs.items())), tuple(_tree(c, browser_side) for c in e))


@pytest.mark.parametrize("case", ["grouped", "flat", "joint"])
def test_to_svg_and_the_canvas_draw_the_same_svg(case, browser):
    if case == "joint":
        g, kw, hi = joint_like_graph(30, layers=2), {"threshold": 1000}, ["fwd_0", "bwd_0"]
    else:
        g, kw, hi = chain_graph(120, layers=3), {"threshold": 10 if case == "grouped" else 1000}, ["l_x_"]
    lay = viz.layout(g, engine="linear", **kw)
    assert any(b.group for b in lay.boxes) == (case == "grouped")
    page = browser.new_page()
    try:
        page.set_content("<html><body></body></html>")
        got = page.evaluate(_BUILD, [join(Bundle(("svg_draw.js",), "module")), drawing(lay, highlight=hi),
                                     css(".ds-graph"), UID])
    finally:
        page.close()
    want = ET.fromstring(viz.to_svg(lay, highlight=hi))
    assert _tree(ET.fromstring(got), True) == _tree(want, False)
