"""A profiled report in Chromium: the tables of lines and modules by time, graphs coloured by time, a node's time
in the inspector; and the profiler's own trace written beside it is a Chrome trace."""

from __future__ import annotations

import json

import pytest
import torch
from chromium import checked_page

import tracer
import viz

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(2048, 256)

    def forward(self, x):
        h = torch.sin(x) * 2
        big = self.proj(h)
        return torch.relu(big) + 1


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    torch.manual_seed(0)
    tmp = tmp_path_factory.mktemp("profile_report")
    prof = tracer.profile(Block(), torch.randn(64, 2048, requires_grad=True), steps=2,
                          trace_file=str(tmp / "trace.json"))
    return prof, viz.export_html(prof, tmp / "profile.html")


def test_the_profilers_trace_is_a_chrome_trace_with_the_graphs_nodes(report):
    prof, _ = report
    data = json.loads(open(prof.trace_file, encoding="utf-8").read())
    ops = [e for e in data["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    assert ops and all({"name", "ts", "dur", "pid", "tid"} <= set(e) for e in ops)
    assert {"aten::addmm", "aten::mm"} & {e["name"] for e in ops}
    assert any(e["name"].startswith("## fx_generated") for e in data["traceEvents"])  # the per-graph markers


def test_the_report_shows_the_tables_and_a_nodes_time(report, browser):
    prof, path = report
    with checked_page(browser) as (page, _):
        page.goto(path.as_uri(), timeout=60_000)
        lines = page.locator(".ds-profile-lines tbody tr")
        assert lines.first.inner_text().split("\t")[1] == prof.by_line()[0].code  # by time, as the Profile says
        assert any("big = self.proj(h)" in r for r in lines.all_inner_texts())
        modules = page.locator(".ds-profile-modules tbody tr").all_inner_texts()
        proj = next(r for r in modules if r.startswith("L['self'].proj"))
        assert "Linear" in proj and float(proj.split("\t")[2]) > 0
        assert any(r.startswith("(top level") for r in modules)  # sin, relu, add: the compiled forward's own code
        # the Dynamo graph and the AOT forward graph drawn with time on their nodes (the hottest: the Linear's)
        hottest = max(prof.by_node("forward").items(), key=lambda kv: kv[1])[0].split(".", 1)[1]
        for kind in ("root", "forward"):
            box = page.locator(f'.ds-graphbox[data-kind="{kind}"]').first
            box.scroll_into_view_if_needed()
            box.locator("svg [data-node][data-time-us]").first.wait_for(timeout=30_000)
        assert page.locator('.ds-graphbox[data-kind="root"] svg [data-node="big"][data-time-us]').count() == 1
        node = page.locator(f'.ds-graphbox[data-kind="forward"] svg [data-node="{hottest}"][data-time-us]').first
        assert float(node.get_attribute("data-time-us")) > 0
        assert node.locator("rect").get_attribute("style").startswith("fill: rgb(")  # filled by its time
        node.scroll_into_view_if_needed()
        node.click()
        time_row = page.locator('.ds-nodeinfo tr[data-key="time"] td').first
        time_row.wait_for(timeout=10_000)
        assert "ms forward" in time_row.inner_text()
        assert page.locator('.ds-nodeinfo tr[data-key="ops"] td').first.inner_text().startswith("forward.")
