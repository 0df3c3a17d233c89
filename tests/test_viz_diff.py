"""Views of a FrameDiff: static HTML (tables, two graphs side by side coloured by change), the
mime bundle, the explorer's Recompiles tab and its linked DiffView; user strings escaped."""

from __future__ import annotations

import html
import re

import pytest
import torch

import tracer
import viz  # noqa: F401  (registers the FrameDiff renderer)
from tracer.model import Capture, Frame, Graph, Guard, Node
from viz.diff_view import diff_html, graph_diff_svg, recompiles_html
from viz.diff_widget import DiffView, recompiles_tab
from viz.explorer import Explorer
from viz.html import capture_html


def shape_fn(x):
    return x.sin() * 2


@pytest.fixture(scope="module")
def cap() -> Capture:
    return tracer.capture(shape_fn, torch.randn(3), more_calls=[(torch.randn(5),)])


def _boxes(svg: str) -> dict[str, str]:
    """data-node -> class attribute of every node box of an SVG."""
    return {html.unescape(m.group(2)): m.group(1) for m in re.finditer(r'<g class="([^"]*)" data-node="([^"]*)"', svg)}


def test_sides_are_coloured_by_change_and_linked(cap):
    d = cap.recompiles[0].diff
    root = d.graph("")
    left = _boxes(graph_diff_svg(cap.frame(d.a).graph, root, "a"))
    right = _boxes(graph_diff_svg(cap.frame(d.b).graph, root, "b"))
    assert {n for n, c in right.items() if "ds-diff-added" in c} == set(root.added)
    assert {n for n, c in left.items() if "ds-diff-changed" in c} == {p.a for p in root.changed}
    assert not any("ds-diff" in c for n, c in left.items() if n == "output")  # unchanged keeps its role colour
    svg = graph_diff_svg(cap.frame(d.a).graph, root, "a")
    assert 'data-node="sin" data-partner="sin"' in svg


def test_linked_view_selects_the_partner(cap):
    d = cap.recompiles[0].diff
    view = DiffView(d, cap.frame(d.a), cap.frame(d.b), graph="aot.inference")
    renamed = next(p for p in d.graph("aot.inference").pairs if p.a != p.b)  # names shift: arg0_1 ↔ arg1_1
    view.select("a", renamed.a)
    assert (view.selected_a, view.selected_b) == (renamed.a, renamed.b)
    added = d.graph("aot.inference").added[0]
    view.select("b", added)
    assert (view.selected_a, view.selected_b) == ("", added)
    with pytest.raises(ValueError, match=r"must be one of \['a', 'b'\]"):
        view.select("c", "x")


def test_the_one_file_report_keeps_each_recompile_diff_in_a_payload(cap, tmp_path):
    """viz/report_file.py: the overview names each recompile; its diff (graphs side by side) is a
    payload shown when opened, the same HTML the eager report shows."""
    from viz.report_file import payloads

    page = viz.export_html(cap, tmp_path / "r.html").read_text(encoding="utf-8")
    visible = page[:page.index("<script>")]
    assert "Recompiles: what changed" in visible and 'class="ds-side"' not in visible
    r = cap.recompiles[0]
    assert f'id="ds-frame-recompile-0" data-payload="recompile-0"><summary>{r.compile_id} replaced {r.replaced}: ' in visible
    diff = payloads(page)["recompile-0"]
    assert diff == diff_html(r.diff, cap.frame(r.diff.a), cap.frame(r.diff.b)) and diff.count('class="ds-side"') == 2


def test_report_and_explorer_show_the_recompile(cap):
    page = capture_html(cap)
    assert "Recompiles: what changed" in page and "went dynamic in dim 0" in page
    assert page.count('class="ds-side"') == 2  # root and the AOT inference graph, side by side
    own = page.count('<script type="application/json" class="ds-') + page.count("<script>(() => {")
    assert page.count("<script") == own  # only the report's own data blocks and its one drawing script
    tabs = Explorer(cap).widget.children[1]
    titles = [tabs.get_title(i) for i in range(len(tabs.children))]
    assert "Recompiles" in titles
    tab = recompiles_tab(cap)
    assert tab.view is None  # nothing laid out until a recompile is picked
    tab.choice.value = 0
    assert tab.graph.value == "" and isinstance(tab.view, DiffView)
    assert tab.view.gd is cap.recompiles[0].diff.graph("")


def test_mimebundle_text_is_the_text_diff(cap):
    d = cap.recompiles[0].diff
    bundle = d._repr_mimebundle_()
    assert bundle["text/plain"] == str(d) and str(d).startswith("diff 0/0 → 0/1: recompiled because")
    assert "Guards" in bundle["text/html"]
    assert recompiles_html(Capture()) == ""


def test_user_strings_are_escaped():
    bad = "<script>alert(1)</script>"
    g = lambda t: Graph([Node("x", "placeholder", "x", role="operand", users=[bad]),  # noqa: E731
                         Node(bad, "call_function", t, ["x"], inputs=["x"], users=["output"]),
                         Node("output", "output", "output", [f"({bad},)"], inputs=[bad], role="output")])
    a = Frame("0/0", bad, graph=g("torch.sin"), guards=[Guard("CONSTANT_MATCH", bad, [f"{bad} == 1"])])
    b = Frame("0/1", bad, graph=g("torch.cos"), guards=[Guard("CONSTANT_MATCH", bad, [f"{bad} == 2"])])
    d = tracer.diff(a, b, reason=bad)
    page = diff_html(d, a, b)
    assert bad not in page and "&lt;script&gt;" in page


def test_a_long_guard_diff_folds_its_rows_past_the_first_ones():
    """Note [Long guard diffs]: the first MAX_ROWS guard rows are the table, the rest a second table in a
    folded <details>; every row is in the page, each once, in the diff's order."""
    from viz.diff_view import MAX_ROWS

    def frame(size: int) -> Frame:
        return Frame("0/0", "f.py:1 in f", guards=[Guard("TENSOR_MATCH", f"L['x{i}']", [f"check_tensor(L['x{i}'], size=[{size}])"])
                                                   for i in range(MAX_ROWS + 7)])

    d = tracer.diff(frame(3), frame(4))
    assert len(d.guards) == MAX_ROWS + 7
    page = diff_html(d)
    shown, _, folded = page.partition('<details class="ds-more-guards"><summary>7 more guard changes</summary>')
    assert folded and folded.index("</details>") > folded.rindex("L[&#39;x")
    rows = [html.unescape(s) for s in re.findall(r"<td>(L\[&#39;x\d+&#39;\])</td>", page)]
    assert rows == [g.source for g in d.guards]  # each once, in order
    assert all(f"L[&#39;x{i}&#39;]" in shown for i in range(MAX_ROWS)) and f"L[&#39;x{MAX_ROWS}&#39;]" not in shown.split("<h4>Guards")[1]
    short = diff_html(tracer.diff(Frame("0/0", "f.py:1 in f", guards=frame(3).guards[:5]), Frame("0/0", "f.py:1 in f", guards=frame(4).guards[:5])))
    assert "ds-more-guards" not in short
