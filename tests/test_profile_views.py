"""A Profile's views without a browser: time per drawn node, the inspector's facts, the explorer's colours, the tables."""

from __future__ import annotations

import pytest
import torch

import tracer
from viz.profile_explorer import ProfileExplorer
from viz.profile_view import graph_times, module_times, profile_html, time_facts


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(512, 256)

    def forward(self, x):
        s = torch.sin(x)
        h = s * 2
        return torch.relu(self.proj(h))


@pytest.fixture(scope="module")
def profiles():
    torch.manual_seed(0)
    x = torch.randn(32, 512, requires_grad=True)
    aot = tracer.profile(Net(), x, steps=1)
    ind = tracer.profile(Net(), x, steps=1, backend="inductor")
    # views read plain data: render what a saved profile loads back
    return tracer.Profile.from_json(aot.to_json()), tracer.Profile.from_json(ind.to_json())


def test_times_on_the_drawn_graphs_are_the_profiles_own(profiles):
    aot, ind = profiles
    f = aot.capture.frames[0]
    t = graph_times(aot, f)
    assert sum(t["forward"].values()) + sum(t["backward"].values()) == pytest.approx(aot.attributed_us)
    assert set(t["root"]) <= {n.name for n in f.graph.nodes} and t["root"]
    # inductor: the fused sin*2 kernel's time is on both Dynamo nodes it computes (shared, not split)
    fi = ind.capture.frames[0]
    k = next(n for n in ind.nodes if n.graph == "forward" and set(n.dynamo_nodes) == {"s", "h"})
    ti = graph_times(ind, fi)
    assert set(ti) == {"root"} and ti["root"]["s"] >= k.self_us and ti["root"]["h"] >= k.self_us
    facts = time_facts(ind, fi, "root", "h")
    assert "shared" in facts["time"] and any(x.startswith(f"forward.{k.node}:") for x in facts["kernels"])
    assert time_facts(ind, fi, "root", "l_x_") == {}


def test_modules_and_tables(profiles):
    aot, _ = profiles
    rows = {path: (typ, fw, bw) for path, typ, fw, bw in module_times(aot)}
    assert rows["L['self'].proj"][0] == "torch.nn.modules.linear.Linear" and rows["L['self'].proj"][1] > 0
    assert sum(fw + bw for _, fw, bw in rows.values()) == pytest.approx(aot.attributed_us)  # no module nesting here
    page = profile_html(aot)
    assert "s = torch.sin(x)" in page and "L[&#39;self&#39;].proj" in page and "Not on a graph node" in page


def test_the_explorer_colours_the_dynamo_graph_and_shows_the_time(profiles):
    for prof in profiles:
        ex = ProfileExplorer(prof)
        heat = ex.canvas.drawing["heat"]
        times = graph_times(prof, prof.capture.frames[0])["root"]
        hottest = max(times, key=times.get)
        assert heat[hottest][0] == 1.0 and all(0 < v[0] <= 1.0 for v in heat.values())
        assert "ms forward" in ex.node_info(hottest)["time"]
    with pytest.raises(TypeError, match="tracer.Profile"):
        ProfileExplorer(profiles[0].capture)


def test_the_explorers_static_html_carries_each_nodes_time(profiles):
    """Note [Node facts without a script]: a page that does not run the script (GitHub, nbviewer) shows,
    in the node facts, each profiled node's time as the inspector does."""
    import html
    import re

    for prof in profiles:
        f = prof.capture.frames[0]
        times = graph_times(prof, f)["root"]
        hottest = max(times, key=times.get)
        page = ProfileExplorer(prof)._repr_mimebundle_()["text/html"]
        facts = page[page.index('<details class="ds-node-facts">'):]
        row = re.search(rf"<tr><th>{hottest}</th><td>(.*?)</td></tr>", facts, re.S)
        assert row, hottest
        want = time_facts(prof, f, "root", hottest)["time"]
        assert f"<b>time</b>: {html.escape(want)}" in row.group(1)
        assert ("<b>kernels</b>" if prof.backend == "inductor" else "<b>ops</b>") in row.group(1)
        cold = next(n.name for n in f.graph.nodes if n.op == "placeholder")
        assert "<b>time</b>" not in re.search(rf"<tr><th>{cold}</th><td>(.*?)</td></tr>", facts, re.S).group(1)
