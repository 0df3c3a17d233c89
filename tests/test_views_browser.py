"""The static report of real models in headless Chromium at 1,440 x 900, opened from a file (no kernel).

Three real training captures: bench.models' 12-layer transformer and vision CNN, and a 4-layer GPT-2
built from ``transformers``' config with random weights (its graph breaks are real). For each report:
the forward and backward graphs are drawn; the first view's module-box labels render at >= 10 px on
the root and the backward graph; the search box centres a node folded inside a module box; the guards
view folds and filters; the Code tab opens; the page never scrolls sideways. On GPT-2 also: module boxes
open one level at a time (report and widget), and search reaches nodes folded two levels deep.
Screenshots go to tests/artifacts/.
"""

from __future__ import annotations

import pathlib
import re

import pytest
import torch
from chromium import checked_page

import tracer
import viz

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]

ARTIFACTS = pathlib.Path(__file__).resolve().parent / "artifacts"
WIDTH, HEIGHT = 1440, 900


def _gpt2() -> tracer.Capture:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=4, n_embd=256, n_head=4, vocab_size=1000, n_positions=128)
    model = transformers.GPT2LMHeadModel(cfg)
    ids = torch.randint(0, 1000, (2, 64))
    return tracer.capture(lambda ids: model(ids, labels=ids).loss, ids)


def _bench(name: str) -> tracer.Capture:
    from bench import models

    torch.manual_seed(0)
    model, args = models.make(name, "full")
    return tracer.capture(model, *args)


# The measurements, in the page: per drawn graph its kind, boxes, the label size of its first view
# (FONT_PX x the stage's scale) and the group labels inside the view; the page's scroll width.
MEASURE = """() => {
  const out = {scrollWidth: document.documentElement.scrollWidth, graphs: []};
  for (const host of document.querySelectorAll('.ds-graphbox')) {
    const stage = host.querySelector('.ds-stage');
    const view = host.querySelector('.ds-view');
    if (!stage || !view) continue;
    const m = /scale\\(([0-9.e-]+)\\)/.exec(stage.style.transform || '');
    const k = m ? parseFloat(m[1]) : 0;
    const vr = view.getBoundingClientRect();
    const labels = [];
    for (const t of stage.querySelectorAll('g.group > text:not(.sub)')) {
      const r = t.getBoundingClientRect();
      if (r.right > vr.left && r.left < vr.right && r.bottom > vr.top && r.top < vr.bottom) labels.push(r.height);
    }
    out.graphs.push({kind: host.dataset.kind, boxes: stage.querySelectorAll('[data-node],[data-group]').length,
                     label_px: 12 * k, groups_in_view: labels.length, min_label_box: labels.length ? Math.min(...labels) : null,
                     width: parseFloat((stage.querySelector('svg.ds-graph') || {getAttribute: () => '0'}).getAttribute('width'))});
  }
  return out;
}"""


@pytest.fixture(scope="module")
def gpt2():
    return _gpt2()


@pytest.mark.parametrize("name", ["transformer12", "cnn", "gpt2"])
def test_report_of_a_real_model(name, browser, tmp_path, request):
    cap = request.getfixturevalue("gpt2") if name == "gpt2" else _bench(name)
    path = viz.export_html(cap, tmp_path / f"{name}.html")
    with checked_page(browser, WIDTH, HEIGHT) as (page, errors):
        page.goto(path.as_uri())
        # a small report shows every frame at load, decoded from its payload (viz/report_file.py)
        page.wait_for_selector(".ds-lazy[data-ds-frames-loaded]", state="attached", timeout=30_000)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"report_{name}_top.png"))
        hosts = page.locator(".ds-graphbox:visible")  # graphs are drawn on sight (Note [Drawing on sight])
        for i in range(hosts.count()):
            hosts.nth(i).scroll_into_view_if_needed()
            page.wait_for_timeout(50)
        page.wait_for_selector(".ds-graphbox svg .boxes", timeout=30_000)
        page.wait_for_timeout(300)  # the fit runs in the next animation frame
        got = page.evaluate(MEASURE)
        assert not errors, errors
        assert got["scrollWidth"] <= WIDTH, got["scrollWidth"]  # no horizontal page scroll
        kinds = {g["kind"]: g for g in got["graphs"]}
        assert {"root", "forward", "backward"} <= set(kinds), kinds.keys()
        for g in got["graphs"]:
            assert g["boxes"] > 0, g
            assert g["label_px"] >= 9.99, g  # Note [Readable first view]: 12 px x 10/12
        for kind in ("root", "backward"):  # module boxes of the first view (of the graphs that have modules), readable
            grouped = [g for g in got["graphs"] if g["kind"] == kind and g["groups_in_view"]]
            assert grouped and all(g["min_label_box"] >= 10 for g in grouped), got["graphs"]

        # search: a node folded inside a module box of the backward graph is found and centred
        host = page.locator(_biggest(page, "backward"))
        host.scroll_into_view_if_needed()
        needle = _folded_node(page, _biggest(page, "backward"))
        box = host.locator("input.ds-search")
        box.fill(needle)
        box.press("Enter")
        page.wait_for_timeout(200)
        centred = host.evaluate("""(h) => {
            const hit = h.querySelector('.ds-hit'); if (!hit) return null;
            const r = hit.getBoundingClientRect(), v = h.querySelector('.ds-view').getBoundingClientRect();
            return [Math.abs((r.left + r.right) / 2 - (v.left + v.right) / 2), Math.abs((r.top + r.bottom) / 2 - (v.top + v.bottom) / 2)];
        }""")
        assert centred is not None and centred[0] < 5 and centred[1] < 5, centred
        host.screenshot(path=str(ARTIFACTS / f"report_{name}_backward_search.png"))

        # the module view links to the graph: a module's path finds its box in the root graph
        link = page.locator("a.ds-module-link").nth(1)
        if link.count():
            link.click()
            page.wait_for_timeout(200)
            report = link.locator("xpath=ancestor::div[contains(@class, 'ds-report')][1]")  # the link's frame
            graph = report.locator(f'.ds-graphbox[data-graph="{link.get_attribute("data-graph")}"]')
            assert graph.locator(".ds-hit").count() >= 1 and "of" in graph.locator(".ds-found").inner_text()

        # guards: folded at first, a group opens into rows, the filter keeps only matching groups open
        guards = page.locator(".ds-guards").first
        assert guards.locator("details.ds-guard-group[open]").count() == 0
        first = guards.locator("details.ds-guard-group").first
        first.locator("summary").click()
        first.locator("tbody tr").first.wait_for(timeout=5000)  # rows are built from JSON when the group opens
        assert first.locator("tbody tr").count() > 0
        groups_before = guards.locator("details.ds-guard-group:visible").count()
        guards.locator("input.ds-guard-filter").fill("BACKEND_MATCH")
        page.wait_for_timeout(100)
        visible = guards.locator("details.ds-guard-group:visible")
        assert 1 <= visible.count() < groups_before
        assert "BACKEND_MATCH" in visible.first.locator("tbody").inner_text()
        assert "match" in guards.locator(".ds-guard-count").inner_text()
        guards.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"report_{name}_guards.png"))
        assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH

        # the Code tab: folded at first; opened, original and transformed code side by side, page still fits
        code = page.locator("section.ds-frame:not(.ds-grey) details.ds-code-tab").first  # a compiled attempt's
        assert not code.evaluate("(d) => d.open")
        code.locator("summary").first.click()
        assert "transformed (installed by Dynamo)" in code.inner_text() and "Guard function" in code.inner_text()
        code.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"report_{name}_code.png"))
        assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH


def _biggest(page, kind: str) -> str:
    """A selector of the largest drawn graph of ``kind`` (each frame's report has its own drawings
    block and ``data-graph`` numbering, viz/report_file.py): the host is marked ``data-biggest``."""
    return page.evaluate("""(kind) => {
        let best = null, n = -1;
        for (const h of document.querySelectorAll(`.ds-graphbox[data-kind="${kind}"]`)) {
            const data = JSON.parse(h.closest('.ds-report').querySelector('script.ds-drawings').textContent);
            const g = data.graphs[Number(h.dataset.graph)];
            if (g.nodes > n) { n = g.nodes; best = h; }
        }
        for (const h of document.querySelectorAll('[data-biggest]')) h.removeAttribute('data-biggest');
        best.dataset.biggest = kind;
        return `.ds-graphbox[data-biggest="${kind}"]`;
    }""", kind)


def _folded_node(page, selector: str) -> str:
    """A node name folded inside a module box of the graph at ``selector``'s first view (from the page's data)."""
    return page.evaluate("""(sel) => {
        const h = document.querySelector(sel);
        const data = JSON.parse(h.closest('.ds-report').querySelector('script.ds-drawings').textContent);
        const i = Number(h.dataset.graph);
        const open = data.graphs[i].open;
        for (const sub of Object.values(open)) for (const b of sub.b) if (b[0].length > 4) return b[0];
        return data.graphs[i].b[0][0];
    }""", selector)


# The view of one graph box: the hit's distance from the view's centre, the search count, the crumbs,
# and the module boxes and nodes drawn now.
VIEW_STATE = """(h) => {
    const hit = h.querySelector('.ds-hit'), v = h.querySelector('.ds-view').getBoundingClientRect();
    let off = null;
    if (hit) { const r = hit.getBoundingClientRect(); off = Math.max(Math.abs((r.left + r.right - v.left - v.right) / 2),
                                                                      Math.abs((r.top + r.bottom - v.top - v.bottom) / 2)); }
    return {off, hit: hit && hit.getAttribute('data-node'), hit_group: hit && hit.getAttribute('data-group'),
            found: h.querySelector('.ds-found').textContent,
            crumbs: h.querySelector('.ds-crumbs').textContent,
            groups: [...h.querySelectorAll('.ds-stage [data-group]')].map((e) => e.getAttribute('data-group')),
            nodes: h.querySelectorAll('.ds-stage [data-node]').length};
}"""


def test_report_search_and_folding_reach_every_node(gpt2, browser, tmp_path):
    """Note [Search reaches folded nodes], Note [Folding in the report], on GPT-2's root graph: a module box
    opens one level at a time; a search by source line finds nodes folded two levels deep, opens the boxes
    on the way and centres the node, hit after hit; an op search counts nodes, not boxes."""
    from viz.graph_layout import source_line

    f = max(gpt2.frames, key=lambda fr: len(fr.graph.nodes))
    h = "L['self'].transformer.h"
    mlp = [n for n in f.graph.nodes if any(e[0] == f"{h}.3.mlp" for e in n.meta.get("nn_module_stack", []))
           and source_line(n.meta)]
    line = source_line(mlp[0].meta)  # "modeling_gpt2.py:NNN  code": a line of every block's MLP
    same = [n.name for n in f.graph.nodes if line in source_line(n.meta)]
    assert len(same) >= 4 and mlp[0].name in same  # one per block at least
    path = viz.export_html(gpt2, tmp_path / "gpt2.html")
    with checked_page(browser, WIDTH, HEIGHT) as (page, _):
        page.goto(path.as_uri())
        page.wait_for_selector(".ds-lazy[data-ds-frames-loaded]", state="attached", timeout=30_000)
        index = page.evaluate("""(cid) => {  // the root graph of the largest frame (each frame numbers its own graphs)
            for (const s of document.querySelectorAll('section.ds-frame'))
              if (s.textContent.includes(cid)) { const g = s.querySelector('.ds-graphbox[data-kind="root"]');
                if (g) { s.dataset.searchTest = "1"; g.dataset.searchTest = "1"; return g.dataset.graph; } }
            return null; }""", f.compile_id)
        host = page.locator('.ds-graphbox[data-search-test="1"]')
        host.scroll_into_view_if_needed()
        host.locator("svg .boxes").wait_for(timeout=30_000)
        page.wait_for_timeout(200)
        state = lambda: host.evaluate(VIEW_STATE)  # noqa: E731
        click = lambda group: host.evaluate(  # noqa: E731
            "(h, g) => [...h.querySelectorAll('.ds-stage [data-group]')].find((e) => e.getAttribute('data-group') === g)"
            ".dispatchEvent(new MouseEvent('click', {bubbles: true}))", group)
        assert h in state()["groups"]

        # one level at a time: transformer.h -> h.0 ... h.3 -> the block's layers; "back" goes one level up
        click(h)
        page.wait_for_timeout(200)
        s = state()
        assert s["groups"] == [f"{h}.{i}" for i in range(4)], s
        click(f"{h}.0")
        page.wait_for_timeout(200)
        s = state()
        assert {f"{h}.0.ln_1", f"{h}.0.attn", f"{h}.0.mlp"} <= set(s["groups"]) and f"{h}.0" in s["crumbs"], s
        host.locator(".ds-toolbar button", has_text="back").click()
        page.wait_for_timeout(200)
        assert state()["groups"] == [f"{h}.{i}" for i in range(4)]
        host.locator(".ds-toolbar button", has_text="back").click()
        page.wait_for_timeout(200)
        assert h in state()["groups"]

        # a source line: every node on it is counted, each one opened to and centred in turn
        box = host.locator("input.ds-search")
        box.fill(line)
        seen = []
        for i in range(len(same)):
            box.press("Enter")
            page.wait_for_timeout(250)
            s = state()
            assert s["found"] == f"{i + 1} of {len(same)}" and s["hit"] in same, s
            assert s["off"] is not None and s["off"] < 5, s
            assert "opened" in s["crumbs"], s  # drawn inside its module box, not the box
            seen.append(s["hit"])
        assert sorted(seen) == sorted(same)
        host.screenshot(path=str(ARTIFACTS / "report_gpt2_search_folded.png"))

        # an op, searched from a level down: the whole graph's nodes are counted (9 LayerNorms: two per
        # block and ln_f), not the boxes folding them
        host.locator(".ds-toolbar button", has_text="back").click()
        box.fill("layer_norm")
        box.press("Enter")
        page.wait_for_timeout(250)
        norms = [n.name for n in f.graph.nodes if "layer_norm" in n.target]
        s = state()
        assert len(norms) == 9 and s["found"] == f"1 of {len(norms)}" and s["hit"] in norms and s["off"] < 5, s

        # the module view's link to a module folded two levels deep opens the boxes above it and centres it
        link = page.locator(f'section.ds-frame[data-search-test="1"] a.ds-module-link[data-graph="{index}"][data-module="{h}.2.attn"]')
        link.click()
        page.wait_for_timeout(300)
        s = state()
        assert s["hit_group"] == f"{h}.2.attn" and s["off"] < 5 and f"{h}.2" in s["crumbs"], s


@pytest.mark.parametrize("engine", ["dot", "linear"])
def test_gpt2_backward_first_view_follows_the_gradient(gpt2, engine):
    """The live GPT-2 backward's first view, drawn by either engine, runs along the gradient: ln_f above h.3
    above ... above h.0, though each block's backward reads the saved output of the block before (Note
    [Saved edges do not rank] in viz/backward_groups.py); before, the blocks were drawn in the forward's order."""
    from viz.grouping import first_expanded

    (graph,) = [f.aot.backward for f in gpt2.frames if f.aot is not None and f.aot.backward is not None
                and len(f.aot.backward.nodes) > 100]
    lay = viz.layout(graph, expanded=first_expanded(graph), engine=engine)
    assert lay.engine == engine, lay.note
    y = {b.group: b.y for b in lay.boxes if b.group}
    t = "L['self'].transformer"
    order = [f"{t}.ln_f"] + [f"{t}.h.{i}" for i in (3, 2, 1, 0)]
    assert [y[p] for p in order] == sorted(y[p] for p in order) and len({y[p] for p in order}) == 5, y


def test_widget_opens_gpt2_modules_one_level_at_a_time(gpt2):
    """The explorer on the same GPT-2 capture: transformer.h opens on its four blocks, a block on its layers."""
    from viz.explorer import Explorer

    ex = Explorer(gpt2)
    h = "L['self'].transformer.h"
    assert h in ex.canvas.group_paths()
    ex.expand(h)
    assert [p for p in ex.canvas.group_paths() if p.startswith(h)] == [f"{h}.{i}" for i in range(4)]
    ex.expand(f"{h}.0")
    inside = [p for p in ex.canvas.group_paths() if p.startswith(f"{h}.0.")]
    assert {f"{h}.0.ln_1", f"{h}.0.attn", f"{h}.0.mlp"} <= set(inside)
    assert all(p.count(".") == h.count(".") + 2 for p in inside)  # one level down, nothing deeper


@pytest.mark.parametrize("name", ["cnn", "gpt2_hf", pytest.param("resnet18", marks=pytest.mark.slow)])
def test_log_report_of_a_real_model(name, browser, tmp_path):
    """The report of a training step's TORCH_TRACE log (no nn_module_stack in it): each root graph opens
    on module boxes inferred from the log (Note [Groups inferred from a log] in viz/module_paths.py), their
    labels >= 10 px in the first view; every graph's labels readable; no drawing wider than 4x the viewport;
    the backward drawn along the gradient, in runs of its "no module" group (resnet18's 41 runs were one
    row 7,836 px wide: they wrap, Note [Wrapped rows] in viz/layout_linear.py)."""
    if name == "gpt2_hf":
        pytest.importorskip("transformers")
    from bench.report_bytes import _log

    loaded = tracer.load_trace(_log(name, "full", str(tmp_path)))
    path = viz.export_html(loaded, tmp_path / f"{name}_log.html")
    with checked_page(browser, WIDTH, HEIGHT) as (page, errors):
        page.goto(path.as_uri())
        page.wait_for_selector(".ds-lazy[data-ds-frames-loaded]", state="attached", timeout=60_000)
        hosts = page.locator(".ds-graphbox:visible")
        for i in range(hosts.count()):
            hosts.nth(i).scroll_into_view_if_needed()
            page.wait_for_timeout(50)
        page.wait_for_selector(".ds-graphbox svg .boxes", timeout=30_000)
        page.wait_for_timeout(300)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"report_{name}_log_top.png"))
        got = page.evaluate(MEASURE)
        assert not errors, errors
        assert got["scrollWidth"] <= WIDTH, got["scrollWidth"]
        assert got["graphs"] and all(g["label_px"] >= 9.99 for g in got["graphs"]), got["graphs"]
        roots = [g for g in got["graphs"] if g["kind"] == "root" and g["boxes"] >= 20]  # the model's graphs, not a break's tail
        assert roots and all(g["groups_in_view"] and g["min_label_box"] >= 10 for g in roots), roots
        assert all(0 < g["width"] <= 4 * WIDTH for g in roots), roots
        wide = [(g["kind"], g["width"]) for g in got["graphs"] if g["width"] > 4 * WIDTH]
        assert not wide, wide
        # the backward, placed sparsely by the log, opens on the runs of its "no module" group, in the
        # gradient's order, their labels readable (Note [Runs of the no-module group] in viz/backward_groups.py)
        backward = max((g for g in got["graphs"] if g["kind"] == "backward"), key=lambda g: g["boxes"])  # the model's
        assert backward["groups_in_view"] and backward["min_label_box"] >= 10, backward
        runs = page.evaluate("""(sel) => [...document.querySelector(sel).querySelectorAll('[data-group]')]
            .map((e) => e.getAttribute('data-group')).filter((p) => p.startsWith('(no module).'))""", _biggest(page, "backward"))
        numbers = [int(p.rsplit(".", 1)[1]) for p in runs]
        assert len(runs) > 1 and sorted(numbers) == list(range(1, len(runs) + 1)), runs  # every run, once
        labels = page.evaluate("""(sel) => [...document.querySelector(sel).querySelectorAll('[data-group^="(no module)."]')]
            .map((e) => e.querySelector('text:not(.sub)').textContent)""", _biggest(page, "backward"))
        assert labels and all(re.fullmatch(r".+\.py:\d+( \+\d+ lines?)?|op .+", t) for t in labels), labels  # what each run holds
        # the joint (folded when the page opens) and the forward open on module boxes inferred from the log
        # (Note [Joint forward half in traced order] in tracer/trace_log/joint_partition.py)
        page.evaluate("document.querySelectorAll('details.ds-graph-section[data-kind=\"joint\"]').forEach((d) => { d.open = true; })")
        for i in range(hosts.count()):
            hosts.nth(i).scroll_into_view_if_needed()
            page.wait_for_timeout(50)
        page.wait_for_timeout(300)
        page.locator(_biggest(page, "joint")).screenshot(path=str(ARTIFACTS / f"report_{name}_log_joint.png"))
        got = page.evaluate(MEASURE)
        for kind in ("joint", "forward"):
            g = max((g for g in got["graphs"] if g["kind"] == kind), key=lambda g: g["boxes"])
            assert g["groups_in_view"] and g["min_label_box"] >= 10 and 0 < g["width"] <= 4 * WIDTH, (kind, g)
            inferred = page.evaluate("""(sel) => [...document.querySelector(sel).querySelectorAll('[data-group^="L["] text.sub')]
                .map((t) => t.textContent)""", _biggest(page, kind))
            assert inferred and all("inferred" in t for t in inferred), (kind, inferred)


def test_gpt2_logging_breaks_are_one_row(gpt2):
    """GPT-2's graph breaks at one logging call (reached with different arguments) are one row of the
    overview, with every compile id they hit, their type first, and Dynamo's generic first line folded."""
    import re

    from viz.panels import overview_html

    logging = [b for b in gpt2.graph_breaks if "logging.Logger" in b.reason]
    if not logging:
        pytest.skip("this transformers release makes no logging graph break in GPT-2's forward")
    groups = [g for g in gpt2.grouped_breaks() if g.gb_type.startswith("logging.Logger")]
    assert len({b.location for b in logging}) == 1 and len(groups) == 1  # one line, one cause: one row
    (group,) = groups
    assert group.count == len(logging) and set(group.compile_ids) == {b.compile_id for b in logging}
    html = overview_html(gpt2)
    rows = re.findall(r"<tr><td>&times;(\d+)</td>", html)  # the breaks table: one row per group
    assert len(rows) == len(gpt2.grouped_breaks()) and rows.count(str(group.count)) >= 1
    assert f"{group.gb_type}</summary>" in html  # the type is every list's folded headline
    assert "<summary>Encountered graph break" not in html
