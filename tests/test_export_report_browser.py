"""The report of torch.export records in Chromium: the overview says why an export failed and lists
draft_export's report; each program's frame shows its graph signature tables and draws its root graph
and HOP bodies."""

from __future__ import annotations

import pytest
import torch
from chromium import checked_page

import tracer
from tests.export_models import CondLoop, DataDependent
from viz.report_file import export_html

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]


def test_export_report_in_chromium(browser, tmp_path):
    cap = tracer.export(CondLoop(), (torch.randn(2, 4),), decompose=True)
    path = export_html(cap, tmp_path / "r.html")
    with checked_page(browser) as (page, _):
        page.goto(path.as_uri(), timeout=60_000)
        page.wait_for_selector("#ds-frame-1[data-ds-loaded='1'] .ds-export-signature", timeout=30_000)
        after = page.locator("#ds-frame-1")
        tables = after.locator(".ds-export-signature table")
        outputs = tables.nth(1).inner_text()
        assert "buffer_mutation" in outputs and "count" in outputs
        assert "user_input" in tables.nth(0).inner_text() and "lin.weight" in tables.nth(0).inner_text()
        # the root graph is drawn, titled as the program it is; a HOP body opens and draws
        assert "Root graph (torch.export, decomposed)" in after.inner_text()
        root = after.locator(".ds-graphbox[data-kind='root']")
        root.scroll_into_view_if_needed()  # graphs are drawn when they come into view
        root.locator("svg [data-node]").first.wait_for(timeout=30_000)
        body = after.locator("details.ds-graph-section", has_text="HOP body true_graph_0 [cond]")
        if not body.evaluate("(d) => d.open"):
            body.locator("summary").click()
        body.scroll_into_view_if_needed()
        body.locator(".ds-graphbox svg [data-node]").first.wait_for(timeout=30_000)
        # run_decompositions(): the two programs' root graphs side by side, add_ removed on the left
        decomposition = page.locator("#ds-frame-decomposition")
        if not decomposition.evaluate("(d) => d.open"):
            decomposition.locator("summary").click()
        page.wait_for_selector("#ds-frame-decomposition[data-ds-loaded='1'] .ds-side svg", timeout=30_000)
        assert "buffer_mutation" in decomposition.locator(".ds-export-decomposition table").first.inner_text()
        sides = decomposition.locator(".ds-side > div")
        assert sides.count() == 2
        assert sides.nth(0).locator("g.ds-diff-removed[data-node='add_']").count() == 1
        assert sides.nth(1).locator("g.ds-diff-added").count() == len(cap.export.decomposition.graph("").added)


def test_failed_export_report_in_chromium(browser, tmp_path):
    cap = tracer.export(DataDependent(), (torch.ones(3),))
    path = export_html(cap, tmp_path / "r.html")
    with checked_page(browser) as (page, _):
        page.goto(path.as_uri(), timeout=60_000)
        failure = page.locator("table.ds-export-failure")
        assert failure.is_visible() and "data_dependent" in failure.inner_text()
        assert " ".join(str(cap.export.failure.user_line).split()) in " ".join(failure.inner_text().split())
        draft = page.locator("table.ds-draft")
        assert draft.is_visible() and cap.export.draft[0].workaround in draft.inner_text()
        assert " ".join(str(cap.export.draft[0].user_line).split()) in " ".join(draft.inner_text().split())
