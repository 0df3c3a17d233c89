"""The static report of torch.export records: the graph signature as role tables, why an export failed
and draft_export's report with user lines; every string escaped. A Chromium run of the written file."""

from __future__ import annotations

import html
import re

import pytest
import torch

import tracer
from tests.export_models import CondLoop, DataDependent
from viz.report_file import expand, export_html


def _rows(page: str, table_after: str) -> list[list[str]]:
    """Cells of the first table after the heading text ``table_after``, unescaped."""
    start = page.index(table_after)
    body = page[start:page.index("</table>", start)]
    return [[html.unescape(re.sub("<[^>]+>", "", c)) for c in re.findall(r"<td>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S) if "<td>" in row]


@pytest.fixture(scope="module")
def decomposed():
    return tracer.export(CondLoop(), (torch.randn(2, 4),), decompose=True)


def test_signature_tables_in_the_report(decomposed, tmp_path):
    page = expand(export_html(decomposed, tmp_path / "r.html").read_text())
    assert page.count("Graph signature (torch.export)") == 2
    before, after = decomposed.frames
    assert _rows(page, "Inputs by role (5)") == [[i.name, i.kind, i.target, "" if i.persistent is None else str(i.persistent)]
                                                 for i in before.export.inputs]
    mutated = page.index("Outputs by role (2)")
    assert _rows(page[mutated:], "Outputs by role (2)") == [[o.name, o.kind, o.target] for o in after.export.outputs]
    assert ["add", "buffer_mutation", "count"] in _rows(page[mutated:], "Outputs by role (2)")


def test_failure_and_draft_report_in_the_overview(tmp_path):
    cap = tracer.export(DataDependent(), (torch.ones(3),))
    page = expand(export_html(cap, tmp_path / "r.html").read_text())
    assert "torch.export (non-strict, torch.export.export): failed" in page
    (row,) = _rows(page, "why it failed")
    assert row[0].startswith("data_dependent") and row[1] == str(cap.export.failure.user_line)
    partial = page[page.index('<details class="ds-export-partial">'):]
    assert html.unescape(re.search(r"<pre>(.*?)</pre>", partial, re.S).group(1)) == cap.export.failure.partial_graph
    (draft,) = _rows(page, "draft_export's report (1)")
    assert draft[:3] == ["data_dependent", str(cap.export.draft[0].user_line), cap.export.draft[0].workaround]
    # the explorer's overview shows the same failure and draft_export report
    from viz.explorer import Explorer
    from viz.export_view import export_run_html

    assert export_run_html(cap) and export_run_html(cap) in Explorer(cap)._overview.value


def test_user_text_is_escaped(tmp_path):
    cap = tracer.export(CondLoop(), (torch.randn(2, 4),))
    cap.frames[0].export.inputs[0].target = "<script>alert(1)</script>"
    page = expand(export_html(cap, tmp_path / "r.html").read_text())
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_explorer_signature_tab_is_the_reports_signature_and_follows_the_frame(decomposed, tmp_path):
    """The widget's Signature tab shows the same HTML the static report shows for the chosen frame."""
    from viz.explorer import Explorer
    from viz.export_view import signature_html

    ex = Explorer(decomposed)
    titles = [ex._tabs.get_title(i) for i in range(len(ex._tabs.children))]
    assert "Signature" in titles
    for f in decomposed.frames:
        ex.select(frame=f.compile_id)
        shown = ex.signature_tab.value
        assert signature_html(f) in shown and f"Frame {f.compile_id}: graph signature" in shown
    # HOP bodies drill down as in a capture: the cond's branch of each program
    ex.select("true_graph_0", frame="0/0")
    assert ex.graph is decomposed.frames[0].subgraphs["true_graph_0"].graph
    ex.select(frame="0/1")
    before, after = decomposed.frames
    assert _rows(ex.signature_tab.value, "Outputs by role (2)") == [[o.name, o.kind, o.target] for o in after.export.outputs]
    kinds = ", ".join(f"{k} {[o.kind for o in after.export.outputs].count(k)}" for k in dict.fromkeys(o.kind for o in after.export.outputs))
    assert f"&rarr; outputs: {kinds}" in ex.signature_tab.value
    page = expand(export_html(decomposed, tmp_path / "r.html").read_text())
    assert signature_html(after) in page  # one source of truth: the report embeds the same fragment
    # a capture has no exported program, so no Signature tab
    plain = Explorer(tracer.capture(lambda x: x.sin(), torch.randn(3)))
    assert "Signature" not in [plain._tabs.get_title(i) for i in range(len(plain._tabs.children))]


def test_range_constraints_beside_the_shape_guards_with_their_user_lines():
    from torch.export import Dim

    from tests.export_models import ShapeChecks
    from viz.export_view import signature_html

    args, shapes = (torch.ones(8), torch.ones(3)), ({0: Dim.AUTO}, {0: Dim.AUTO})
    cap = tracer.export(ShapeChecks(), args, dynamic_shapes=shapes, strict=True)
    f = cap.frames[0]
    assert f.shape_guards and f.export.range_constraints
    page = signature_html(f)
    shapes = page[page.index('class="ds-export-shapes"'):]
    assert _rows(shapes, "Range constraints") == [[r.symbol, f"[{r.lower}, {r.upper}]"] for r in f.export.range_constraints]
    assert _rows(shapes, "Shape guards") == [[g.expr, str(g.user_stack[-1])] for g in f.shape_guards]  # strict: user frames only
    assert any("the divisibility guard" in row[1] for row in _rows(shapes, "Shape guards"))


def test_a_shape_guard_whose_stack_has_only_torch_frames_says_so():
    from tracer.model import ExportProgram, Frame, ShapeGuard, SourceLine
    from viz.export_view import signature_html

    torch_frame = SourceLine("/venv/torch/_higher_order_ops/while_loop.py", 250, "_while_loop_op_wrapper")
    user = SourceLine("/home/u/model.py", 7, "body", "torch._check(x)")
    f = Frame("0/0", "m.py:1", export=ExportProgram("exported", []))
    f.shape_guards = [ShapeGuard("s0 >= 4", [torch_frame]), ShapeGuard("s1 >= 4", []),
                      ShapeGuard("s2 >= 4", [torch_frame, user], user)]
    rows = _rows(signature_html(f)[signature_html(f).index('class="ds-export-shapes"'):], "Shape guards")
    assert rows == [["s0 >= 4", "unknown (only torch frames)"], ["s1 >= 4", "not logged by torch"],
                    ["s2 >= 4", "model.py:7 in body: torch._check(x)"]]


def _boxes(svg: str) -> dict[str, str]:
    """data-node -> class attribute of every node box of an SVG."""
    return {html.unescape(m.group(2)): m.group(1) for m in re.finditer(r'<g class="([^"]*)" data-node="([^"]*)"', svg)}


def test_decomposition_before_and_after_side_by_side_in_the_report_and_the_explorer(decomposed, tmp_path):
    """run_decompositions(): the in-graph add_ of the training IR (left, removed) and the functional add
    that became the BUFFER_MUTATION output (right, added), in the report and in the explorer's tab."""
    from viz.explorer import Explorer

    before, after = decomposed.frames
    d = decomposed.export.decomposition
    (mut,) = [o for o in after.export.outputs if o.kind == "buffer_mutation"]
    assert before.graph.find(target="aten.add_.Tensor") and after.graph.node(mut.name).target == "aten.add.Tensor"
    page = expand(export_html(decomposed, tmp_path / "r.html").read_text())
    start = page.index("run_decompositions(): frame 0/0 (before) and frame 0/1 (after)")
    assert f"diff 0/0 → 0/1: {d.summary}" in page[start:page.index("<h2>Frames (", start)]  # its folded entry
    section = page[page.index('<div class="ds-export-decomposition">'):]  # its payload, opened
    assert _rows(section, "Mutations that became outputs (1)") == [[mut.name, "buffer_mutation", "count"]]
    left, right = re.findall(r'<div class="ds-side"><div>(.*?)</div><div>(.*?)</div></div>', section, re.S)[0]
    root = d.graph("")
    assert {n for n, c in _boxes(left).items() if "ds-diff-removed" in c} == set(root.removed) >= {"add_"}
    assert {n for n, c in _boxes(right).items() if "ds-diff-added" in c} == set(root.added) >= {mut.name}
    assert "ds-diff-changed" in _boxes(right)["output"]  # the output node gained the mutated buffer's value
    # the explorer: the same table, and the two programs' root graphs linked side by side
    ex = Explorer(decomposed)
    assert "Decompositions" in [ex._tabs.get_title(i) for i in range(len(ex._tabs.children))]
    assert _rows(ex.decomposition_tab.children[0].value, "Mutations that became outputs (1)") == [
        [mut.name, "buffer_mutation", "count"]]
    linked = ex.decomposition_tab.linked
    linked.choice.value = 0
    view = linked.view
    assert view is not None and {n for n, c in _boxes(view.svg_a).items() if "ds-diff-removed" in c} >= {"add_"}
    view.select("a", "output")
    assert view.selected_b == "output"
    # a record without run_decompositions() has neither the section nor the tab
    plain = tracer.export(CondLoop(), (torch.randn(2, 4),))
    assert "run_decompositions()" not in expand(export_html(plain, tmp_path / "p.html").read_text())
    assert "Decompositions" not in [Explorer(plain)._tabs.get_title(i) for i in range(len(Explorer(plain)._tabs.children))]
