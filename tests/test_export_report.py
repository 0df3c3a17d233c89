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
    (draft,) = _rows(page, "draft_export's report (1)")
    assert draft[:3] == ["data_dependent", str(cap.export.draft[0].user_line), cap.export.draft[0].workaround]


def test_user_text_is_escaped(tmp_path):
    cap = tracer.export(CondLoop(), (torch.randn(2, 4),))
    cap.frames[0].export.inputs[0].target = "<script>alert(1)</script>"
    page = expand(export_html(cap, tmp_path / "r.html").read_text())
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
